// Escaping of outside text for messages; see printable.hpp.
#include "kh/registry/printable.hpp"

#include <cstdio>

namespace kh::registry {
namespace {

// The length of the valid UTF-8 sequence at s[i] (1..4), or 0 when it is not one
// (overlong forms, surrogates and code points past U+10FFFF are not valid).
size_t utf8_length(std::string_view s, size_t i, unsigned* code_point) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned c = b(i);
  size_t n;
  unsigned cp;
  if (c < 0x80) {
    *code_point = c;
    return 1;
  }
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  *code_point = cp;
  return n;
}

}  // namespace

std::string printable(std::string_view text, size_t max_bytes) {
  const bool cut = text.size() > max_bytes;
  if (cut) text = text.substr(0, max_bytes);
  std::string out;
  out.reserve(text.size());
  char buf[16];
  for (size_t i = 0; i < text.size();) {
    unsigned cp = 0;
    const size_t n = utf8_length(text, i, &cp);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(text[i]));
      out += buf;
      ++i;
    } else if (cp < 0x20 || cp == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      out += buf;
      ++i;
    } else if (cp >= 0x80 && cp <= 0x9f) {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      out += buf;
      i += n;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  if (cut) out += "...";
  return out;
}

bool is_printable_text(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    unsigned cp = 0;
    const size_t n = utf8_length(text, i, &cp);
    if (n == 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f)) return false;
    i += n;
  }
  return true;
}

}  // namespace kh::registry
