// Version numbers the platform vocabulary compares: "major.minor" (CUDA toolkits and
// drivers, HIP runtimes) and glibc versions ("2.36", "2.2.5", as GLIBC_ symbol versions are).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kh::platform {

struct MajorMinor {
  int major = 0, minor = 0;
  bool operator==(const MajorMinor& o) const { return major == o.major && minor == o.minor; }
  bool operator<(const MajorMinor& o) const { return major != o.major ? major < o.major : minor < o.minor; }
  bool operator>=(const MajorMinor& o) const { return !(*this < o); }
};

// "13.0" -> {13, 0}: two decimal numbers of at most 4 digits; nullopt otherwise.
std::optional<MajorMinor> parse_major_minor(std::string_view text);
std::string to_string(const MajorMinor& v);

// A glibc version: two or three decimal numbers of at most 4 digits each.
struct GlibcVersion {
  int parts[3] = {0, 0, 0};  // "2.36" is 2.36.0
};
std::optional<GlibcVersion> parse_glibc_version(std::string_view text);
// <0, 0, >0, numerically ("2.9" < "2.36").
int compare(const GlibcVersion& a, const GlibcVersion& b);

}  // namespace kh::platform
