// What the kh C++ benchmarks share: the median of a set of samples, and the kernel library
// file inside a package tree of the cache (kh_kernel_path()).
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace kh_bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A new scratch directory "$TMPDIR/<stem>-XXXXXX" (else under /tmp); "" when none can be made.
inline std::string scratch_dir(const std::string& stem) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/" + stem + "-XXXXXX";
  return ::mkdtemp(templ.data()) == nullptr ? "" : templ;
}

// The first shared library under package_dir ("" if none): a package holds one.
inline std::string package_library(const std::string& package_dir) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(package_dir))
    if (e.path().extension() == ".so") return e.path().string();
  return "";
}

}  // namespace kh_bench
