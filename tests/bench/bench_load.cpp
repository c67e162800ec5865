// Benchmark (not a test): kh_load_kernel() of a package already in the cache, against a
// plain dlopen() + negotiate + dlclose() of the very same library file, in one run.
// Prints medians and their ratio, and the one-off cost of the first load in the process.
// Usage: bench_load <hub-url> <cache-dir> [spec] [iterations]
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "kh/kh.h"

namespace {

using Clock = std::chrono::steady_clock;

using kh_bench::median;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <hub-url> <cache-dir> [spec] [iterations]\n", argv[0]);
    return 2;
  }
  const char* spec = argc > 3 ? argv[3] : "kernels-community/rms-norm@1";
  const int iterations = argc > 4 ? std::atoi(argv[4]) : 300;
  kh_load_options options{};
  options.struct_size = sizeof(options);
  options.hub = argv[1];
  options.cache_dir = argv[2];

  kh_kernel* k = nullptr;
  const auto first_start = Clock::now();
  if (kh_load_kernel(spec, &options, &k) != KH_OK) {  // warms the cache (and this process)
    std::fprintf(stderr, "bench_load: %s\n", kh_last_error());
    return 1;
  }
  const double first_us = std::chrono::duration<double, std::micro>(Clock::now() - first_start).count();
  const std::string library = kh_bench::package_library(kh_kernel_path(k));
  kh_kernel_release(k);

  std::vector<double> kh_us, dlopen_us;
  for (int i = 0; i < iterations; ++i) {  // interleaved, so drift hits both alike
    auto t0 = Clock::now();
    void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    auto negotiate = reinterpret_cast<kh_kernel_negotiate_fn>(dlsym(h, KH_KERNEL_ENTRY_POINT));
    kh_negotiation n{};
    n.struct_size = sizeof(n);
    n.loader_min_abi = n.loader_max_abi = KH_ABI_VERSION;
    if (!negotiate || negotiate(&n) != KH_OK) return 1;
    dlclose(h);
    auto t1 = Clock::now();
    if (kh_load_kernel(spec, &options, &k) != KH_OK) {
      std::fprintf(stderr, "bench_load: %s\n", kh_last_error());
      return 1;
    }
    kh_kernel_release(k);
    auto t2 = Clock::now();
    dlopen_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    kh_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  const double base = median(dlopen_us), ours = median(kh_us);
  std::printf("library: %s (%ju bytes), %d iterations\n", library.c_str(),
              static_cast<uintmax_t>(std::filesystem::file_size(library)), iterations);
  std::printf("%-44s %12s %8s\n", "what", "median (us)", "ratio");
  std::printf("%-44s %12.1f %8.2f\n", "dlopen + negotiate + dlclose (baseline)", base, 1.0);
  std::printf("%-44s %12.1f %8.2f\n", "kh_load_kernel + kh_kernel_release (warm)", ours, ours / base);
  std::printf("%-44s %12.1f %8s\n", "first kh_load_kernel in this process (once)", first_us, "-");
  std::printf("  (the first load resolves against cached metadata and hashes the library;\n"
              "   later loads of the same spec reuse that within KH_METADATA_TTL)\n");
  std::printf("target: ratio <= 2.00 -> %s\n", ours / base <= 2.0 ? "met" : "NOT met");
  return 0;
}
