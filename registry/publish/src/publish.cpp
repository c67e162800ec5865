// Packing a build into a package archive, and publishing archives to a hub of any backend
// (through its HubWriter): blobs first, each touched repo's signatures and index, then the
// catalog, all under the hub's publish lock.
#include "kh/registry/publish.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

#include "kh/registry/archive.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/json_limits.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/package_spec.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"
#include "catalog.hpp"
#include "kh/registry/detail/internal.hpp"
#include "publish_index.hpp"

namespace kh::registry {
namespace {

using detail::IndexChanged;
using detail::RepoState;

struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    try {
      if (!path.empty()) remove_tree(path);
    } catch (...) {
    }
  }
};

bool valid_repo(const std::string& repo) {
  size_t slash = repo.find('/');
  return slash != std::string::npos && is_valid_repo_part(repo.substr(0, slash)) &&
         is_valid_repo_part(repo.substr(slash + 1));
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct Incoming {
  std::string archive;
  PublishedVariant pv;
  PackageManifest manifest;
};

}  // namespace

std::string pack_package(const std::string& library_path, PackageManifest manifest, const std::string& out_dir,
                         const std::vector<std::pair<std::string, std::string>>& extra_files) {
  auto bad = [&](const std::string& what) {
    fail(KH_ERROR_INVALID_ARGUMENT, "cannot pack '" + library_path + "': " + what);
  };
  if (!valid_repo(manifest.name)) bad("the package name '" + manifest.name + "' is not a valid '<org>/<name>'");
  std::optional<Version> v = parse_version(manifest.version);
  if (!v) bad("the version '" + manifest.version + "' is not a semantic version (e.g. 1.0.0)");
  manifest.version = to_string(*v);
  bool key_ok = !manifest.variant.empty() &&
                std::all_of(manifest.variant.begin(), manifest.variant.end(), [](char c) {
                  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
                });
  if (!key_ok) bad("the variant key '" + manifest.variant + "' must be non-empty [a-z0-9._-]");
  struct stat st;
  if (::stat(library_path.c_str(), &st) != 0) detail::fail_errno("cannot pack '" + library_path + "'", errno);
  if (!S_ISREG(st.st_mode)) bad("not a regular file");
  std::string lib_rel = "lib/" + detail::base_name(library_path);
  if (manifest.library.empty()) manifest.library = lib_rel;
  if (manifest.library != lib_rel)
    bad("the manifest's library is '" + manifest.library + "' but the library is staged as '" + lib_rel + "'");
  manifest.schema = kManifestSchema;

  make_directories(out_dir);
  RemoveOnExit stage{temp_sibling(out_dir + "/.kh-stage")};
  make_directories(stage.path + "/lib");
  detail::copy_file(library_path, stage.path + "/" + lib_rel, (st.st_mode & 0111) ? 0755 : 0644);
  for (const auto& [rel, content] : extra_files) {
    const bool safe = !rel.empty() && rel[0] != '/' && rel.find("..") == std::string::npos && rel != kManifestName &&
                      rel != lib_rel && rel.find('/') == rel.rfind('/');  // at most one level: "lib/x.json"
    if (!safe) bad("the extra file '" + rel + "' must be a new relative path at most one folder deep");
    if (rel.find('/') != std::string::npos) make_directories(stage.path + "/" + rel.substr(0, rel.find('/')));
    write_file_atomic(stage.path + "/" + rel, content);
  }
  manifest.files = hash_tree(stage.path);
  std::string text = serialize_package_manifest(manifest);
  parse_package_manifest(text, "the manifest being packed");  // refuse what a reader would refuse
  write_file_atomic(stage.path + "/" + kManifestName, text);

  std::string name = manifest.name;
  name.replace(name.find('/'), 1, "__");  // "org/name" -> "org__name"
  std::string archive = out_dir + "/" + name + "-" + manifest.version + "-" + manifest.variant + ".tar.zst";
  create_package_archive(stage.path, archive);
  return archive;
}

namespace {

constexpr int kMaxRestarts = 3;

// The archives of dist_dir, each read and hashed.
std::vector<Incoming> read_archives(const std::string& dist_dir) {
  std::vector<std::string> archives;
  for (const std::string& name : detail::list_names(dist_dir))
    if (ends_with(name, ".tar.zst")) archives.push_back(dist_dir + "/" + name);
  if (archives.empty())
    fail(KH_ERROR_INVALID_ARGUMENT, "publish: '" + dist_dir + "' holds no *.tar.zst package archives; run 'kernels pack' first");
  std::vector<Incoming> incoming;
  for (const std::string& archive : archives) {
    Incoming in;
    in.archive = archive;
    in.manifest = parse_package_manifest(read_archive_member(archive, kManifestName, kMaxPackageManifestBytes),
                                         archive + ":" + kManifestName);
    in.pv.repo = in.manifest.name;
    in.pv.version = in.manifest.version;
    in.pv.variant = in.manifest.variant;
    in.pv.sha256 = sha256_file_hex(archive);
    struct stat st;
    if (::stat(archive.c_str(), &st) != 0) detail::fail_errno("cannot stat '" + archive + "'", errno);
    in.pv.size = static_cast<uint64_t>(st.st_size);
    incoming.push_back(std::move(in));
  }
  return incoming;
}

// Merges each archive into its repo's index, refusing any conflict before the hub is touched.
void merge(std::map<std::string, RepoState>& repos, std::vector<Incoming>& incoming) {
  for (Incoming& in : incoming) {
    const std::string& repo = in.pv.repo;
    RepoState& state = repos.at(repo);
    RepoIndex& index = state.index;
    const std::string& archive = in.archive;
    Version version = *parse_version(in.pv.version);
    auto rel = std::find_if(index.releases.begin(), index.releases.end(),
                            [&](const Release& r) { return compare_versions(r.version, version) == 0; });
    if (rel != index.releases.end() && to_string(rel->version) != in.pv.version)
      fail(KH_ERROR_INVALID_ARGUMENT, "publish '" + archive + "': " + repo + " already has " + to_string(rel->version) +
                                          ", which differs from " + in.pv.version + " only in build metadata");
    if (rel == index.releases.end()) {
      Release r;
      r.version = version;
      index.releases.push_back(std::move(r));
      std::sort(index.releases.begin(), index.releases.end(),
                [](const Release& a, const Release& b) { return compare_versions(a.version, b.version) < 0; });
      rel = std::find_if(index.releases.begin(), index.releases.end(),
                         [&](const Release& x) { return compare_versions(x.version, version) == 0; });
    }
    auto var = std::find_if(rel->variants.begin(), rel->variants.end(),
                            [&](const VariantEntry& v) { return v.key == in.pv.variant; });
    if (var != rel->variants.end()) {
      if (var->sha256 != in.pv.sha256)
        fail(KH_ERROR_INVALID_ARGUMENT,
             "publish '" + archive + "': " + repo + "@" + in.pv.version + " variant " + in.pv.variant +
                 " is already published with sha256 " + var->sha256 + "; this archive has sha256 " + in.pv.sha256 +
                 ". Published builds never change: bump the version and publish again");
      in.pv.already_present = true;
      continue;
    }
    VariantEntry ve;
    ve.key = in.pv.variant;
    ve.sha256 = in.pv.sha256;
    ve.size = in.pv.size;
    ve.abi = in.manifest.abi;
    ve.glibc = in.manifest.glibc;  // the glibc floor travels to the index, where selection reads it
    ve.runtime = in.manifest.runtime;  // so does what the build needs of its GPU runtime
    ve.code_object = in.manifest.code_object;
    ve.description = in.manifest.description;
    ve.ops = in.manifest.ops;  // with their docs: `kernels info --op` and `kernels docs` read them there
    ve.provenance = in.manifest.provenance;  // signed with the index: `kernels info --provenance`
    rel->variants.push_back(std::move(ve));
    std::sort(rel->variants.begin(), rel->variants.end(),
              [](const VariantEntry& a, const VariantEntry& b) { return a.key < b.key; });
    state.changed = true;
  }
}

// One pass of publish(), under the lock: read, merge, write.
std::vector<PublishedVariant> publish_once(std::vector<Incoming> incoming, HubWriter& hub, PublishLock& lock,
                                           const PublishOptions& options) {
  Hub& reader = hub.reader();
  const std::optional<RootMetadata> root = latest_root(reader);
  if (!options.signing_keys.empty() || root) check_index_signers(root, options.signing_keys, hub.url());

  std::map<std::string, RepoState> repos;
  for (const Incoming& in : incoming)
    if (!repos.count(in.pv.repo)) repos.emplace(in.pv.repo, detail::read_repo(hub, in.pv.repo, root.has_value(), options));
  merge(repos, incoming);
  KH_TEST_PAUSE("publish-merged");  // race tests: two publishers hold their merge here at once

  // Blobs first: a reader never meets an index naming a blob the hub lacks.
  for (const Incoming& in : incoming)
    if (!hub.has_blob(in.pv.sha256, in.pv.size)) hub.put_blob(in.pv.sha256, in.pv.size, in.archive);

  // Then, per repo, the signatures before the index (a reader of the new index finds them).
  const int64_t expires = static_cast<int64_t>(std::time(nullptr)) + static_cast<int64_t>(options.expires_days) * 86400;
  bool any_changed = false;
  for (auto& [repo, state] : repos) {
    const std::string rel = repo_index_path(repo);
    if (!state.changed) {
      if (!options.signing_keys.empty() && state.before && !state.before_minisig) {
        const IndexSignatures sigs = sign_index(root, repo, *state.before, options.signing_keys, hub.url());
        lock.check_held();
        hub.put_index(repo, *state.before, sigs.minisig, sigs.sigs);
      }
      continue;
    }
    any_changed = true;
    write_repo_index(hub, lock, root, state, options, expires);
  }

  if (!fetch_metadata_if_present(reader, "kh-hub.json", 1u << 16)) {
    std::string name = hub.url();
    while (name.size() > 1 && name.back() == '/') name.pop_back();
    nlohmann::ordered_json doc{{"protocol", 1}, {"name", detail::base_name(name)}};
    hub.put_metadata("kh-hub.json", doc.dump(2) + "\n");
  }
  const std::optional<std::string> catalog = fetch_metadata_if_present(reader, "catalog.json", kMaxCatalogBytes);
  if (any_changed || !catalog) {
    std::map<std::string, std::string> latest;
    for (const auto& [repo, state] : repos) latest[repo] = detail::latest_version(state.index);
    hub.put_metadata("catalog.json", detail::merged_catalog(catalog, latest));
  }

  std::vector<PublishedVariant> out;
  for (Incoming& in : incoming) out.push_back(std::move(in.pv));
  return out;
}

}  // namespace

std::vector<PublishedVariant> publish(const std::string& dist_dir, HubWriter& hub, const PublishOptions& options) {
  if (options.expires_days <= 0)
    fail(KH_ERROR_INVALID_ARGUMENT, "publish: expires_days must be positive, not " + std::to_string(options.expires_days));
  const std::vector<Incoming> incoming = read_archives(dist_dir);
  std::unique_ptr<PublishLock> lock = hub.lock_publishers(options.who.empty() ? "kernels publish" : options.who);
  for (int pass = 1;; ++pass) {
    try {
      return publish_once(incoming, hub, *lock, options);
    } catch (const IndexChanged& c) {
      if (pass >= kMaxRestarts)
        fail(KH_ERROR_NETWORK, "publish to " + hub.url() + ": " + c.rel + " kept changing while this publish ran "
                                   "(another publisher that does not take the hub's publish lock?); " +
                                   std::to_string(pass) + " attempts, the last one's index not written: publish again");
      std::fprintf(stderr, "kh: %s changed on %s while this publish ran (another publisher?); merging again\n",
                   c.rel.c_str(), hub.url().c_str());
    }
  }
}

std::vector<PublishedVariant> publish_to_file_hub(const std::string& dist_dir, const std::string& hub_dir,
                                                  int expires_days,
                                                  const std::vector<minisign::SecretKey>& signing_keys) {
  PublishOptions options;
  options.expires_days = expires_days;
  options.signing_keys = signing_keys;
  make_directories(hub_dir);
  return publish(dist_dir, *open_hub_writer("file://" + hub_dir), options);
}

}  // namespace kh::registry
