// The publisher's side of trust on any hub: reading a hub's newest root, writing its next
// one, signing an index; and the file:// forms tests and tools use. See docs/trust.md.
#include <algorithm>
#include <cerrno>

#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/detail/internal.hpp"

namespace kh::registry {
namespace {

constexpr uint64_t kMaxRoots = 1024;  // a hub cannot make a publisher walk forever

std::string root_rel(uint64_t version) { return "root/" + std::to_string(version) + ".root.json"; }

}  // namespace

std::optional<RootMetadata> latest_root(Hub& hub) {
  std::optional<RootMetadata> newest;
  for (uint64_t n = 1; n <= kMaxRoots; ++n) {
    std::optional<std::string> text = fetch_metadata_if_present(hub, root_rel(n), kMaxRootBytes);
    if (!text) return newest;
    const std::string source = root_rel(n) + " of hub " + hub.url();
    RootMetadata root = parse_root(*text, source);
    if (root.version != n) fail(KH_ERROR_BAD_METADATA, source + " holds root version " + std::to_string(root.version));
    newest = std::move(root);
  }
  fail(KH_ERROR_BAD_METADATA, "hub " + hub.url() + " has more than " + std::to_string(kMaxRoots) + " roots");
}

RootMetadata write_next_root(HubWriter& hub, RootSpec spec, const std::vector<minisign::SecretKey>& signers,
                             RootStep step) {
  if (signers.empty()) fail(KH_ERROR_INVALID_ARGUMENT, "a root must be signed: give at least one secret key");
  std::unique_ptr<PublishLock> lock = hub.lock_publishers("kernels trust");
  std::optional<RootMetadata> prev = latest_root(hub.reader());
  if (step == RootStep::First && prev)
    fail(KH_ERROR_INVALID_ARGUMENT, "hub " + hub.url() + " already has root version " + std::to_string(prev->version) +
                                        "; use `kernels trust rotate` to replace it");
  if (step == RootStep::Rotate && !prev)
    fail(KH_ERROR_INVALID_ARGUMENT, "hub " + hub.url() + " has no root yet; use `kernels trust init` first");
  spec.version = prev ? prev->version + 1 : 1;
  const std::string text = make_root(spec, signers);
  const std::string rel = root_rel(spec.version);
  RootMetadata next = parse_root(text, rel);
  if (prev) {
    verify_root_update(*prev, next, "the new " + rel);
  } else {
    verify_root_self_signed(next, "the new " + rel);
  }
  lock->check_held();
  // Never replace a root someone else published meanwhile: roots are append-only.
  if (fetch_metadata_if_present(hub.reader(), rel, kMaxRootBytes))
    fail(KH_ERROR_NETWORK, "hub " + hub.url() + " gained " + rel + " while this ran (another operator?); nothing was written");
  hub.put_metadata(rel, text);
  return next;
}

void check_index_signers(const std::optional<RootMetadata>& root, const std::vector<minisign::SecretKey>& signers,
                         const std::string& hub) {
  if (!root) return;
  if (signers.empty())
    fail(KH_ERROR_SIGNATURE, "hub " + hub + " has a root of trust (" + root_rel(root->version) +
                                 "), so its indexes must be signed: pass --key <secret key> (or set KH_SIGNING_KEY)");
  std::vector<std::string> good;
  for (const auto& key : signers) {
    const std::string id = key.public_key().key_id_hex();
    const auto& ids = root->index_role.keyids;
    auto known = root->keys.find(id);
    if (std::find(ids.begin(), ids.end(), id) == ids.end() || known == root->keys.end() ||
        !(known->second == key.public_key()))
      fail(KH_ERROR_SIGNATURE, "key " + id + " is not an index key of hub " + hub + "'s root version " +
                                   std::to_string(root->version) +
                                   ": clients would refuse its signature. Sign with an index key, or add this key "
                                   "with a new root (`kernels trust rotate`)");
    if (std::find(good.begin(), good.end(), id) == good.end()) good.push_back(id);
  }
  if (good.size() < root->index_role.threshold)
    fail(KH_ERROR_SIGNATURE, "hub " + hub + "'s root version " + std::to_string(root->version) + " needs " +
                                 std::to_string(root->index_role.threshold) + " index keys to sign an index; " +
                                 std::to_string(good.size()) + " given. Sign in one step with all of them (repeat --key)");
}

IndexSignatures sign_index(const std::optional<RootMetadata>& root, const std::string& repo,
                           const std::string& index_bytes, const std::vector<minisign::SecretKey>& signers,
                           const std::string& hub) {
  if (signers.empty()) fail(KH_ERROR_INVALID_ARGUMENT, "signing " + repo + "'s index: no secret key given");
  check_index_signers(root, signers, hub);
  const std::string rel = repo_index_path(repo);
  std::vector<SignatureEntry> entries;
  for (const auto& key : signers) {
    const std::string id = key.public_key().key_id_hex();
    bool dup = std::any_of(entries.begin(), entries.end(), [&](const SignatureEntry& e) { return e.keyid == id; });
    if (!dup) entries.push_back({id, minisign::sign(key, index_bytes, minisign::default_trusted_comment(rel)), ""});
  }
  if (root) verify_index_signatures(*root, index_bytes, entries, "the new signatures of " + rel);
  IndexSignatures out;
  out.minisig = entries.front().sig;
  if (entries.size() > 1) out.sigs = serialize_signature_list(entries);
  return out;
}

// ---- file:// forms ----

std::optional<RootMetadata> latest_root_in_file_hub(const std::string& hub_dir) {
  return latest_root(*open_hub("file://" + hub_dir));
}

RootMetadata write_next_root_to_file_hub(const std::string& hub_dir, RootSpec spec,
                                         const std::vector<minisign::SecretKey>& signers) {
  return write_next_root(*open_hub_writer("file://" + hub_dir), std::move(spec), signers);
}

void sign_index_in_file_hub(const std::string& hub_dir, const std::string& repo,
                            const std::vector<minisign::SecretKey>& signers) {
  std::unique_ptr<HubWriter> hub = open_hub_writer("file://" + hub_dir);
  std::unique_ptr<PublishLock> lock = hub->lock_publishers("sign_index_in_file_hub");
  const std::string rel = repo_index_path(repo);
  const std::string text = hub->reader().fetch_metadata(rel, kMaxIndexBytes);
  const IndexSignatures sigs = sign_index(latest_root(hub->reader()), repo, text, signers, hub->url());
  hub->put_index(repo, text, sigs.minisig, sigs.sigs);
}

}  // namespace kh::registry
