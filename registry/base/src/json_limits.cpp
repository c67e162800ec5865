// The nesting check run on outside JSON before it is parsed; see json_limits.hpp.
#include "kh/registry/json_limits.hpp"

#include <string>

#include "kh/registry/status_error.hpp"

namespace kh::registry {

void check_json_depth(std::string_view text, std::string_view source, kh_status status, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth)
          fail(status, std::string(source) + ": arrays and objects nested more than " + std::to_string(max_depth) +
                           " deep (at byte " + std::to_string(i) +
                           "); kh refuses such JSON before parsing it. The file is not one kh wrote: "
                           "report it to whoever serves it");
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;  // unbalanced: the parser reports it
        break;
      default:
        break;
    }
  }
}

}  // namespace kh::registry
