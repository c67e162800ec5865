// Publishing to an http(s) hub: mirror the touched metadata into a scratch file hub,
// publish there with publish_to_file_hub, upload the difference in a safe order.
#include <stdlib.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "http_writer.hpp"
#include "internal.hpp"
#include "kh/registry/archive.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/json_limits.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/registry/trust.hpp"

namespace kh::registry {
namespace {

constexpr uint64_t kMetadataMaxBytes = 64u << 20;
constexpr uint64_t kManifestMaxBytes = 16u << 20;
constexpr uint64_t kMaxRoots = 1024;

std::optional<std::string> fetch_if_present(Hub& hub, const std::string& rel) {
  try {
    return hub.fetch_metadata(rel, kMetadataMaxBytes);
  } catch (const StatusError& e) {
    if (e.status() == KH_ERROR_NOT_FOUND) return std::nullopt;
    throw;
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A scratch directory, removed at scope exit.
struct ScratchHub {
  std::string dir;
  ScratchHub() {
    const char* t = std::getenv("TMPDIR");
    std::string templ = std::string(t != nullptr && *t != '\0' ? t : "/tmp") + "/kh-publish-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) detail::fail_errno("cannot create a scratch folder in " + templ, errno);
    dir = templ;
  }
  ~ScratchHub() {
    try {
      remove_tree(dir);
    } catch (...) {
    }
  }
};

// The hub's root chain, root/1.root.json up to the newest, into files.
void mirror_roots(Hub& hub, std::map<std::string, std::string>& files) {
  for (uint64_t n = 1; n <= kMaxRoots; ++n) {
    const std::string rel = "root/" + std::to_string(n) + ".root.json";
    std::optional<std::string> text = fetch_if_present(hub, rel);
    if (!text) return;
    files[rel] = std::move(*text);
  }
}

// The hub's metadata files that this publish may change, as they are now.
std::map<std::string, std::string> mirror_metadata(Hub& hub, const std::set<std::string>& repos) {
  std::map<std::string, std::string> files;
  auto take = [&](const std::string& rel) {
    if (auto text = fetch_if_present(hub, rel)) files[rel] = std::move(*text);
  };
  take("kh-hub.json");
  take("catalog.json");
  mirror_roots(hub, files);
  for (const std::string& repo : repos) {
    const std::string index = repo_index_path(repo);
    if (!fetch_if_present(hub, index)) continue;  // a new repo: nothing to merge into
    // What gets merged and re-signed must be what clients would accept: the index is
    // verified as a client verifies it (pinned root, signatures, rollback, expiry), and
    // the verified copy, not a second download, is what the publish builds on.
    Cache cache(Cache::default_root());
    const bool signed_hub = files.count("root/1.root.json") != 0;
    if (signed_hub && !TrustStore(cache, hub.id()).trusted_root())
      fail(KH_ERROR_SIGNATURE, "publish: hub " + hub.url() + " has a root of trust, but the cache " + cache.root() +
                                   " has not pinned it, so its current " + index + " cannot be verified before it is "
                                   "merged and signed again; pin it first: `kernels trust <root.json> --hub " +
                                   hub.url() + "` with the root obtained over a channel you trust");
    try {
      fetch_verified_index(hub, cache, repo, TrustOptions::from_environment());
    } catch (const StatusError& e) {
      fail(e.status(), "publish: the hub's current " + index + " does not verify, so it cannot be merged into and "
                           "signed again (" + e.what() + "); pin the hub's root first (`kernels trust <root.json> "
                           "--hub " + hub.url() + "`), as the cache " + cache.root() + " is what is checked");
    }
    for (const std::string& rel : {index, index + ".minisig", index + ".sigs"})
      if (auto text = cache.load_metadata(hub.id(), rel)) files[rel] = std::move(*text);
  }
  return files;
}

// The catalog: the hub's entries for repos this publish did not touch, the scratch hub's
// for those it did (publish_to_file_hub only knows the mirrored repos).
std::string merged_catalog(const std::optional<std::string>& remote, const std::string& local_text) {
  nlohmann::ordered_json local = nlohmann::ordered_json::parse(local_text);
  std::map<std::string, nlohmann::ordered_json> entries;
  if (remote) {
    nlohmann::ordered_json doc;
    try {
      check_json_depth(*remote, "the hub's catalog.json");
      doc = nlohmann::ordered_json::parse(*remote);
    } catch (const nlohmann::json::exception&) {
      fail(KH_ERROR_BAD_METADATA, "the hub's catalog.json is not valid JSON; fix or remove it, then publish again");
    }
    if (doc.is_object() && doc.contains("repos") && doc["repos"].is_array())
      for (const auto& e : doc["repos"])
        if (e.is_object() && e.contains("repo") && e["repo"].is_string()) entries[e["repo"].get<std::string>()] = e;
  }
  for (const auto& e : local["repos"]) entries[e["repo"].get<std::string>()] = e;
  nlohmann::ordered_json repos = nlohmann::ordered_json::array();
  for (auto& [name, e] : entries) repos.push_back(std::move(e));
  local["repos"] = std::move(repos);
  return local.dump(2) + "\n";
}

}  // namespace

std::vector<PublishedVariant> publish_to_http_hub(const std::string& dist_dir, const std::string& hub_url,
                                                  int expires_days,
                                                  const std::vector<minisign::SecretKey>& signing_keys) {
  const HttpOptions options = http_options_from_environment(hub_url);
  std::unique_ptr<Hub> reader = open_http_hub(hub_url, options);
  detail::HttpWriter writer(hub_url, options, detail::HttpWriteCredentials::from_environment(options));
  const std::string shown = sanitize_url(hub_url);

  std::set<std::string> repos;
  for (const std::string& name : detail::list_names(dist_dir))
    if (ends_with(name, ".tar.zst")) {
      const std::string archive = dist_dir + "/" + name;
      repos.insert(parse_package_manifest(read_archive_member(archive, kManifestName, kManifestMaxBytes),
                                          archive + ":" + kManifestName)
                       .name);
    }

  // 1. The hub's current metadata into a scratch hub; publish there.
  const std::map<std::string, std::string> before = mirror_metadata(*reader, repos);
  ScratchHub scratch;
  for (const auto& [rel, text] : before) write_file_atomic(scratch.dir + "/" + rel, text);
  std::vector<PublishedVariant> published = publish_to_file_hub(dist_dir, scratch.dir, expires_days, signing_keys);
  const std::string catalog = scratch.dir + "/catalog.json";
  auto remote_catalog = before.find("catalog.json");
  write_file_atomic(catalog, merged_catalog(remote_catalog == before.end() ? std::nullopt
                                                                           : std::optional<std::string>(remote_catalog->second),
                                            read_file(catalog, kMetadataMaxBytes)));

  // 2. What changed, by kind, in upload order.
  std::vector<std::string> signatures, indexes, others;
  std::vector<std::pair<std::string, uint64_t>> blobs;
  std::set<std::string> after;
  for (const detail::TreeEntry& e : detail::list_tree(scratch.dir)) {
    if (e.type != detail::TreeEntry::Type::File || detail::base_name(e.path).rfind('.', 0) == 0) continue;
    after.insert(e.path);
    if (e.path.rfind("blobs/", 0) == 0) {
      blobs.emplace_back(e.path, e.size);
      continue;
    }
    auto old = before.find(e.path);
    if (old != before.end() && old->second == read_file(scratch.dir + "/" + e.path, kMetadataMaxBytes)) continue;
    if (ends_with(e.path, ".minisig") || ends_with(e.path, ".sigs")) signatures.push_back(e.path);
    else if (ends_with(e.path, "/index.json")) indexes.push_back(e.path);
    else others.push_back(e.path);
  }
  std::vector<std::string> stale;  // e.g. an index.json.sigs the new signing no longer writes
  for (const auto& [rel, text] : before)
    if (!after.count(rel)) stale.push_back(rel);

  // 3. Blobs first, so no index ever names a blob the hub lacks.
  for (const auto& [rel, size] : blobs) {
    if (writer.remote_size(rel) == size) continue;  // content-addressed: same name and size, same bytes
    writer.put(rel, scratch.dir + "/" + rel);
  }
  // 4. Nobody else may have changed an index since it was mirrored.
  for (const std::string& rel : indexes) {
    auto old = before.find(rel);
    std::optional<std::string> now = fetch_if_present(*reader, rel);
    if ((old == before.end()) != !now.has_value() || (now && *now != old->second))
      fail(KH_ERROR_NETWORK, "publish to " + shown + ": " + rel + " changed while this publish ran (another publisher?); "
                                 "nothing was overwritten: publish again");
  }
  // 5. Signatures, then indexes (a reader of the new index finds its signatures), then the rest.
  for (const std::string& rel : signatures) writer.put(rel, scratch.dir + "/" + rel);
  for (const std::string& rel : stale) writer.remove(rel);
  for (const std::string& rel : indexes) writer.put(rel, scratch.dir + "/" + rel);
  for (const std::string& rel : others) writer.put(rel, scratch.dir + "/" + rel);
  return published;
}

RootMetadata write_next_root_to_http_hub(const std::string& hub_url, RootSpec spec,
                                         const std::vector<minisign::SecretKey>& signers, bool first) {
  const HttpOptions options = http_options_from_environment(hub_url);
  std::unique_ptr<Hub> reader = open_http_hub(hub_url, options);
  detail::HttpWriter writer(hub_url, options, detail::HttpWriteCredentials::from_environment(options));
  const std::string shown = sanitize_url(hub_url);
  std::map<std::string, std::string> roots;
  mirror_roots(*reader, roots);
  if (first && !roots.empty())
    fail(KH_ERROR_INVALID_ARGUMENT, "hub " + shown + " already has " + std::to_string(roots.size()) +
                                        " root version(s); use `kernels trust rotate` to replace the newest");
  if (!first && roots.empty())
    fail(KH_ERROR_INVALID_ARGUMENT, "hub " + shown + " has no root yet; use `kernels trust init` first");
  ScratchHub scratch;
  for (const auto& [rel, text] : roots) write_file_atomic(scratch.dir + "/" + rel, text);
  RootMetadata root = write_next_root_to_file_hub(scratch.dir, std::move(spec), signers);
  const std::string rel = "root/" + std::to_string(root.version) + ".root.json";
  // Never replace a root someone else published meanwhile: roots are append-only.
  if (writer.remote_size(rel))
    fail(KH_ERROR_NETWORK, "hub " + shown + " gained " + rel + " while this ran (another operator?); nothing was written");
  writer.put(rel, scratch.dir + "/" + rel);
  return root;
}

}  // namespace kh::registry
