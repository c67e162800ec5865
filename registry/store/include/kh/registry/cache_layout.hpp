// Where everything lives in the cache ($KH_CACHE, else $XDG_CACHE_HOME/kh, else
// ~/.cache/kh), spelled once for every role that reads or writes it (the cache, its
// maintenance, the trust state, install's metadata ages):
//   blobs/sha256/<2>/<64>     verified archives (the hub's own blob layout, blob_path())
//   pkgs/<sha256>/            unpacked, read-only trees; complete when .kh-complete exists
//   hubs/<hub-id>/<path>      the last verified metadata of each hub (offline resolution)
//   hubs/<hub-id>/trust/      the hub's pinned root chain and rollback state (.lock inside)
//   tmp/                      work in progress; anything here may be deleted
//   locks/<sha256>.lock       flock files, one per blob
// Everything is written under tmp/ or a temp name and renamed into place; the marker is
// written last, so a crash anywhere leaves nothing that is later trusted.
#pragma once

#include <string>

#include "kh/registry/repo_index.hpp"  // blob_path

namespace kh::registry {

// Files kh writes into an unpacked tree beside the package's own, so never in an archive.
inline constexpr const char* kCompleteMarker = ".kh-complete";
// Beside the marker: each file's identity when it was installed ("<size> <mtime ns>
// <ctime ns> <inode> <path>" per line), so that a changed or missing file is noticed with
// one lstat per file; only then is the tree hashed against its manifest.
inline constexpr const char* kStampsName = ".kh-stamps";

namespace cache_layout {

// The cache's top-level folders (the names `kernels cache clean` and gc walk).
inline constexpr const char* kPackagesDir = "pkgs";
inline constexpr const char* kTmpDir = "tmp";
inline constexpr const char* kLocksDir = "locks";
inline constexpr const char* kHubsDir = "hubs";
// The folder blob_path() puts every blob under, two levels up from the blob.
inline constexpr const char* kBlobsDir = "blobs/sha256";
// A hub's trust state, inside its hubs/<hub-id>/ folder, and the lock that guards it.
inline constexpr const char* kTrustDir = "trust";
inline constexpr const char* kTrustLock = ".lock";

inline std::string under(const std::string& root, const char* dir) { return root + "/" + dir; }
inline std::string blob_file(const std::string& root, const std::string& sha256) {
  return root + "/" + blob_path(sha256);
}
inline std::string package_dir(const std::string& root, const std::string& sha256) {
  return under(root, kPackagesDir) + "/" + sha256;
}
inline std::string blob_lock(const std::string& root, const std::string& sha256) {
  return under(root, kLocksDir) + "/" + sha256 + ".lock";
}
// hub_id and relative_path as given: callers that take them from outside check them first.
inline std::string hub_dir(const std::string& root, const std::string& hub_id) {
  return under(root, kHubsDir) + "/" + hub_id;
}
inline std::string hub_metadata_file(const std::string& root, const std::string& hub_id,
                                     const std::string& relative_path) {
  return hub_dir(root, hub_id) + "/" + relative_path;
}
inline std::string trust_dir(const std::string& root, const std::string& hub_id) {
  return hub_dir(root, hub_id) + "/" + kTrustDir;
}

}  // namespace cache_layout
}  // namespace kh::registry
