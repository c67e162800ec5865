// Verified hub metadata: the client's root chain and rollback state in the cache,
// verified index fetches (online and from the cache), and key files. The publisher's side
// (roots, index signatures) is publish/src/hub_roots.cpp. See docs/trust.md.
#include "kh/registry/signed_metadata.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "kh/registry/cache_layout.hpp"
#include "kh/registry/detail/internal.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/hub_directory.hpp"
#include "kh/registry/json_limits.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry {
namespace {

constexpr uint64_t kMaxKeyFileBytes = 16u << 10;
constexpr uint64_t kMaxStateBytes = 64u << 10;
constexpr uint64_t kMaxRootUpdates = 1024;  // a hub cannot keep a client walking forever

int64_t now_or(const TrustOptions& o) { return o.now != 0 ? o.now : static_cast<int64_t>(std::time(nullptr)); }

// "12.root.json" -> 12; 0 for any other name.
uint64_t root_file_version(const std::string& name) {
  const std::string suffix = ".root.json";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return 0;
  std::string digits = name.substr(0, name.size() - suffix.size());
  if (digits.empty() || digits.size() > 18 || digits[0] == '0' ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return 0;
  return std::stoull(digits);
}

std::vector<uint64_t> root_versions_in(const std::string& dir) {
  std::vector<uint64_t> out;
  if (!path_exists(dir)) return out;
  for (const std::string& name : detail::list_names(dir))
    if (uint64_t v = root_file_version(name)) out.push_back(v);
  std::sort(out.begin(), out.end());
  return out;
}

std::string root_name(uint64_t version) { return std::to_string(version) + ".root.json"; }

// The index role's keys (id and key bytes) and threshold: what a rotation changes.
std::pair<std::map<std::string, std::array<uint8_t, 32>>, uint32_t> index_keys_of(const RootMetadata& root) {
  std::map<std::string, std::array<uint8_t, 32>> keys;
  for (const std::string& id : root.index_role.keyids) keys[id] = root.keys.at(id).key;
  return {keys, root.index_role.threshold};
}

// Past its expiry, metadata may be frozen: an attacker (or a mirror that is not refreshed,
// an air-gapped copy) can keep serving it so that yanks and fixes never arrive. Refused,
// unless the user accepts exactly that risk; then said every time.
void check_not_expired(const std::string& what, const std::string& expires, int64_t expires_unix,
                       const TrustOptions& options) {
  if (expires_unix > now_or(options)) return;
  if (options.allow_expired) {
    std::fprintf(stderr, "kh: warning: %s expired on %s; used anyway (--allow-expired / KH_ALLOW_EXPIRED): builds "
                 "yanked or fixed since cannot be known (a frozen hub looks just like this)\n", what.c_str(),
                 expires.c_str());
    return;
  }
  fail(KH_ERROR_EXPIRED, what + " expired on " + expires +
                             ": the hub's metadata is stale, and may be frozen (yanks and fixes published since would "
                             "not be seen); ask its operator to republish, or refresh the mirror or bundle it came "
                             "from. To use it anyway, accepting that risk, pass --allow-expired or set KH_ALLOW_EXPIRED=1");
}

[[noreturn]] void fail_no_pin(const std::string& hub_url, const std::string& cache_root) {
  // For a hub on this filesystem the root is right there: name the exact command.
  std::string root_file = "<root.json>";
  std::string where = "Get the hub's root.json from its operator over a channel you trust and run";
  constexpr std::string_view kFile = "file://";
  if (hub_url.compare(0, kFile.size(), kFile) == 0) {
    const std::string dir = hub_url.substr(kFile.size()) + "/root";
    const std::vector<uint64_t> versions = root_versions_in(dir);
    if (!versions.empty()) {
      root_file = dir + "/" + root_name(versions.front());
      where = "If you trust this hub's own copy of its first root, run";
    }
  }
  fail(KH_ERROR_SIGNATURE,
       "hub " + hub_url + " has no pinned root of trust in the cache " + cache_root +
           ", so its metadata cannot be verified. " + where + "\n  kernels trust " + root_file + " --hub " + hub_url +
           "\n(to use an unsigned hub anyway, for local development and tests, set KH_ALLOW_UNSIGNED=1)");
}

// KH_ALLOW_UNSIGNED turns verification off; say so every time it is relied on, so that a
// setting left over from development never goes unnoticed.
void warn_unsigned(const std::string& source) {
  std::fprintf(stderr, "kh: warning: KH_ALLOW_UNSIGNED=1: using %s without verifying it (no root of trust is pinned "
               "for its hub)\n", source.c_str());
}

void check_names_repo(const RepoIndex& index, const std::string& repo, const std::string& source) {
  if (index.repo != repo)
    fail(KH_ERROR_SIGNATURE, source + " describes repo '" + printable(index.repo) + "', not '" + repo +
                                 "': the hub served another repo's index in its place");
}

std::string safe_hub_id(const std::string& hub_id) {
  if (hub_id.empty() || hub_id.find('/') != std::string::npos || !detail::is_safe_relative_path(hub_id))
    fail(KH_ERROR_INVALID_ARGUMENT, "hub id '" + hub_id + "' is not a safe directory name");
  return hub_id;
}

// The signature entries for an index: the bare .minisig and, if given, the .sigs list.
// `rel` is the index's path in the hub, `where` says whose copy (" from <hub>").
std::vector<SignatureEntry> index_signature_entries(const std::string& minisig, const std::optional<std::string>& sigs,
                                                    const std::string& rel, const std::string& where) {
  std::vector<SignatureEntry> out{{"", minisig, rel + ".minisig" + where}};
  if (sigs) {
    std::vector<SignatureEntry> more = parse_signature_list(*sigs, rel + ".sigs" + where);
    for (size_t i = 0; i < more.size(); ++i) {
      more[i].origin = rel + ".sigs" + where + ", signature " + std::to_string(i + 1);
      out.push_back(std::move(more[i]));
    }
  }
  return out;
}

// Checks everything a verified index must satisfy besides its signatures.
void check_index(const RepoIndex& index, const std::string& repo, const std::string& source, const TrustStore& store,
                 const TrustOptions& options) {
  check_names_repo(index, repo, source);
  check_not_expired(source + " (index version " + std::to_string(index.version) + ")", index.expires,
                    index.expires_unix, options);
  uint64_t highest = store.highest_index_version(repo);
  if (index.version < highest)
    fail(KH_ERROR_ROLLBACK, source + " is index version " + std::to_string(index.version) + ", older than version " +
                                std::to_string(highest) +
                                " already accepted from this hub: the hub (or something between it and you) is "
                                "serving stale metadata; ask its operator, and do not work around this");
}

// The index, fetched conditionally: when the cache holds a copy with an ETag (and, for a
// signed hub, its signature), a 304 answer returns that copy, which is then verified like
// a fresh one. Saves the transfer, never the verification.
struct IndexFetch {
  std::string text, etag;
  bool not_modified = false;  // the text is the cache's copy, byte for byte
  std::optional<std::string> cached_minisig, cached_sigs;  // set when not modified
};

// `conditional` false: the cached copy failed verification; it is never offered again.
IndexFetch fetch_index_text(Hub& hub, const Cache& cache, const std::string& repo, const std::string& rel,
                            bool need_signature, bool conditional = true) {
  IndexFetch out;
  std::string etag = conditional ? cache.load_metadata_etag(hub.id(), rel) : "";
  std::optional<std::string> cached = etag.empty() ? std::nullopt : cache.load_metadata(hub.id(), rel);
  std::optional<std::string> cached_minisig;
  if (cached && need_signature) {
    cached_minisig = cache.load_metadata(hub.id(), rel + ".minisig");
    if (!cached_minisig) cached.reset();
  }
  try {
    MetadataFetch f = hub.fetch_metadata_conditional(rel, kMaxIndexBytes, cached ? etag : "");
    if (f.not_modified && cached) {
      out.text = std::move(*cached);
      out.etag = etag;
      out.not_modified = true;
      out.cached_minisig = std::move(cached_minisig);
      out.cached_sigs = cache.load_metadata(hub.id(), rel + ".sigs");
    } else {
      out.text = std::move(f.text);
      out.etag = std::move(f.etag);
    }
    return out;
  } catch (const StatusError& e) {
    if (e.status() == KH_ERROR_NOT_FOUND) fail_repo_not_found(hub, repo, rel);
    throw;
  }
}

std::string read_key_file(const std::string& path, bool secret) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) detail::fail_errno("cannot open key file '" + path + "'", errno);
  struct stat st {};
  int rc = ::fstat(fd, &st);
  ::close(fd);
  if (rc != 0) detail::fail_errno("cannot stat key file '" + path + "'", errno);
  if (secret && (st.st_mode & 077) != 0)
    fail(KH_ERROR_INVALID_ARGUMENT, "secret key file '" + path + "' can be read by other users (mode " +
                                        std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                                        std::to_string(st.st_mode & 7) + "); run `chmod 600 " + path + "` first");
  return read_file(path, kMaxKeyFileBytes);
}

void minisign_cleanse(std::string& s) {
  for (char& c : s) *static_cast<volatile char*>(&c) = 0;
}

}  // namespace

// ---- TrustStore ----

TrustStore::TrustStore(const Cache& cache, std::string hub_id)
    : dir_(cache_layout::trust_dir(cache.root(), safe_hub_id(hub_id))), locks_(cache.locks()) {}

std::optional<RootMetadata> TrustStore::trusted_root() const {
  const std::string root_dir = dir_ + "/root";
  std::vector<uint64_t> versions = root_versions_in(root_dir);
  if (versions.empty()) return std::nullopt;
  std::optional<RootMetadata> trusted;
  for (uint64_t v : versions) {
    const std::string path = root_dir + "/" + root_name(v);
    RootMetadata root = parse_root(read_regular_file(path, kMaxRootBytes), path);
    if (root.version != v)
      fail(KH_ERROR_SIGNATURE, path + " holds root version " + std::to_string(root.version) + ": the trust state is damaged; run `kernels trust <root.json> --replace`");
    if (trusted) {
      verify_root_update(*trusted, root, path);
    } else {
      verify_root_self_signed(root, path);
    }
    trusted = std::move(root);
  }
  return trusted;
}

std::optional<std::string> TrustStore::pinned_root_text() const {
  const std::string root_dir = dir_ + "/root";
  const std::vector<uint64_t> versions = root_versions_in(root_dir);
  if (versions.empty()) return std::nullopt;
  return read_regular_file(root_dir + "/" + root_name(versions.front()), kMaxRootBytes);
}

RootMetadata TrustStore::pin_root(std::string_view root_text, std::string_view source, bool replace) {
  RootMetadata root = parse_root(root_text, source);
  verify_root_self_signed(root, source);
  FileLock lock(dir_ + "/" + cache_layout::kTrustLock, locks_);
  const std::string root_dir = dir_ + "/root";
  std::vector<uint64_t> versions = root_versions_in(root_dir);
  if (!versions.empty()) {
    const std::string first = root_dir + "/" + root_name(versions.front());
    if (versions.front() == root.version && read_file(first, kMaxRootBytes) == root_text) return root;
    if (!replace)
      fail(KH_ERROR_INVALID_ARGUMENT, "this hub already has a pinned root (version " + std::to_string(versions.front()) +
                                          ", in " + root_dir + "); pass --replace to forget it, every root "
                                          "verified since and the rollback state, and trust " + std::string(source) +
                                          " instead");
    remove_tree(root_dir);
    remove_tree(dir_ + "/repos");
  }
  write_file_atomic(root_dir + "/" + root_name(root.version), root_text);
  return root;
}

namespace {

// "version 3, keys 0D1D8BA0C4390DC8, 4F2A..., expires 2027-11-30T00:00:00Z"
std::string describe_root(const RootMetadata& root) {
  std::string keys;
  for (const auto& [id, key] : root.keys) keys += (keys.empty() ? "" : ", ") + id;
  return "version " + std::to_string(root.version) + ", keys " + keys + ", expires " + root.expires;
}

}  // namespace

RootMetadata TrustStore::pin_or_match(std::string_view root_text, std::string_view source, const std::string& hub_url) {
  RootMetadata root = parse_root(root_text, source);
  verify_root_self_signed(root, source);
  FileLock lock(dir_ + "/" + cache_layout::kTrustLock, locks_);
  const std::string root_dir = dir_ + "/root";
  const std::vector<uint64_t> versions = root_versions_in(root_dir);
  if (versions.empty()) {
    write_file_atomic(root_dir + "/" + root_name(root.version), root_text);
    return root;
  }
  // The same signed content is the same root, however its file is laid out or its
  // signatures ordered. A pin that does not verify is reported as damaged by trusted_root().
  const std::optional<RootMetadata> newest = trusted_root();
  for (uint64_t v : versions) {
    const std::string path = root_dir + "/" + root_name(v);
    if (parse_root(read_regular_file(path, kMaxRootBytes), path).signed_bytes == root.signed_bytes) return root;
  }
  const std::string first = root_dir + "/" + root_name(versions.front());
  const RootMetadata pinned = parse_root(read_regular_file(first, kMaxRootBytes), first);
  fail(KH_ERROR_SIGNATURE,
       "hub " + hub_url + " is pinned in this cache to another root of trust than the host's: the cache's pin is " +
           first + " (" + describe_root(pinned) + (newest && newest->version != pinned.version
                                                        ? "; verified since up to version " + std::to_string(newest->version)
                                                        : "") +
           "), the host's is " + std::string(source) + " (" + describe_root(root) +
           "). kh never re-pins a hub on its own. If the host's root is the one to trust, run `kernels trust <its "
           "root.json> --hub " + hub_url + " --replace` on this cache, or give the host a cache of its own (KH_CACHE); "
           "else fix the root the host ships");
}

RootMetadata TrustStore::update_root(Hub& hub) {
  FileLock lock(dir_ + "/" + cache_layout::kTrustLock, locks_);
  std::optional<RootMetadata> trusted = trusted_root();
  if (!trusted) {
    require_kh_hub(hub);  // a wrong URL is a wrong URL, not a trust problem
    fail_no_pin(hub.url(), dir_);
  }
  for (uint64_t step = 0; step < kMaxRootUpdates; ++step) {
    const std::string rel = "root/" + root_name(trusted->version + 1);
    std::optional<std::string> text = fetch_metadata_if_present(hub, rel, kMaxRootBytes);
    if (!text) return *trusted;
    const std::string source = rel + " from " + hub.url();
    RootMetadata next = parse_root(*text, source);
    verify_root_update(*trusted, next, source);
    // TUF's fast-forward recovery: versions signed by the old index keys say nothing about
    // what the new ones sign (a stolen key may have pushed them to the top of their range),
    // so the rollback state restarts. Dropped before the new root is stored: a crash in
    // between leaves no rotation that goes unnoticed.
    if (index_keys_of(next) != index_keys_of(*trusted)) remove_tree(dir_ + "/repos");
    write_file_atomic(dir_ + "/root/" + root_name(next.version), *text);
    trusted = std::move(next);
  }
  fail(KH_ERROR_BAD_METADATA, "hub " + hub.url() + " offers more than " + std::to_string(kMaxRootUpdates) +
                                  " new roots at once; refusing to walk further");
}

uint64_t TrustStore::highest_index_version(const std::string& repo) const {
  const std::string path = dir_ + "/" + repo_index_path(repo) + ".state.json";
  if (!path_exists(path)) return 0;
  try {
    const std::string text = read_regular_file(path, kMaxStateBytes);
    check_json_depth(text, path, KH_ERROR_IO);
    auto doc = nlohmann::json::parse(text);
    return doc.at("highest_version").get<uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    fail(KH_ERROR_IO, "the rollback state " + path + " is damaged (" + e.what() + "); remove it and run `kernels get` again");
  }
}

void TrustStore::record_index_version(const std::string& repo, uint64_t version) const {
  if (version <= highest_index_version(repo)) return;
  const std::string path = dir_ + "/" + repo_index_path(repo) + ".state.json";
  write_file_atomic(path, nlohmann::json{{"highest_version", version}}.dump() + "\n");
}

// ---- Verified indexes ----

RepoIndex fetch_verified_index(Hub& hub, Cache& cache, const std::string& repo, const TrustOptions& options) {
  TrustStore store(cache, hub.id());
  const std::string rel = repo_index_path(repo);
  const std::string source = rel + " from " + hub.url();
  if (!store.trusted_root()) {
    if (!options.allow_unsigned) {
      require_kh_hub(hub);  // a wrong URL is a wrong URL, not a trust problem
      fail_no_pin(hub.url(), cache.root());
    }
    IndexFetch fetched = fetch_index_text(hub, cache, repo, rel, false);
    std::optional<RepoIndex> parsed;
    try {
      parsed = parse_repo_index(fetched.text, source + " (unsigned)");
    } catch (const StatusError&) {
      if (!fetched.not_modified) throw;
      // The hub says our copy is current, but our copy is damaged: drop it, fetch afresh.
      cache.drop_metadata(hub.id(), rel);
      fetched = fetch_index_text(hub, cache, repo, rel, false, false);
      parsed = parse_repo_index(fetched.text, source + " (unsigned)");
    }
    RepoIndex index = std::move(*parsed);
    check_names_repo(index, repo, source);
    warn_unsigned(source);
    if (fetched.not_modified)
      cache.touch_metadata(hub.id(), rel);
    else
      cache.store_metadata(hub.id(), rel, fetched.text, fetched.etag);
    return index;
  }
  const RootMetadata root = store.update_root(hub);
  check_not_expired("the root of trust of hub " + hub.url() + " (root version " + std::to_string(root.version) + ")",
                    root.expires, root.expires_unix, options);

  std::string text, minisig, etag;
  std::optional<std::string> sigs;
  bool not_modified = false;
  // Twice at most: a publish between our reads of the index and its signature leaves a
  // pair that does not match; reading both again gets a consistent one. A cached copy the
  // hub confirmed (304) that does not verify is damaged: it is dropped and the index and
  // its signatures fetched afresh, unconditionally (once more, not counted as an attempt).
  bool conditional = true;
  for (int attempt = 0;; ++attempt) {
    IndexFetch fetched = fetch_index_text(hub, cache, repo, rel, true, conditional);
    text = std::move(fetched.text);
    etag = std::move(fetched.etag);
    not_modified = fetched.not_modified;
    std::optional<std::string> sig = fetched.cached_minisig;
    if (!sig) sig = fetch_metadata_if_present(hub, rel + ".minisig", kMaxSignatureFileBytes);
    if (!sig)
      fail(KH_ERROR_SIGNATURE, source + " has no signature (" + rel + ".minisig): the hub's operator must publish "
                                        "with a signing key (`kernels publish --key`)");
    minisig = *sig;
    if (fetched.cached_minisig)
      sigs = root.index_role.threshold > 1 ? fetched.cached_sigs : std::nullopt;
    else
      sigs = root.index_role.threshold > 1 ? fetch_metadata_if_present(hub, rel + ".sigs", kMaxSignatureFileBytes) : std::nullopt;
    try {
      verify_index_signatures(root, text, index_signature_entries(minisig, sigs, rel, " from " + hub.url()), source);
      if (not_modified) parse_repo_index(text, source);  // parsed again below; a damaged copy fails here
      break;
    } catch (const StatusError& e) {
      if (not_modified) {
        cache.drop_metadata(hub.id(), rel);
        conditional = false;
        --attempt;
        continue;
      }
      if (e.status() != KH_ERROR_SIGNATURE || attempt >= 1) throw;
    }
  }
  RepoIndex index = parse_repo_index(text, source);
  FileLock lock(store.dir() + "/" + cache_layout::kTrustLock, cache.locks());
  check_index(index, repo, source, store, options);
  if (not_modified) {
    // The cache holds exactly these bytes and signatures: only their age restarts (no
    // rewrite, no fsync on the warm path).
    cache.touch_metadata(hub.id(), rel);
    store.record_index_version(repo, index.version);
    return index;
  }
  // Signatures first: a reader of the cache that sees the new index sees its signatures.
  cache.store_metadata(hub.id(), rel + ".minisig", minisig);
  const std::string cached_sigs = cache_layout::hub_metadata_file(cache.root(), hub.id(), rel + ".sigs");
  if (sigs) {
    cache.store_metadata(hub.id(), rel + ".sigs", *sigs);
  } else {
    ::unlink(cached_sigs.c_str());
  }
  cache.store_metadata(hub.id(), rel, text, etag);
  store.record_index_version(repo, index.version);
  return index;
}

std::optional<RepoIndex> load_verified_cached_index(const Cache& cache, const std::string& hub_id,
                                                    const std::string& hub_url, const std::string& repo,
                                                    const TrustOptions& options) {
  TrustStore store(cache, hub_id);
  const std::string rel = repo_index_path(repo);
  const std::string source = "cached " + rel + " of hub " + hub_url;
  std::optional<RootMetadata> root = store.trusted_root();
  if (!root && !options.allow_unsigned) fail_no_pin(hub_url, cache.root());
  if (root)
    check_not_expired("the root of trust of hub " + hub_url + " (root version " + std::to_string(root->version) + ")",
                      root->expires, root->expires_unix, options);
  for (int attempt = 0;; ++attempt) {
    std::optional<std::string> text = cache.load_metadata(hub_id, rel);
    if (!text) return std::nullopt;
    if (!root) {
      RepoIndex index = parse_repo_index(*text, source + " (unsigned)");
      check_names_repo(index, repo, source);
      warn_unsigned(source);
      return index;
    }
    try {
      std::optional<std::string> minisig = cache.load_metadata(hub_id, rel + ".minisig");
      if (!minisig)
        fail(KH_ERROR_SIGNATURE, source + " has no cached signature; run `kernels get` for it while online");
      std::optional<std::string> sigs = cache.load_metadata(hub_id, rel + ".sigs");
      verify_index_signatures(*root, *text,
                              index_signature_entries(*minisig, sigs, rel, " (cached copy, hub " + hub_url + ")"), source);
    } catch (const StatusError& e) {
      // Once more, in case another process was replacing the pair as we read it.
      if (e.status() != KH_ERROR_SIGNATURE || attempt >= 1) throw;
      continue;
    }
    RepoIndex index = parse_repo_index(*text, source);
    check_index(index, repo, source, store, options);
    return index;
  }
}

// ---- Key files ----

void write_key_pair_files(const std::string& dir, const std::string& stem, const minisign::SecretKey& key,
                          bool overwrite) {
  make_directories(dir);
  const std::string pub = dir + "/" + stem + ".pub";
  const std::string sec = dir + "/" + stem + ".key";
  if (!overwrite)
    for (const std::string& p : {pub, sec})
      if (path_exists(p))
        fail(KH_ERROR_INVALID_ARGUMENT, "'" + p + "' exists; refusing to overwrite a key (pass --force to replace it)");
  const std::string tmp = temp_sibling(sec);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) detail::fail_errno("cannot create '" + tmp + "'", errno);
  std::string text = key.file_text();
  try {
    if (::fchmod(fd, 0600) != 0) detail::fail_errno("cannot chmod '" + tmp + "'", errno);
    detail::write_all(fd, text.data(), text.size(), "'" + tmp + "'");
    if (::fsync(fd) != 0) detail::fail_errno("cannot sync '" + tmp + "'", errno);
    ::close(fd);
    fd = -1;
    if (::rename(tmp.c_str(), sec.c_str()) != 0) detail::fail_errno("cannot rename '" + tmp + "' to '" + sec + "'", errno);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    minisign_cleanse(text);
    throw;
  }
  minisign_cleanse(text);
  write_file_atomic(pub, key.public_key().file_text());
  detail::fsync_directory(dir);
}

minisign::SecretKey read_secret_key_file(const std::string& path) {
  return minisign::parse_secret_key(read_key_file(path, true), path);
}

minisign::PublicKey read_public_key_file(const std::string& path) {
  return minisign::parse_public_key(read_key_file(path, false), path);
}

}  // namespace kh::registry
