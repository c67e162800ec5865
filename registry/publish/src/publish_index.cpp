// Reading a repo's index for a change and writing it back signed (publish_index.hpp).
#include "publish_index.hpp"

#include "kh/registry/cache.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/registry/trust.hpp"

namespace kh::registry::detail {

RepoState read_repo(HubWriter& hub, const std::string& repo, bool signed_hub, const PublishOptions& options) {
  RepoState state;
  const std::string rel = repo_index_path(repo);
  state.before = fetch_metadata_if_present(hub.reader(), rel, kMaxIndexBytes);
  if (!state.before) {
    state.index.repo = repo;
    return state;
  }
  if (!hub.is_local()) {
    Cache cache(options.trust_cache, options.cache_locks);
    if (signed_hub && !TrustStore(cache, hub.reader().id()).trusted_root())
      fail(KH_ERROR_SIGNATURE, "publish: hub " + hub.url() + " has a root of trust, but the cache " + cache.root() +
                                   " has not pinned it, so its current " + rel + " cannot be verified before it is "
                                   "merged and signed again; pin it first: `kernels trust <root.json> --hub " +
                                   hub.url() + "` with the root obtained over a channel you trust");
    try {
      fetch_verified_index(hub.reader(), cache, repo, options.trust);
    } catch (const StatusError& e) {
      fail(e.status(), "publish: the hub's current " + rel + " does not verify, so it cannot be merged into and "
                           "signed again (" + e.what() + "); pin the hub's root first (`kernels trust <root.json> "
                           "--hub " + hub.url() + "`), as the cache " + cache.root() + " is what is checked");
    }
    state.before = cache.load_metadata(hub.reader().id(), rel);
  }
  state.before_minisig = fetch_metadata_if_present(hub.reader(), rel + ".minisig", kMaxSignatureFileBytes);
  state.index = parse_repo_index(*state.before, rel + " of hub " + hub.url());
  if (state.index.repo != repo)
    fail(KH_ERROR_BAD_METADATA, rel + " of hub " + hub.url() + " names repo '" + state.index.repo + "', not '" + repo +
                                    "'; fix the hub first");
  return state;
}

void write_repo_index(HubWriter& hub, PublishLock& lock, const std::optional<RootMetadata>& root, RepoState& state,
                      const PublishOptions& options, int64_t expires) {
  RepoIndex& index = state.index;
  const std::string& repo = index.repo;
  const std::string rel = repo_index_path(repo);
  if (index.version >= kMaxMetadataVersion)
    fail(KH_ERROR_BAD_METADATA,
         "cannot publish " + repo + ": its index is at version " + std::to_string(index.version) +
             ", the highest kh accepts (2^53 - 1), so it cannot grow again. An index that high was signed with a "
             "misused key: rotate the index keys with a new root (`kernels trust rotate`), set \"version\" in " +
             rel + " back to the last honest version, and publish again (clients reset their rollback "
             "state when the index keys change)");
  index.version += 1;
  index.expires = format_rfc3339_utc(expires);
  index.expires_unix = expires;
  const std::string text = serialize_repo_index(index);
  std::optional<IndexSignatures> sigs;
  if (!options.signing_keys.empty()) sigs = sign_index(root, repo, text, options.signing_keys, hub.url());
  // Nobody else may have changed the index since it was read (a publisher that ignored
  // the lock, or one whose lease ran out): then start over from what is there now.
  lock.check_held();
  Hub& reader = hub.reader();
  if (fetch_metadata_if_present(reader, rel, kMaxIndexBytes) != state.before) throw IndexChanged{rel};
  hub.put_index(repo, text, sigs ? sigs->minisig : "", sigs ? sigs->sigs : "");
  if (fetch_metadata_if_present(reader, rel, kMaxIndexBytes) != text) throw IndexChanged{rel};
}

}  // namespace kh::registry::detail
