// The content-addressed cache: verified blobs, unpacked read-only trees, each hub's last
// verified metadata. Its folders are named in cache_layout.hpp.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kh/registry/cache_layout.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/repo_index.hpp"

namespace kh::registry {

// Checks that dir, an unpacked tree of the cache, holds exactly the manifest's files (plus
// the manifest and the cache's own kCompleteMarker and kStampsName), each with its size and
// sha256. Throws StatusError(KH_ERROR_VERIFICATION) naming the file.
void verify_tree_against_manifest(const std::string& dir, const PackageManifest& manifest);

struct CachedPackage {
  std::string sha256;
  std::string dir;
  PackageManifest manifest;
  // The tree no longer matches its manifest (a file changed or is missing): it is not
  // used, and the next get or load fetches it again. `problem` says what is wrong.
  bool damaged = false;
  std::string problem;
};

// A package tree of the cache with its manifest, parsed once by whoever installed or found
// the tree and checked to name the build that was asked for.
struct InstalledTree {
  std::string dir;
  PackageManifest manifest;
};

class Cache {
 public:
  // root: the settings' cache folder (install::Settings: $KH_CACHE, else
  // $XDG_CACHE_HOME/kh, else $HOME/.cache/kh). Every lock the cache takes (blobs, trust
  // state) waits as `locks` says.
  explicit Cache(std::string root, LockPolicy locks = {});
  const std::string& root() const { return root_; }
  const LockPolicy& locks() const { return locks_; }

  // The unpacked tree of blob sha256 if it is complete and intact, else nullopt. Intact:
  // every file has the identity recorded at install (kStampsName); when one differs or is
  // missing, the tree is hashed against its manifest, and a tree that fails is damaged
  // (nullopt: ensure_package installs it again, from the cached blob if that is intact).
  // A tree that passes gets its identities recorded again (a copied cache, a touched file).
  std::optional<std::string> package_dir(const std::string& sha256) const;
  // The tree of sha256 if its marker says it is complete, intact or not (for checks that
  // report damage themselves, e.g. `kernels cache verify`).
  std::optional<std::string> complete_package_dir(const std::string& sha256) const;
  // Why the complete tree of sha256 is damaged; "" when it is intact or not there.
  std::string package_problem(const std::string& sha256) const;

  // Makes the package of `variant` present: reuses a complete tree; else fetches the blob
  // from hub (verified while streaming), extracts it under tmp/, checks the in-archive
  // manifest (name, version, variant and every file's sha256), marks it complete and
  // renames it into pkgs/. Returns the tree's directory. On any failure nothing new is
  // left outside tmp/ and the error names the repo, version and variant.
  std::string ensure_package(Hub& hub, const std::string& repo, const Release& release,
                             const VariantEntry& variant);

  // One package of an ensure_packages batch.
  struct PackageRequest {
    std::string repo;
    const Release* release = nullptr;
    const VariantEntry* variant = nullptr;
  };
  // ensure_package for several packages of one hub: the missing blobs are downloaded
  // together (Hub::fetch_blobs, in parallel over http), each verified, then installed one
  // by one. Blob locks are taken in digest order, so processes with overlapping batches
  // cannot deadlock. Returns the trees in the order asked, each with the manifest checked
  // while it was installed (or read once from a tree already there, and checked to name the
  // repo, version and variant asked for: KH_ERROR_VERIFICATION otherwise), so the caller
  // never reads it again.
  //
  // Disk and kills: a batch that needs more than the filesystem's free space is refused
  // before anything is written (both numbers named). Each blob has one partial download,
  // tmp/<sha>.partial, written only under its lock: a second downloader waits for it, then
  // finds the package installed, or resumes what a killed one left (Range), or takes a
  // whole one over; what installs of that blob left in tmp/ is removed first. A failure
  // leaves nothing in tmp/ but a partial of at least 1 MiB after a network failure or a
  // deadline (to be resumed); a write that fails (a full disk) removes its partial.
  std::vector<InstalledTree> ensure_packages(Hub& hub, const std::vector<PackageRequest>& packages);

  // Same, but installs from a local archive already verified by the caller (publish/tests).
  std::string install_archive(const std::string& archive_path, const std::string& sha256,
                              const std::string& expected_repo, const std::string& expected_version,
                              const std::string& expected_variant);

  // Last verified metadata per hub, for offline resolution, with the ETag the hub sent
  // for it (empty: none) for conditional requests (Hub::fetch_metadata_conditional).
  // Storing again (same text after a 304) also restarts the copy's age (its mtime).
  void store_metadata(const std::string& hub_id, const std::string& relative_path, const std::string& text,
                      const std::string& etag = "");
  std::optional<std::string> load_metadata(const std::string& hub_id, const std::string& relative_path) const;
  // Restarts the age of stored metadata the hub just confirmed unchanged (HTTP 304)
  // without rewriting it. No error when it is absent.
  void touch_metadata(const std::string& hub_id, const std::string& relative_path);
  // Forgets stored metadata (and its ETag): a copy that failed verification is never
  // offered to the hub as current again. No error when it is absent.
  void drop_metadata(const std::string& hub_id, const std::string& relative_path);
  // The ETag stored with that metadata; empty when none.
  std::string load_metadata_etag(const std::string& hub_id, const std::string& relative_path) const;

  // Every complete, intact package, sorted by name then version; with include_damaged,
  // damaged ones too (CachedPackage::damaged), e.g. for `kernels list` to mark them.
  std::vector<CachedPackage> list_packages(bool include_damaged = false) const;

 private:
  // Refuses (KH_ERROR_IO, both numbers, nothing written) a batch whose missing blobs need
  // more than the free space of the cache's filesystem, by the sizes the signed index gives.
  void check_free_space(const std::vector<PackageRequest>& packages,
                        const std::map<std::string, std::vector<size_t>>& missing) const;

  std::string root_;
  LockPolicy locks_;
};

}  // namespace kh::registry
