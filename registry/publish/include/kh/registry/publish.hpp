// Packing a build and publishing packages to a hub: file:// (publish.cpp) and http(s)://
// with WebDAV PUT (publish_http.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kh/registry/minisign.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/trust.hpp"

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

// Publishes to an http(s) hub whose server accepts PUT and DELETE (WebDAV; nginx:
// dav_methods PUT DELETE). Mirrors the metadata this publish touches (kh-hub.json,
// catalog.json, the root chain, each touched repo's index and signatures) into a scratch
// hub, publishes there exactly as publish_to_file_hub does (same checks, merge, version
// bump, signatures), then uploads what changed: blobs the hub lacks first, then
// signatures, then indexes, then the catalog. Just before the indexes go up, each is
// fetched again; if another publisher changed it meanwhile, no index is written
// (KH_ERROR_NETWORK) and the publish can simply be re-run: blobs already up are kept.
// Credentials come from KH_PUBLISH_USER + KH_PUBLISH_PASSWORD (basic) or
// KH_PUBLISH_TOKEN / the hub's token (bearer); KH_CA_BUNDLE as for reading.
std::vector<PublishedVariant> publish_to_http_hub(const std::string& dist_dir, const std::string& hub_url,
                                                  int expires_days = 365,
                                                  const std::vector<minisign::SecretKey>& signing_keys = {});

// write_next_root_to_file_hub for an http(s) hub: mirrors its root chain into a scratch
// folder, writes the next root there (the same checks) and uploads it with PUT (the same
// credentials as publish_to_http_hub). first: `trust init` (refused when the hub already
// has a root); else `trust rotate` (refused when it has none). Returns the new root.
RootMetadata write_next_root_to_http_hub(const std::string& hub_url, RootSpec spec,
                                         const std::vector<minisign::SecretKey>& signers, bool first);

}  // namespace kh::registry
