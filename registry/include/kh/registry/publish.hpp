// Packing a build and publishing packages to a hub (file:// for now).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kh/registry/minisign.hpp"
#include "kh/registry/package_manifest.hpp"

namespace kh::registry {

// Stages `library_path` as lib/<filename> plus a kh-manifest.json (filled from `manifest`'s
// name, version, variant, abi, library and ops; files are hashed here) and writes
// <out_dir>/<name-with-/-as-__>-<version>-<variant>.tar.zst. Returns the archive path.
// extra_files: more files to stage, {relative path in the package, content} (e.g. the build
// matrix's lib/kh-abi-check.json); hashed into the manifest like the library.
std::string pack_package(const std::string& library_path, PackageManifest manifest, const std::string& out_dir,
                         const std::vector<std::pair<std::string, std::string>>& extra_files = {});

struct PublishedVariant {
  std::string repo, version, variant, sha256;
  uint64_t size = 0;
  bool already_present = false;  // identical bytes were already published
};

// Publishes every *.tar.zst in dist_dir to the file hub rooted at hub_dir: blobs first
// (temp + rename), then each touched repo's index.json merged, its "version" bumped and
// "expires" set to now + expires_days. Holds <hub_dir>/.kh-publish.lock meanwhile.
// Refuses (KH_ERROR_INVALID_ARGUMENT) to replace a published variant with other bytes.
// With signing_keys, each written index is signed (index.json.minisig, plus
// index.json.sigs with several keys) before it is renamed into place, and an index left
// unsigned by an earlier publish is signed as it is. A hub with a root (root/<N>.root.json)
// must be signed by enough of its index keys: anything else is refused
// (KH_ERROR_SIGNATURE) before the hub is touched.
std::vector<PublishedVariant> publish_to_file_hub(const std::string& dist_dir, const std::string& hub_dir,
                                                  int expires_days = 365,
                                                  const std::vector<minisign::SecretKey>& signing_keys = {});

}  // namespace kh::registry
