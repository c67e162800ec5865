// Text from outside (a server's Location header or reason, names and fields in hub
// metadata and archives, file names in a hub) is made safe to print before any message
// quotes it: a terminal must never receive an escape sequence, a BEL or a rewritten line
// from a hub. Every error that quotes outside text goes through printable().
#pragma once

#include <string>
#include <string_view>

namespace kh::registry {

// `text` with every C0 control byte (including tab, CR and LF), DEL, C1 control (U+0080..
// U+009F) and byte that is not part of valid UTF-8 written as \xNN (C1: \u0080..\u009f);
// other UTF-8 and a backslash pass as they are. Bounded: at most max_bytes of the input are
// shown, then "...".
std::string printable(std::string_view text, size_t max_bytes = 1024);

// True when printable() would leave text as it is (no control, no invalid UTF-8): what a
// string field of hub metadata must be, since tools print those fields as they are.
bool is_printable_text(std::string_view text);

}  // namespace kh::registry
