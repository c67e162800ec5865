// Spec -> the build that serves it; see resolve.hpp.
#include "kh/install/resolve.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "installed.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/lockfile.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/package_spec.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::install {
namespace {

registry::PackageManifest read_manifest(const std::string& dir) {
  const std::string path = dir + "/" + registry::kManifestName;
  return registry::parse_package_manifest(registry::read_file(path, registry::kMaxPackageManifestBytes), path);
}

// Offline, the build is not usable from the cache: missing, or damaged (then say what).
[[noreturn]] void fail_offline_missing(const registry::Cache& cache, const std::string& what, const std::string& sha256) {
  const std::string problem = cache.package_problem(sha256);
  if (!problem.empty())
    fail(KH_ERROR_OFFLINE, what + " is damaged in the cache (" + problem +
                               ") and offline mode allows no download to install it again; run `kernels get` while online");
  fail(KH_ERROR_OFFLINE, what + " is not in the cache and offline mode allows no download");
}

// The chooser's selection among `builds`, kept in r, and the build it chose (chosen_build's
// errors when none fits or a forced key is not offered).
const registry::VariantEntry& choose(Session& session, const std::vector<registry::VariantEntry>& builds,
                                     const std::string& forced, const std::string& what, Resolution& r) {
  r.selection = session.chooser()(builds, forced);
  return chosen_build(r.selection, builds, what);
}

// An entry standing for a cached or locked build: selection needs its key, digest and floors
// (glibc, and what it needs of its GPU runtime), which a cached package's manifest holds.
registry::VariantEntry build_entry(const std::string& key, const std::string& sha256,
                                   const registry::PackageManifest* manifest = nullptr) {
  registry::VariantEntry e;
  e.key = key;
  e.sha256 = sha256;
  if (manifest != nullptr) {
    e.glibc = manifest->glibc;
    e.runtime = manifest->runtime;
    e.code_object = manifest->code_object;
  }
  return e;
}

// Without a hub to ask (none configured, or offline with none named): the best cached package
// of the repo that the request accepts. A host that ships its packages in a cache needs no
// KH_HUB; a package the cache lacks is an error that says how to name a hub.
Resolution resolve_in_cache(Session& session, const registry::PackageSpec& spec, const std::string& forced) {
  registry::Cache& cache = session.cache();
  const bool offline = session.options().offline;
  const std::string request = spec.repo() + "@" + spec.request.text;
  // Why nothing can be downloaded, and what to do about it.
  const std::string no_download =
      offline ? " and offline mode allows no download"
              : " and no hub is configured to download it from: pass --hub URL (kh_load_options.hub) or set KH_HUB, "
                "e.g. KH_HUB=file:///srv/kh-hub";
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
        fail(offline ? KH_ERROR_OFFLINE : KH_ERROR_NOT_FOUND,
             spec.repo() + " " + pkg.manifest.version + " (" + pkg.manifest.variant + ") is damaged in the cache (" +
                 pkg.problem + ")" + no_download + (offline ? "; run `kernels get " + request + "` while online" : ""));
    fail(offline ? KH_ERROR_OFFLINE : KH_ERROR_NOT_FOUND,
         request + " is not in the cache '" + cache.root() + "'" + no_download +
             (offline ? "; run `kernels get " + request + "` while online first" : ""));
  }
  // Newest version first; within it, the best build for this machine.
  std::sort(matches.begin(), matches.end(), [](const registry::CachedPackage& a, const registry::CachedPackage& b) {
    return registry::compare_versions(*registry::parse_version(a.manifest.version),
                                      *registry::parse_version(b.manifest.version)) > 0;
  });
  const std::string newest = matches.front().manifest.version;
  Resolution r;
  r.repo = spec.repo();
  r.version = newest;
  r.release.version = *registry::parse_version(newest);
  for (const auto& m : matches)
    if (m.manifest.version == newest)  // the floors hold offline too
      r.release.variants.push_back(build_entry(m.manifest.variant, m.sha256, &m.manifest));
  r.build = choose(session, r.release.variants, forced, spec.repo() + " " + newest + " (cached)", r);
  r.reason = offline ? "cached (offline, no hub)" : "cached (no hub configured)";
  r.installed = describe_installed(*cache.package_dir(r.build.sha256), r.build.sha256, "");
  return r;
}

// With a lockfile: the locked version only, and only the bytes it pins. The build is
// chosen among the locked ones; if the cache holds it, no metadata is needed at all.
Resolution resolve_locked(Session& session, const registry::PackageSpec& spec, const std::string& forced) {
  const Options& options = session.options();
  registry::Cache& cache = session.cache();
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
  Resolution r;
  r.repo = spec.repo();
  r.version = registry::to_string(version);
  r.release.version = version;
  r.reason = "locked in " + options.lockfile;
  for (const auto& [key, sha] : locked.variants) {
    if (spec.request.kind == registry::VersionRequest::Kind::Digest && sha != spec.request.sha256) continue;
    r.release.variants.push_back(build_entry(key, sha));
  }
  const registry::VariantEntry chosen = choose(session, r.release.variants, forced, what, r);
  r.build = chosen;
  r.hub_url = options.hub_url.empty() ? locked.hub : options.hub_url;
  if (auto dir = cache.package_dir(chosen.sha256)) {
    r.installed = describe_installed(*dir, chosen.sha256, locked.hub);
    return r;
  }

  if (options.offline) fail_offline_missing(cache, what + " (" + chosen.key + ")", chosen.sha256);
  const registry::RepoIndex& index = session.index(spec.repo(), r.hub_url);
  registry::VersionRequest exact = registry::parse_version_request("=" + locked.version);
  const registry::Release& release = registry::resolve_release(index, exact);
  const registry::VariantEntry* offered = registry::find_variant(release.variants, chosen.key);
  if (offered == nullptr) fail(KH_ERROR_LOCKED, what + ": the hub no longer offers build " + chosen.key);
  if (offered->sha256 != chosen.sha256)
    fail(KH_ERROR_LOCKED, what + ": the hub now serves other bytes for " + chosen.key + " (sha256 " + offered->sha256 +
                              ", locked " + chosen.sha256 + "); refusing. Re-lock only if you trust the change");
  r.release = release;
  r.build = *offered;
  return r;
}

}  // namespace

InstalledPackage describe_installed(const std::string& dir, const std::string& sha256, const std::string& hub_url) {
  return describe_installed(dir, sha256, hub_url, read_manifest(dir));
}

InstalledPackage describe_installed(const std::string& dir, const std::string& sha256, const std::string& hub_url,
                                    registry::PackageManifest manifest) {
  InstalledPackage p;
  p.manifest = std::move(manifest);
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

InstalledPackage installed_as_resolved(const Resolution& r, const std::string& dir) {
  InstalledPackage p = describe_installed(dir, r.build.sha256, r.hub_url);
  if (p.repo != r.repo || p.version != r.version || p.variant != r.build.key)
    fail(KH_ERROR_VERIFICATION, "cached package " + dir + " is " + p.repo + " " + p.version + " (" + p.variant +
                                    ") but the index says " + r.repo + " " + r.version + " (" + r.build.key + ")");
  return p;
}

FoundRelease find_release(Session& session, const std::string& spec_text) {
  FoundRelease found;
  found.spec = registry::parse_package_spec(spec_text);
  found.hub_url = session.require_hub(found.spec.repo());
  found.index = &session.index(found.spec.repo(), found.hub_url);
  found.release = &registry::resolve_release(*found.index, found.spec.request);
  return found;
}

Resolution resolve(Session& session, const std::string& spec_text, const std::string& forced_variant) {
  const Options& options = session.options();
  const std::string forced = forced_variant.empty() ? options.variant : forced_variant;
  const registry::PackageSpec spec = registry::parse_package_spec(spec_text);
  registry::Cache& cache = session.cache();
  Resolution r;
  if (!options.lockfile.empty()) {
    r = resolve_locked(session, spec, forced);
  } else if (spec.request.kind == registry::VersionRequest::Kind::Digest && cache.package_dir(spec.request.sha256)) {
    // Exact content is exact content: a complete tree with that digest needs no metadata.
    InstalledPackage p = describe_installed(*cache.package_dir(spec.request.sha256), spec.request.sha256, options.hub_url);
    if (p.repo != spec.repo())
      fail(KH_ERROR_NOT_FOUND, "sha256:" + spec.request.sha256 + " is a build of " + p.repo + ", not of " + spec.repo());
    r.repo = p.repo;
    r.version = p.version;
    r.hub_url = options.hub_url;
    r.release.version = *registry::parse_version(p.version);
    r.build = build_entry(p.variant, p.sha256, &p.manifest);
    r.release.variants = {r.build};
    r.reason = "cached by digest";
    r.installed = std::move(p);
  } else if (options.hub_url.empty()) {
    r = resolve_in_cache(session, spec, forced);
  } else {
    const std::string& hub_url = session.require_hub(spec.repo());
    const registry::RepoIndex& index = session.index(spec.repo(), hub_url);
    const registry::Release& release = registry::resolve_release(index, spec.request);
    r.repo = spec.repo();
    r.version = registry::to_string(release.version);
    r.hub_url = hub_url;
    r.release = release;
    r.reason = "index version " + std::to_string(index.version) + " of " + hub_url;
    const std::string what = spec.repo() + " " + r.version;
    if (spec.request.kind == registry::VersionRequest::Kind::Digest) {
      const auto it = std::find_if(release.variants.begin(), release.variants.end(),
                                   [&](const registry::VariantEntry& v) { return v.sha256 == spec.request.sha256; });
      if (it == release.variants.end()) fail(KH_ERROR_INTERNAL, what + ": resolved build vanished");
      r.build = *it;
    } else {
      r.build = choose(session, release.variants, forced, what, r);
    }
    if (auto cached = cache.package_dir(r.build.sha256)) {
      r.installed = installed_as_resolved(r, *cached);
    } else if (options.offline) {
      fail_offline_missing(cache, what + " (" + r.build.key + ")", r.build.sha256);
    }
  }
  r.spec = spec_text;
  return r;
}

Resolution with_build(Session& session, const Resolution& resolved, const std::string& key) {
  const registry::VariantEntry* it = registry::find_variant(resolved.release.variants, key);
  if (it == nullptr) fail(KH_ERROR_NOT_FOUND, resolved.repo + " " + resolved.version + " has no build " + key);
  Resolution r = resolved;
  r.build = *it;
  r.installed.reset();
  const bool from_index = it->size > 0;  // a locked or cached build's entry has no size: the index has it
  if (!from_index && !session.cache().package_dir(it->sha256)) return resolve(session, resolved.spec, key);
  if (auto cached = session.cache().package_dir(r.build.sha256)) {
    r.installed = installed_as_resolved(r, *cached);
  } else if (session.options().offline) {
    fail_offline_missing(session.cache(), r.repo + " " + r.version + " (" + key + ")", r.build.sha256);
  }
  return r;
}

}  // namespace kh::install
