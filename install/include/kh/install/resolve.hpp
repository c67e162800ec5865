// From a spec ("org/name@1") to the build that serves it, before any download: the lock,
// the hub's verified index (fresh, cached or offline), the version request, the choice of
// build for this machine. One resolve() for kh_load_kernel and every verb; install()
// (install.hpp) then downloads, verifies and unpacks what the cache lacks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kh/install/session.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/package_spec.hpp"
#include "kh/registry/repo_index.hpp"

namespace kh::install {

// A package complete in the cache.
struct InstalledPackage {
  std::string repo, version, variant, sha256;
  std::string hub_url;       // empty when found in the cache without a hub
  std::string dir;           // the package tree in the cache
  std::string library_path;  // dir + "/" + manifest.library
  std::string library_sha256;
  registry::PackageManifest manifest;
  bool downloaded = false;      // fetched from the hub by this operation (else it was in the cache already)
  uint64_t download_bytes = 0;  // the archive's size, when downloaded
};

// What a spec resolved to.
struct Resolution {
  std::string spec;  // as asked
  std::string repo, version;
  std::string hub_url;            // where the build comes from; empty: only the cache was consulted
  registry::Release release;      // the release with every build considered (for --explain, --all-targets)
  registry::VariantEntry build;   // the chosen one
  // Why: the chooser's verdict on every build of the release, for this request (its device, a
  // forced key). Empty for a build taken by digest, which nothing had to choose.
  BuildSelection selection;
  // How it was resolved, in words: "index version 7 of <hub>", "locked in kernels.lock",
  // "cached (offline)", "cached by digest".
  std::string reason;
  // Set when the cache already holds the build complete and intact: install() has nothing to do.
  std::optional<InstalledPackage> installed;
};

// A release on the hub, as a spec names it: what the verbs that read a hub's metadata without
// installing (info, docs, doctor, lock) look up, in one place.
struct FoundRelease {
  registry::PackageSpec spec;
  std::string hub_url;
  const registry::RepoIndex* index = nullptr;    // the session's verified index
  const registry::Release* release = nullptr;    // the release the request resolves to
};
// The verified index of the spec's repo from the session's hub, and the release its version
// request picks (yanked ones skipped unless pinned). StatusError as resolve() for a missing
// hub, repo or version.
FoundRelease find_release(Session& session, const std::string& spec);

// Resolves spec. forced_variant non-empty: that build (else options().variant, else the
// chooser's pick). Throws StatusError naming what failed (unknown repo or version, no
// build fits, a lock that pins something else, offline without a cached copy, ...).
Resolution resolve(Session& session, const std::string& spec, const std::string& forced_variant = "");

// The same resolution for another build of its release (`kernels get --all-targets`),
// without asking anything again. KH_ERROR_NOT_FOUND when the release lacks `key`.
Resolution with_build(Session& session, const Resolution& resolved, const std::string& key);

}  // namespace kh::install
