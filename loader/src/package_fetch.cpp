// Spec -> verified package in the cache; see package_fetch.hpp.
#include "package_fetch.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "host_facts.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/lockfile.hpp"
#include "kh/registry/package_spec.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"
#include "variant_select.hpp"

namespace kh::loader {
namespace {

constexpr uint64_t kMaxManifestBytes = 4u << 20;

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string require_hub(const FetchOptions& options, const std::string& what) {
  if (options.hub_url.empty())
    fail(KH_ERROR_INVALID_ARGUMENT, "no hub to fetch " + what +
                                        " from: pass --hub URL (kh_load_options.hub) or set KH_HUB, e.g. KH_HUB=file:///srv/kh-hub");
  return options.hub_url;
}

// Age in seconds of a cached metadata file, or -1 if absent.
int64_t metadata_age_s(const registry::Cache& cache, const std::string& hub_id, const std::string& rel) {
  struct stat st {};
  const std::string path = cache.root() + "/hubs/" + hub_id + "/" + rel;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(std::time(nullptr)) - static_cast<int64_t>(st.st_mtime);
}

registry::PackageManifest read_manifest(const std::string& dir) {
  const std::string path = dir + "/" + registry::kManifestName;
  return registry::parse_package_manifest(registry::read_file(path, kMaxManifestBytes), path);
}

FetchedPackage describe(const std::string& dir, const std::string& sha256, const std::string& hub_url) {
  FetchedPackage p;
  p.manifest = read_manifest(dir);
  p.repo = p.manifest.name;
  p.version = p.manifest.version;
  p.variant = p.manifest.variant;
  p.sha256 = sha256;
  p.hub_url = hub_url;
  p.dir = dir;
  p.library_path = dir + "/" + p.manifest.library;
  for (const auto& f : p.manifest.files)
    if (f.path == p.manifest.library) p.library_sha256 = f.sha256;
  if (p.library_sha256.empty())
    fail(KH_ERROR_BAD_METADATA, "package manifest in " + dir + " names library " + p.manifest.library +
                                    " but lists no hash for it");
  return p;
}

// Offline, the build is not usable from the cache: missing, or damaged (then say what).
[[noreturn]] void fail_offline_missing(const registry::Cache& cache, const std::string& what, const std::string& sha256) {
  const std::string problem = cache.package_problem(sha256);
  if (!problem.empty())
    fail(KH_ERROR_OFFLINE, what + " is damaged in the cache (" + problem +
                               ") and offline mode allows no download to install it again; run `kernels get` while online");
  fail(KH_ERROR_OFFLINE, what + " is not in the cache and offline mode allows no download");
}

// Offline and hub-less: the best cached package of the repo that the request accepts.
FetchedPackage find_in_cache(const registry::PackageSpec& spec, const registry::Cache& cache, const FetchOptions& options) {
  std::vector<registry::CachedPackage> matches;
  for (auto& pkg : cache.list_packages()) {
    if (pkg.manifest.name != spec.repo()) continue;
    if (spec.request.kind == registry::VersionRequest::Kind::Digest) {
      if (pkg.sha256 == spec.request.sha256) matches.push_back(pkg);
      continue;
    }
    const auto version = registry::parse_version(pkg.manifest.version);
    if (version && spec.request.matches(*version)) matches.push_back(pkg);
  }
  if (matches.empty()) {
    for (const auto& pkg : cache.list_packages(/*include_damaged=*/true))
      if (pkg.damaged && pkg.manifest.name == spec.repo())
        fail(KH_ERROR_OFFLINE, spec.repo() + " " + pkg.manifest.version + " (" + pkg.manifest.variant +
                                   ") is damaged in the cache (" + pkg.problem +
                                   ") and offline mode allows no download to install it again; run `kernels get " +
                                   spec.repo() + "@" + spec.request.text + "` while online");
    fail(KH_ERROR_OFFLINE, spec.repo() + "@" + spec.request.text +
                               " is not in the cache and offline mode allows no download; run `kernels get " +
                               spec.repo() + "@" + spec.request.text + "` while online first");
  }
  // Newest version first; within it, the best build for this machine.
  std::sort(matches.begin(), matches.end(), [](const registry::CachedPackage& a, const registry::CachedPackage& b) {
    return registry::compare_versions(*registry::parse_version(a.manifest.version),
                                      *registry::parse_version(b.manifest.version)) > 0;
  });
  const std::string newest = matches.front().manifest.version;
  std::vector<registry::VariantEntry> offered;
  for (const auto& m : matches)
    if (m.manifest.version == newest) {
      registry::VariantEntry e;
      e.key = m.manifest.variant;
      e.sha256 = m.sha256;
      e.glibc = m.manifest.glibc;  // the floor holds offline too
      e.runtime = m.manifest.runtime;  // and so do the GPU runtime's
      e.code_object = m.manifest.code_object;
      offered.push_back(e);
    }
  const auto& chosen =
      choose_variant(offered, host_facts(), options.device, options.variant, spec.repo() + " " + newest + " (cached)");
  const std::string dir = *cache.package_dir(chosen.sha256);
  return describe(dir, chosen.sha256, "");
}

}  // namespace

FetchOptions with_environment(FetchOptions options) {
  if (options.hub_url.empty()) options.hub_url = env_or_empty("KH_HUB");
  if (options.variant.empty()) options.variant = env_or_empty("KH_TARGET");
  if (options.lockfile.empty()) options.lockfile = env_or_empty("KH_LOCKFILE");
  if (options.cache_root.empty()) options.cache_root = registry::Cache::default_root();
  const std::string offline = env_or_empty("KH_OFFLINE");
  if (!offline.empty() && offline != "0") options.offline = true;
  const std::string grace = env_or_empty("KH_STALE_GRACE");
  if (!grace.empty()) {
    char* end = nullptr;
    const long long s = std::strtoll(grace.c_str(), &end, 10);
    if (end == grace.c_str() || *end != '\0' || s < 0)
      fail(KH_ERROR_INVALID_ARGUMENT, "KH_STALE_GRACE='" + grace + "' must be a whole number of seconds (0: never)");
    options.stale_grace_s = s;
  }
  const std::string refresh = env_or_empty("KH_REFRESH_TIMEOUT");
  if (!refresh.empty()) {
    char* end = nullptr;
    const double s = std::strtod(refresh.c_str(), &end);
    if (end == refresh.c_str() || *end != '\0' || !(s > 0))
      fail(KH_ERROR_INVALID_ARGUMENT, "KH_REFRESH_TIMEOUT='" + refresh + "' must be a number of seconds above 0");
    options.refresh_timeout_s = s;
  }
  return options;
}

registry::RepoIndex load_repo_index(const std::string& repo, const FetchOptions& options) {
  registry::Cache cache(options.cache_root);
  const std::string hub_url = require_hub(options, repo);
  std::unique_ptr<registry::Hub> hub = registry::open_hub(hub_url);
  const std::string rel = registry::repo_index_path(repo);
  registry::TrustOptions trust = registry::TrustOptions::from_environment();
  trust.allow_expired = trust.allow_expired || options.allow_expired;
  const int64_t age = metadata_age_s(cache, hub->id(), rel);
  if (options.offline || (age >= 0 && age < options.metadata_max_age_s)) {
    // The cached copy is verified again against the pinned root on every read.
    try {
      if (auto index = registry::load_verified_cached_index(cache, hub->id(), hub_url, repo, trust)) return *index;
    } catch (const StatusError&) {
      if (options.offline) throw;  // online, a cached copy that no longer verifies is fetched again
    }
    if (options.offline)
      fail(KH_ERROR_OFFLINE, "no cached metadata for " + repo + " from " + hub_url +
                                 " and offline mode allows no download; run `kernels get` for it while online first");
  }
  const bool can_fall_back = options.stale_grace_s > 0 && age >= 0 &&
                             age <= options.metadata_max_age_s + options.stale_grace_s;
  if (can_fall_back && (hub_url.rfind("http://", 0) == 0 || hub_url.rfind("https://", 0) == 0)) {
    // A hub that stalls must not hold a load that has a verified copy to fall back on.
    registry::HttpOptions http = registry::http_options_from_environment(hub_url);
    if (http.operation_timeout_s <= 0 || http.operation_timeout_s > options.refresh_timeout_s)
      http.operation_timeout_s = options.refresh_timeout_s;
    hub = registry::open_http_hub(hub_url, std::move(http));
  }
  try {
    return registry::fetch_verified_index(*hub, cache, repo, trust);
  } catch (const StatusError& e) {
    // Stale-if-error: the hub cannot be asked (network, deadline) or the cache cannot take
    // the answer (read-only, a lock held too long). Not for what the hub said (signatures,
    // rollback, expiry, malformed metadata): those are never papered over.
    if (e.status() != KH_ERROR_NETWORK && e.status() != KH_ERROR_IO) throw;
    if (!can_fall_back) throw;
    std::optional<registry::RepoIndex> index;
    try {
      index = registry::load_verified_cached_index(cache, hub->id(), hub_url, repo, trust);
    } catch (const StatusError&) {
    }
    if (!index) throw;
    std::fprintf(stderr,
                 "kh: warning: %s\nkh: warning: using the cached metadata of %s instead (verified, %lld s old; "
                 "KH_STALE_GRACE allows up to %lld s past its TTL)\n",
                 e.what(), repo.c_str(), static_cast<long long>(age), static_cast<long long>(options.stale_grace_s));
    return *index;
  }
}

namespace {

// Recent resolutions in this process. A host that loads the same spec again within the
// metadata TTL gets the same answer the hub metadata gave a moment ago, without reading
// and parsing it again; the package tree must still be complete, and the library is still
// opened and checked by KernelLibrary::open. Never used when the caller asks for fresh
// metadata (metadata_max_age_s == 0, as `kernels get` does). Keyed on the device and the
// machine too: one spec loaded for two GPUs of different archs resolves to two builds (and a
// test that describes another machine, KH_TEST_HOST_FACTS, gets another HostFacts object).
struct Resolution {
  std::string spec, hub_url, cache_root, variant, lockfile;
  DeviceRequest device;
  const HostFacts* host = nullptr;
  bool offline = false;
  int64_t resolved_at = 0;
  FetchedPackage package;
  bool same_request(const std::string& s, const FetchOptions& o) const {
    return spec == s && hub_url == o.hub_url && cache_root == o.cache_root && variant == o.variant &&
           device == o.device && host == &host_facts() && lockfile == o.lockfile && offline == o.offline;
  }
};

std::mutex g_resolutions_mutex;
std::vector<Resolution> g_resolutions;
constexpr size_t kMaxResolutions = 64;

int64_t now_s() { return static_cast<int64_t>(std::time(nullptr)); }

std::optional<FetchedPackage> recent_resolution(const std::string& spec, const FetchOptions& options) {
  if (options.metadata_max_age_s <= 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(g_resolutions_mutex);
  for (const auto& r : g_resolutions) {
    if (!r.same_request(spec, options)) continue;
    if (now_s() - r.resolved_at >= options.metadata_max_age_s) return std::nullopt;
    // Still complete and intact (one lstat per file): a damaged tree is installed again.
    if (!registry::Cache(r.cache_root).package_dir(r.package.sha256)) return std::nullopt;
    return r.package;
  }
  return std::nullopt;
}

void remember_resolution(const std::string& spec, const FetchOptions& options, const FetchedPackage& package) {
  if (options.metadata_max_age_s <= 0) return;
  std::lock_guard<std::mutex> lock(g_resolutions_mutex);
  for (auto& r : g_resolutions)
    if (r.same_request(spec, options)) {
      r.resolved_at = now_s();
      r.package = package;
      return;
    }
  if (g_resolutions.size() >= kMaxResolutions) g_resolutions.erase(g_resolutions.begin());
  g_resolutions.push_back(
      Resolution{spec,           options.hub_url, options.cache_root, options.variant, options.lockfile,
                 options.device, &host_facts(),   options.offline,    now_s(),         package});
}

// What a request resolved to before any download: a package already in the cache, or
// the build to fetch from a hub.
struct Plan {
  std::optional<FetchedPackage> ready;
  std::string hub_url, repo, version;
  registry::Release release;
  registry::VariantEntry variant;
};

Plan plan_fetch(const std::string& spec_text, const FetchOptions& options);

// The fetched tree, checked to be the build the plan named.
FetchedPackage finish(const Plan& plan, const std::string& dir) {
  FetchedPackage p = describe(dir, plan.variant.sha256, plan.hub_url);
  if (p.repo != plan.repo || p.version != plan.version || p.variant != plan.variant.key)
    fail(KH_ERROR_VERIFICATION, "cached package " + dir + " is " + p.repo + " " + p.version + " (" + p.variant +
                                    ") but the index says " + plan.repo + " " + plan.version + " (" + plan.variant.key + ")");
  return p;
}

// Fetches what the plans still need, one batch per hub (Cache::ensure_packages: parallel
// downloads over http), and returns every package in the plans' order.
std::vector<FetchedPackage> carry_out(const std::vector<Plan>& plans, registry::Cache& cache) {
  std::vector<FetchedPackage> out(plans.size());
  std::vector<std::string> hubs;
  for (const Plan& p : plans)
    if (!p.ready && std::find(hubs.begin(), hubs.end(), p.hub_url) == hubs.end()) hubs.push_back(p.hub_url);
  for (const std::string& hub_url : hubs) {
    std::vector<size_t> which;
    std::vector<registry::Cache::PackageRequest> batch;
    for (size_t i = 0; i < plans.size(); ++i)
      if (!plans[i].ready && plans[i].hub_url == hub_url) {
        which.push_back(i);
        batch.push_back({plans[i].repo, &plans[i].release, &plans[i].variant});
      }
    std::unique_ptr<registry::Hub> hub = registry::open_hub(hub_url);
    const std::vector<std::string> dirs = cache.ensure_packages(*hub, batch);
    for (size_t k = 0; k < which.size(); ++k) {
      out[which[k]] = finish(plans[which[k]], dirs[k]);
      out[which[k]].downloaded = true;
      out[which[k]].download_bytes = plans[which[k]].variant.size;
    }
  }
  for (size_t i = 0; i < plans.size(); ++i)
    if (plans[i].ready) out[i] = *plans[i].ready;
  return out;
}

}  // namespace

FetchedPackage fetch_package(const std::string& spec_text, const FetchOptions& given) {
  const FetchOptions options = with_environment(given);
  if (auto recent = recent_resolution(spec_text, options)) return *recent;
  registry::Cache cache(options.cache_root);
  FetchedPackage package = carry_out({plan_fetch(spec_text, options)}, cache).front();
  remember_resolution(spec_text, options, package);
  return package;
}

std::vector<FetchedPackage> fetch_packages(const std::vector<PackageRequest>& requests, const FetchOptions& given) {
  const FetchOptions options = with_environment(given);
  std::vector<Plan> plans;
  for (const PackageRequest& r : requests) {
    FetchOptions one = options;
    if (!r.variant.empty()) one.variant = r.variant;
    plans.push_back(plan_fetch(r.spec, one));
  }
  registry::Cache cache(options.cache_root);
  return carry_out(plans, cache);
}

namespace {

// With a lockfile: the locked version only, and only the bytes it pins. The build is
// chosen among the locked ones; if the cache holds it, no metadata is needed at all.
Plan plan_locked(const registry::PackageSpec& spec, const FetchOptions& options, const registry::Cache& cache) {
  const registry::Lockfile lock = registry::load_lockfile(options.lockfile);
  const auto entry = lock.packages.find(spec.repo());
  if (entry == lock.packages.end())
    fail(KH_ERROR_LOCKED, spec.repo() + " is not pinned in " + options.lockfile + "; add it with `kernels lock " +
                              spec.repo() + "@" + spec.request.text + "`");
  const registry::LockedPackage& locked = entry->second;
  const registry::Version version = *registry::parse_version(locked.version);
  const std::string what = spec.repo() + " " + locked.version + " (locked in " + options.lockfile + ")";
  bool digest_pinned = false;
  for (const auto& [key, sha] : locked.variants) digest_pinned |= sha == spec.request.sha256;
  const bool accepted = spec.request.kind == registry::VersionRequest::Kind::Latest ||
                        (spec.request.kind == registry::VersionRequest::Kind::Digest ? digest_pinned
                                                                                     : spec.request.matches(version));
  if (!accepted)
    fail(KH_ERROR_LOCKED, spec.repo() + "@" + spec.request.text + " does not accept the locked version " + locked.version +
                              "; change the request or re-lock with `kernels lock`");
  std::vector<registry::VariantEntry> builds;
  for (const auto& [key, sha] : locked.variants) {
    if (spec.request.kind == registry::VersionRequest::Kind::Digest && sha != spec.request.sha256) continue;
    registry::VariantEntry e;
    e.key = key;
    e.sha256 = sha;
    builds.push_back(e);
  }
  const registry::VariantEntry& chosen = choose_variant(builds, host_facts(), options.device, options.variant, what);
  Plan plan;
  if (auto dir = cache.package_dir(chosen.sha256)) {
    plan.ready = describe(*dir, chosen.sha256, locked.hub);
    return plan;
  }

  if (options.offline)
    fail_offline_missing(cache, what + " (" + chosen.key + ")", chosen.sha256);
  FetchOptions from_lock = options;
  if (from_lock.hub_url.empty()) from_lock.hub_url = locked.hub;
  const registry::RepoIndex index = load_repo_index(spec.repo(), from_lock);
  registry::VersionRequest exact = registry::parse_version_request("=" + locked.version);
  const registry::Release& release = registry::resolve_release(index, exact);
  const registry::VariantEntry* offered = nullptr;
  for (const auto& v : release.variants)
    if (v.key == chosen.key) offered = &v;
  if (offered == nullptr) fail(KH_ERROR_LOCKED, what + ": the hub no longer offers build " + chosen.key);
  if (offered->sha256 != chosen.sha256)
    fail(KH_ERROR_LOCKED, what + ": the hub now serves other bytes for " + chosen.key + " (sha256 " + offered->sha256 +
                              ", locked " + chosen.sha256 + "); refusing. Re-lock only if you trust the change");
  plan.hub_url = from_lock.hub_url;
  plan.repo = spec.repo();
  plan.version = registry::to_string(release.version);
  plan.release = release;
  plan.variant = *offered;
  return plan;
}

Plan plan_fetch(const std::string& spec_text, const FetchOptions& options) {
  const registry::PackageSpec spec = registry::parse_package_spec(spec_text);
  registry::Cache cache(options.cache_root);
  if (!options.lockfile.empty()) return plan_locked(spec, options, cache);
  Plan plan;

  // Exact content is exact content: a complete tree with that digest needs no metadata.
  if (spec.request.kind == registry::VersionRequest::Kind::Digest) {
    if (auto dir = cache.package_dir(spec.request.sha256)) {
      FetchedPackage p = describe(*dir, spec.request.sha256, options.hub_url);
      if (p.repo != spec.repo())
        fail(KH_ERROR_NOT_FOUND, "sha256:" + spec.request.sha256 + " is a build of " + p.repo + ", not of " + spec.repo());
      plan.ready = std::move(p);
      return plan;
    }
  }
  if (options.offline && options.hub_url.empty()) {
    plan.ready = find_in_cache(spec, cache, options);
    return plan;
  }

  const registry::RepoIndex index = load_repo_index(spec.repo(), options);
  const registry::Release& release = registry::resolve_release(index, spec.request);
  const std::string version = registry::to_string(release.version);
  const std::string what = spec.repo() + " " + version;
  const registry::VariantEntry* variant = nullptr;
  if (spec.request.kind == registry::VersionRequest::Kind::Digest) {
    for (const auto& v : release.variants)
      if (v.sha256 == spec.request.sha256) variant = &v;
  } else {
    variant = &choose_variant(release.variants, host_facts(), options.device, options.variant, what);
  }
  if (variant == nullptr) fail(KH_ERROR_INTERNAL, what + ": resolved build vanished");

  plan.hub_url = options.hub_url;
  plan.repo = spec.repo();
  plan.version = version;
  plan.release = release;
  plan.variant = *variant;
  if (auto cached = cache.package_dir(variant->sha256)) {
    plan.ready = finish(plan, *cached);
  } else if (options.offline) {
    fail_offline_missing(cache, what + " (" + variant->key + ")", variant->sha256);
  }
  return plan;
}

}  // namespace

}  // namespace kh::loader
