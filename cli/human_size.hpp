// Sizes and counts as people read them: "12.3 MB", "1 package", "3 packages".
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace kh::cli {

// Decimal units (kB, MB, GB), as download tools print them; three significant digits.
inline std::string human_size(uint64_t bytes) {
  const char* units[] = {"bytes", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000.0 && u < 4) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu %s", static_cast<unsigned long long>(bytes), bytes == 1 ? "byte" : "bytes");
  } else {
    std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : (v < 100 ? "%.1f %s" : "%.0f %s"), v, units[u]);
  }
  return buf;
}

// "1 package", "2 packages": `noun` is the singular, the plural adds "s" unless given.
inline std::string count_of(uint64_t n, const std::string& noun, const std::string& plural = "") {
  return std::to_string(n) + " " + (n == 1 ? noun : (plural.empty() ? noun + "s" : plural));
}

}  // namespace kh::cli
