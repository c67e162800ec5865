// What the kh C++ benchmarks share: the median of a set of samples, the kernel library file
// inside a package tree of the cache (kh_kernel_path()), and the get benchmarks' options.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
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

// A benchmark's scratch directory: the one given (created if missing, kept afterwards), or a new
// "$TMPDIR/<stem>-XXXXXX" removed with everything in it when this goes out of scope. ok() is false
// when there is none.
class ScratchDir {
 public:
  ScratchDir(const std::string& given, const std::string& stem) : owned_(given.empty()) {
    std::error_code ec;
    if (owned_) path_ = scratch_dir(stem);
    else if (std::filesystem::create_directories(given, ec), !ec) path_ = given;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (owned_ && !path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  bool ok() const { return !path_.empty(); }

 private:
  bool owned_;
  std::string path_;
};

// The first shared library under package_dir ("" if none): a package holds one.
inline std::string package_library(const std::string& package_dir) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(package_dir))
    if (e.path().extension() == ".so") return e.path().string();
  return "";
}

// The options of the `kernels get` benchmarks (bench_get_https, bench_get_oci): --runs N,
// --size-mib M, --work DIR, --kernels PATH and, where `curl` is offered, --curl PATH.
struct GetBenchOptions {
  int runs = 7;
  size_t size_mib = 16;
  std::string work, kernels, curl;
};

// Parses argv into `o` (its fields hold the defaults). Returns -1 to go on, else the exit status:
// 0 after --help, 2 after a bad or incomplete argument (usage() printed in both cases).
inline int parse_get_bench_args(int argc, char** argv, GetBenchOptions& o, bool offers_curl, void (*usage)()) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (has_value && a == "--runs") o.runs = std::max(1, std::atoi(argv[++i]));
    else if (has_value && a == "--size-mib") o.size_mib = static_cast<size_t>(std::max(1, std::atoi(argv[++i])));
    else if (has_value && a == "--work") o.work = argv[++i];
    else if (has_value && a == "--kernels") o.kernels = argv[++i];
    else if (has_value && offers_curl && a == "--curl") o.curl = argv[++i];
    else {
      usage();
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  return -1;
}

}  // namespace kh_bench
