// Dotted version numbers; see versions.hpp.
#include "kh/platform/versions.hpp"

#include <vector>

namespace kh::platform {
namespace {

// The numbers of "a.b[.c...]", each 1-4 decimal digits; empty when the text is not that.
std::vector<int> dotted_numbers(std::string_view s) {
  std::vector<int> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    const std::string_view part = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (part.empty() || part.size() > 4) return {};
    int value = 0;
    for (char c : part) {
      if (c < '0' || c > '9') return {};
      value = value * 10 + (c - '0');
    }
    parts.push_back(value);
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

}  // namespace

std::optional<MajorMinor> parse_major_minor(std::string_view text) {
  const std::vector<int> parts = dotted_numbers(text);
  if (parts.size() != 2) return std::nullopt;
  return MajorMinor{parts[0], parts[1]};
}

std::string to_string(const MajorMinor& v) { return std::to_string(v.major) + "." + std::to_string(v.minor); }

std::optional<GlibcVersion> parse_glibc_version(std::string_view text) {
  const std::vector<int> parts = dotted_numbers(text);
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  GlibcVersion v;
  for (size_t i = 0; i < parts.size(); ++i) v.parts[i] = parts[i];
  return v;
}

int compare(const GlibcVersion& a, const GlibcVersion& b) {
  for (int i = 0; i < 3; ++i)
    if (a.parts[i] != b.parts[i]) return a.parts[i] < b.parts[i] ? -1 : 1;
  return 0;
}

}  // namespace kh::platform
