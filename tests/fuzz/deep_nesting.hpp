// Deep-nesting mode shared by the root and index fuzz targets: an input that starts with
// 'D' and two bytes hi, lo is not fed as is; its remaining bytes are wrapped in
// (hi * 256 + lo) * 16 levels of arrays (up to ~10^6) inside a member of the document's
// object, so short seeds reach depths a mutating fuzzer would take forever to write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kh_fuzz {

// The document to feed for `data`: `prefix` + nested(rest) + `suffix` in deep mode, else
// the bytes as they are.
inline std::string maybe_deep(const uint8_t* data, size_t size, std::string_view prefix, std::string_view suffix) {
  if (size < 3 || data[0] != 'D') return std::string(reinterpret_cast<const char*>(data), size);
  const size_t levels = (size_t{data[1]} * 256 + data[2]) * 16;
  std::string out;
  out.reserve(prefix.size() + 2 * levels + size + suffix.size());
  out += prefix;
  out.append(levels, '[');
  out.append(reinterpret_cast<const char*>(data) + 3, size - 3);
  out.append(levels, ']');
  out += suffix;
  return out;
}

}  // namespace kh_fuzz
