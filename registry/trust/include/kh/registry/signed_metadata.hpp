// Hub metadata proven before it is trusted: the client's root chain and rollback state
// kept in the cache, verified repo indexes (online and offline), and key files. The
// publisher's side (writing roots, signing indexes) is publish.hpp's. See docs/trust.md.
//
// Client state, per hub, in the cache (every file written atomically, under
// hubs/<hub-id>/trust/.lock):
//   hubs/<hub-id>/trust/root/<N>.root.json   the pinned root and every root verified since
//   hubs/<hub-id>/trust/repos/<org>/<name>/index.json.state.json
//                                            {"highest_version": V}: rollback state
//   hubs/<hub-id>/repos/<org>/<name>/index.json(.minisig|.sigs)   last verified index
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kh/registry/cache.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/minisign.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/trust.hpp"

namespace kh::registry {

struct TrustOptions {
  // Accept expired roots and indexes (a user's explicit choice, e.g. --allow-expired).
  bool allow_expired = false;
  // Accept unsigned indexes from a hub with NO pinned root (tests, local development).
  // A hub with a pinned root is always verified, whatever this says.
  bool allow_unsigned = false;
  // Seconds since the epoch to judge expiry by; 0 means now. For tests.
  int64_t now = 0;
  // (install::Settings fills allow_unsigned from KH_ALLOW_UNSIGNED, allow_expired from
  // KH_ALLOW_EXPIRED.)
};

// One hub's trust state in a cache.
class TrustStore {
 public:
  TrustStore(const Cache& cache, std::string hub_id);

  // Checks a root the user obtained out of band (well-formed, self-signed by a threshold
  // of its root keys) and makes it the hub's first trusted root. With a pin already there:
  // the same root again is a no-op; another one is refused (KH_ERROR_INVALID_ARGUMENT)
  // unless `replace`, which forgets every root verified so far and the rollback state.
  RootMetadata pin_root(std::string_view root_text, std::string_view source, bool replace = false);

  // A root the host ships (kh_load_options.trusted_root, KH_TRUSTED_ROOT), checked as
  // pin_root checks one. With no pin yet, it becomes the pin. With a pin, it must be a root
  // of the stored chain (the same signed content as the pin or one verified since); any
  // other is KH_ERROR_SIGNATURE naming both roots and what to do: never re-pinned silently.
  // `hub_url` names the hub in messages.
  RootMetadata pin_or_match(std::string_view root_text, std::string_view source, const std::string& hub_url);

  // The newest root, its chain from the pin verified again on every call. nullopt when
  // nothing is pinned. Throws KH_ERROR_SIGNATURE if the stored chain does not verify.
  std::optional<RootMetadata> trusted_root() const;
  // The text of the root the user pinned (the first the store holds), nullopt when none:
  // to pin the same root elsewhere (`kernels mirror` verifies its source against it).
  std::optional<std::string> pinned_root_text() const;

  // Walks root/<N+1>.root.json, <N+2>, ... on the hub until one is not found, verifying
  // and storing each; returns the newest. Throws KH_ERROR_SIGNATURE when no root is
  // pinned or a new root does not verify; does not check expiry.
  RootMetadata update_root(Hub& hub);

  // Highest index version accepted for repo (0 if none), and recording a new one (never
  // lowers it). fetch_verified_index calls these; they are public for tools and tests.
  uint64_t highest_index_version(const std::string& repo) const;
  void record_index_version(const std::string& repo, uint64_t version) const;

  // <cache>/hubs/<hub-id>/trust
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  LockPolicy locks_;
};

// The verified index of repo from hub: updates the root chain, fetches index.json and its
// signatures (index.json.minisig, plus index.json.sigs when the index role needs more than
// one), verifies them against the index role, checks that the index names repo, is not
// expired (KH_ERROR_EXPIRED) and is not older than one accepted before (KH_ERROR_ROLLBACK),
// then stores it (signatures first) in the cache and records its version. Without a
// pinned root: KH_ERROR_SIGNATURE telling the user to run `kernels trust`, unless
// options.allow_unsigned (then the index is parsed, checked and stored unverified).
// KH_ERROR_NOT_FOUND when the hub has no such repo.
RepoIndex fetch_verified_index(Hub& hub, Cache& cache, const std::string& repo,
                               const TrustOptions& options = {});

// The cached index of repo from hub `hub_id`, verified again against the cached root
// chain, expiry and rollback state (never trusted because it is in the cache). nullopt
// when nothing is cached. `hub_url` only names the hub in messages.
std::optional<RepoIndex> load_verified_cached_index(const Cache& cache, const std::string& hub_id,
                                                    const std::string& hub_url, const std::string& repo,
                                                    const TrustOptions& options = {});

// Writes a key pair as <dir>/<stem>.pub and <dir>/<stem>.key (mode 0600 from its first
// byte, never readable by others even briefly). Refuses (KH_ERROR_INVALID_ARGUMENT) to
// overwrite either file unless `overwrite`.
void write_key_pair_files(const std::string& dir, const std::string& stem, const minisign::SecretKey& key,
                          bool overwrite);

// Reads a secret key file (refusing one that others can read: mode & 077).
minisign::SecretKey read_secret_key_file(const std::string& path);
minisign::PublicKey read_public_key_file(const std::string& path);

}  // namespace kh::registry
