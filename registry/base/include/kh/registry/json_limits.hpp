// Limits on JSON read from outside (hub metadata, archive manifests, lockfiles, the
// client's own state files, which a damaged disk or another user may have changed).
//
// Nesting: arrays and objects may nest at most kMaxJsonDepth deep (the outermost value is
// depth 1). check_json_depth() proves it with one iterative pass over the bytes, before
// any parser builds a tree, so no recursive step (parse, copy, dump() for the canonical
// bytes a signature covers, destruction) ever meets a deeper tree. kh's own metadata nests
// 10 deep at most (an op doc's dtypes in an index); 64 leaves room for extensions and keeps every recursion a few dozen
// frames, safe on a host thread with a small stack. See docs/trust.md ("Limits").
#pragma once

#include <cstddef>
#include <string_view>

#include "kh/status.h"

namespace kh::registry {

inline constexpr size_t kMaxJsonDepth = 64;

// Throws StatusError(status) naming `source` and the limit when `text` opens more than
// max_depth arrays/objects at once (brackets inside strings do not count). Says nothing
// about whether text is otherwise valid JSON: the parser that follows decides that.
void check_json_depth(std::string_view text, std::string_view source, kh_status status = KH_ERROR_BAD_METADATA,
                      size_t max_depth = kMaxJsonDepth);

}  // namespace kh::registry
