// What the kh C++ benchmarks share: the median of a set of samples, and the kernel library
// file inside a package tree of the cache (kh_kernel_path()).
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace kh_bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The first shared library under package_dir ("" if none): a package holds one.
inline std::string package_library(const std::string& package_dir) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(package_dir))
    if (e.path().extension() == ".so") return e.path().string();
  return "";
}

}  // namespace kh_bench
