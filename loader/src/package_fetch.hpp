// From a spec ("org/name@1") to a verified package tree in the cache: pick the hub,
// obtain its index (fresh, cached or offline), resolve the version, select the variant,
// fetch and verify the blob. Shared by kh_load_kernel() and `kernels get`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kh/registry/cache.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/repo_index.hpp"
#include "variant_select.hpp"

namespace kh::loader {

struct FetchOptions {
  std::string hub_url;     // empty: $KH_HUB
  std::string cache_root;  // empty: Cache::default_root()
  std::string variant;     // empty: $KH_TARGET, else select for this machine
  DeviceRequest device;    // the GPU to select for (kh_load_options.device_type/_id); default: device 0
  bool offline = false;    // also set by KH_OFFLINE=1
  std::string lockfile;    // non-empty: resolve only what this kernels.lock pins ($KH_LOCKFILE)
  bool allow_expired = false;  // accept expired hub metadata (also KH_ALLOW_EXPIRED=1)
  // Reuse cached metadata younger than this many seconds instead of asking the hub
  // (kh_load_kernel: $KH_METADATA_TTL, default 600). 0: always ask (`kernels get`).
  int64_t metadata_max_age_s = 0;
  // Stale-if-error: when asking the hub fails (unreachable, failing, past a deadline, or a
  // cache that cannot be written), a verified cached index at most this many seconds past
  // metadata_max_age_s is used instead, with a warning on stderr; never one past its signed
  // expiry (unless allow_expired). $KH_STALE_GRACE; default 7 days; 0: never.
  int64_t stale_grace_s = 7 * 86400;
  // With such a cached copy to fall back on, asking an http(s) hub for the index may take
  // at most this many seconds (the hub's operation deadline for it): a hub that accepts
  // and never answers costs this long, not the full transfer deadline. $KH_REFRESH_TIMEOUT.
  double refresh_timeout_s = 15;
};

struct FetchedPackage {
  std::string repo, version, variant, sha256;
  std::string hub_url;       // empty when found in the cache without a hub
  std::string dir;           // the package tree in the cache
  std::string library_path;  // dir + "/" + manifest.library
  std::string library_sha256;
  registry::PackageManifest manifest;
  bool downloaded = false;  // fetched from the hub by this call (else it was in the cache already)
  uint64_t download_bytes = 0;  // the archive's size, when downloaded
};

// Applies the environment (KH_HUB, KH_TARGET, KH_OFFLINE, KH_LOCKFILE, KH_CACHE,
// KH_STALE_GRACE, KH_REFRESH_TIMEOUT) to unset options.
FetchOptions with_environment(FetchOptions options);

FetchedPackage fetch_package(const std::string& spec, const FetchOptions& options);

// One package of a fetch_packages batch.
struct PackageRequest {
  std::string spec;
  std::string variant;  // empty: FetchOptions::variant, else select for this machine
};
// Resolves every request first, then downloads what the cache lacks together (in
// parallel from http hubs). Returns the packages in the order asked.
std::vector<FetchedPackage> fetch_packages(const std::vector<PackageRequest>& requests, const FetchOptions& options);

// The repo's index from the hub (or, offline, from the cache's last verified copy).
// Stores a fetched copy in the cache.
registry::RepoIndex load_repo_index(const std::string& repo, const FetchOptions& options);

}  // namespace kh::loader
