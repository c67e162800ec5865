// `kernels cache verify | gc | clean`: checking and tidying a cache (see cache.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kh/registry/cache.hpp"

namespace kh::registry {

struct PackageCheck {
  std::string sha256;
  std::string dir;
  std::string name;     // "org/name version (variant)", or "" if the manifest is unreadable
  std::string problem;  // empty: every file matches the manifest
};

// Re-hashes every file of every complete package against its manifest. With
// remove_damaged, a damaged tree is deleted (it is fetched again on next use).
std::vector<PackageCheck> verify_cache(const Cache& cache, bool remove_damaged);

struct GarbageReport {
  std::vector<std::string> removed;  // paths, relative to the cache root
  uint64_t bytes = 0;
};

// Removes what no later run will trust or need: work in tmp/ older than min_tmp_age_s
// (younger entries may belong to a running process), package trees without their
// completion marker, and, with drop_archives, the archives of packages already unpacked.
GarbageReport collect_garbage(const Cache& cache, int64_t min_tmp_age_s, bool drop_archives);

// Removes the whole cache content (packages, archives, metadata, trust state stays unless
// include_trust). Returns what was removed.
GarbageReport clean_cache(const Cache& cache, bool include_trust);

}  // namespace kh::registry
