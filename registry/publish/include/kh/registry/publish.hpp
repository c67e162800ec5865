// Packing a build, and publishing packages and roots to a hub of any backend through its
// write half (HubWriter): publish.cpp, hub_roots.cpp.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kh/registry/fs.hpp"
#include "kh/registry/hub_writer.hpp"
#include "kh/registry/minisign.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/signed_metadata.hpp"
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

// How publish() works and checks (the same on every backend, see HubWriter).
struct PublishOptions {
  int expires_days = 365;  // the written indexes expire this many days from now
  // Each written index is signed by these (index.json.minisig, plus index.json.sigs with
  // several keys); an index left unsigned by an earlier publish is signed as it is. A hub
  // with a root must be signed by enough of its newest root's index keys: anything else is
  // refused (KH_ERROR_SIGNATURE) before the hub is touched.
  std::vector<minisign::SecretKey> signing_keys;
  // A remote hub's current indexes are verified as a client verifies them before they are
  // merged and signed again: against the root this cache pinned for the hub.
  std::string trust_cache;
  LockPolicy cache_locks;
  TrustOptions trust;
  // Names this publisher to another one waiting for the hub's publish lock.
  std::string who;
};

// Publishes every *.tar.zst in dist_dir to `hub`, holding its publish lock
// (HubWriter::lock_publishers): reads each touched repo's current index, merges the new
// builds in (refusing, KH_ERROR_INVALID_ARGUMENT, to replace a published build with other
// bytes, before anything is written), uploads the blobs the hub lacks, then per repo the
// signatures and the index (its "version" bumped, "expires" set), then kh-hub.json (when
// missing) and the catalog. Just before an index is written it is read again, and just
// after, read back: an index another publisher changed meanwhile (one that ignored the
// lock) is never overwritten silently: the publish starts over from the new index (up to
// three times), else fails (KH_ERROR_NETWORK) with nothing of its own index written.
std::vector<PublishedVariant> publish(const std::string& dist_dir, HubWriter& hub, const PublishOptions& options);

// publish() to the file hub rooted at hub_dir (created when missing).
std::vector<PublishedVariant> publish_to_file_hub(const std::string& dist_dir, const std::string& hub_dir,
                                                  int expires_days = 365,
                                                  const std::vector<minisign::SecretKey>& signing_keys = {});

// What set_release_yanked() did: the release (as the index spells it), whether its flag
// changed (false: it already was so, nothing written), and the index's version after.
struct YankOutcome {
  std::string version;
  bool changed = false;
  uint64_t index_version = 0;
};

// Marks release `version` (exact: "1.2.0") of `repo` yanked, or no longer yanked, in the hub's
// index, signed with options' keys as publish() signs, under the hub's publish lock (the index
// is read and verified as publish() reads it, its version bumped, its expiry renewed).
// KH_ERROR_NOT_FOUND names the releases there are when the version is not one of them.
YankOutcome set_release_yanked(HubWriter& hub, const std::string& repo, const std::string& version, bool yanked,
                               const PublishOptions& options);

// Which root write_next_root() may write.
enum class RootStep {
  Next,    // whatever comes next (1 for a hub without a root)
  First,   // `trust init`: refused (KH_ERROR_INVALID_ARGUMENT) when the hub has a root
  Rotate,  // `trust rotate`: refused when it has none
};

// The newest root/<N>.root.json of a hub, parsed (unverified): root/1, 2, ... are read until
// one is missing. nullopt for a hub without a root.
std::optional<RootMetadata> latest_root(Hub& hub);

// Writes root/<N>.root.json, N = the hub's newest + 1, with spec's keys and thresholds
// (spec.version is ignored), signed by every signer, under the hub's publish lock. Refuses
// (KH_ERROR_SIGNATURE, nothing written) a root clients would refuse: for N = 1 it must be
// self-signed by a threshold of its root keys; after that, also by a threshold of the
// previous root's root keys. Roots only grow: a root N that appeared meanwhile is never
// replaced (KH_ERROR_NETWORK). Returns the new root.
RootMetadata write_next_root(HubWriter& hub, RootSpec spec, const std::vector<minisign::SecretKey>& signers,
                             RootStep step = RootStep::Next);

// The signature files of an index: index.json.minisig by the first signer and, with more
// than one, index.json.sigs by all (empty: none, and a stale one is removed).
struct IndexSignatures {
  std::string minisig;
  std::string sigs;
};
// Signs exactly index_bytes. With a root (the hub's newest), refuses (KH_ERROR_SIGNATURE)
// signers that are not index keys of it, or too few of them, and checks that the result
// meets its threshold. `hub` names the hub in messages.
IndexSignatures sign_index(const std::optional<RootMetadata>& root, const std::string& repo,
                           const std::string& index_bytes, const std::vector<minisign::SecretKey>& signers,
                           const std::string& hub);
// The signer check of sign_index alone: refuses no signers at all for a hub with a root.
void check_index_signers(const std::optional<RootMetadata>& root, const std::vector<minisign::SecretKey>& signers,
                         const std::string& hub);

// ---- The same for a file:// hub given by its folder (tests and tools; hub_roots.cpp) ----

// The newest root/<N>.root.json of the hub tree at hub_dir, parsed (unverified), or
// nullopt when the hub has no root.
std::optional<RootMetadata> latest_root_in_file_hub(const std::string& hub_dir);

// write_next_root on the file:// hub at hub_dir (RootStep::Next). Returns the new root.
RootMetadata write_next_root_to_file_hub(const std::string& hub_dir, RootSpec spec,
                                         const std::vector<minisign::SecretKey>& signers);

// Signs repos/<repo>/index.json of the hub at hub_dir as it is: index.json.minisig by the
// first signer and, with more than one signer, index.json.sigs by all. When the hub has a
// root, refuses (KH_ERROR_SIGNATURE) signers that are not index keys of its newest root, and
// checks that the result meets its threshold.
void sign_index_in_file_hub(const std::string& hub_dir, const std::string& repo,
                            const std::vector<minisign::SecretKey>& signers);

}  // namespace kh::registry
