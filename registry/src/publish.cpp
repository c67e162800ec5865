// Packing a build into a package archive, and publishing archives to a file:// hub:
// blobs first, each touched repo's index last, then the catalog.
#include "kh/registry/publish.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

#include "kh/registry/archive.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/package_spec.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"
#include "file_hub_signing.hpp"
#include "internal.hpp"

namespace kh::registry {
namespace {

constexpr uint64_t kManifestMaxBytes = 16u << 20;
constexpr uint64_t kIndexMaxBytes = 64u << 20;

struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    try {
      if (!path.empty()) remove_tree(path);
    } catch (...) {
    }
  }
};

// Copies `from` to `to` (a new file), with the given mode, synced.
void copy_file(const std::string& from, const std::string& to, mode_t mode) {
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) detail::fail_errno("cannot open '" + from + "'", errno);
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (out < 0) {
    int err = errno;
    ::close(in);
    detail::fail_errno("cannot create '" + to + "'", err);
  }
  try {
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(in, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        detail::fail_errno("cannot read '" + from + "'", errno);
      }
      if (n == 0) break;
      detail::write_all(out, buf, static_cast<size_t>(n), "'" + to + "'");
    }
    if (::fchmod(out, mode) != 0 || ::fsync(out) != 0) detail::fail_errno("cannot finish '" + to + "'", errno);
  } catch (...) {
    ::close(in);
    ::close(out);
    throw;
  }
  ::close(in);
  ::close(out);
}

bool valid_repo(const std::string& repo) {
  size_t slash = repo.find('/');
  return slash != std::string::npos && is_valid_repo_part(repo.substr(0, slash)) &&
         is_valid_repo_part(repo.substr(slash + 1));
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The newest release a plain "@latest" would pick, else the newest of any kind.
std::string latest_version(const RepoIndex& index) {
  VersionRequest latest;
  for (auto it = index.releases.rbegin(); it != index.releases.rend(); ++it)
    if (!it->yanked && latest.matches(it->version)) return to_string(it->version);
  return index.releases.empty() ? "" : to_string(index.releases.back().version);
}

void write_catalog(const std::string& hub_dir) {
  nlohmann::ordered_json repos = nlohmann::ordered_json::array();
  std::string root = hub_dir + "/repos";
  if (path_exists(root)) {
    for (const std::string& org : detail::list_names(root)) {
      if (!is_valid_repo_part(org)) continue;
      for (const std::string& name : detail::list_names(root + "/" + org)) {
        std::string repo = org + "/" + name;
        std::string path = hub_dir + "/" + repo_index_path(repo);
        if (!is_valid_repo_part(name) || !path_exists(path)) continue;
        RepoIndex index = parse_repo_index(read_regular_file(path, kIndexMaxBytes), path);
        repos.push_back(nlohmann::ordered_json{{"repo", repo}, {"latest", latest_version(index)}});
      }
    }
  }
  nlohmann::ordered_json doc{{"schema", 1}, {"repos", std::move(repos)}};
  write_file_atomic(hub_dir + "/catalog.json", doc.dump(2) + "\n");
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
  copy_file(library_path, stage.path + "/" + lib_rel, (st.st_mode & 0111) ? 0755 : 0644);
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

std::vector<PublishedVariant> publish_to_file_hub(const std::string& dist_dir, const std::string& hub_dir,
                                                  int expires_days,
                                                  const std::vector<minisign::SecretKey>& signing_keys) {
  if (expires_days <= 0)
    fail(KH_ERROR_INVALID_ARGUMENT, "publish: expires_days must be positive, not " + std::to_string(expires_days));
  make_directories(hub_dir);
  FileLock lock(hub_dir + "/.kh-publish.lock");
  if (!signing_keys.empty() || path_exists(hub_dir + "/root")) detail::check_index_signers(hub_dir, signing_keys);

  std::vector<std::string> archives;
  for (const std::string& name : detail::list_names(dist_dir))
    if (ends_with(name, ".tar.zst")) archives.push_back(dist_dir + "/" + name);
  if (archives.empty())
    fail(KH_ERROR_INVALID_ARGUMENT, "publish: '" + dist_dir + "' holds no *.tar.zst package archives; run 'kernels pack' first");

  // 1. Read every archive and merge it into its repo's index in memory, refusing any
  //    conflict before the hub is touched.
  std::map<std::string, RepoIndex> indexes;
  std::map<std::string, bool> changed;
  std::vector<Incoming> incoming;
  for (const std::string& archive : archives) {
    Incoming in;
    in.archive = archive;
    in.manifest = parse_package_manifest(read_archive_member(archive, kManifestName, kManifestMaxBytes),
                                         archive + ":" + kManifestName);
    in.pv.repo = in.manifest.name;
    in.pv.version = in.manifest.version;
    in.pv.variant = in.manifest.variant;
    in.pv.sha256 = sha256_file_hex(archive);
    struct stat st;
    if (::stat(archive.c_str(), &st) != 0) detail::fail_errno("cannot stat '" + archive + "'", errno);
    in.pv.size = static_cast<uint64_t>(st.st_size);

    const std::string& repo = in.pv.repo;
    if (!indexes.count(repo)) {
      std::string path = hub_dir + "/" + repo_index_path(repo);
      RepoIndex index;
      if (path_exists(path)) {
        index = parse_repo_index(read_regular_file(path, kIndexMaxBytes), path);
        if (index.repo != repo)
          fail(KH_ERROR_BAD_METADATA, "'" + path + "' names repo '" + index.repo + "', not '" + repo + "'; fix the hub first");
      } else {
        index.repo = repo;
      }
      indexes[repo] = std::move(index);
    }
    RepoIndex& index = indexes[repo];
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
    } else {
      VariantEntry ve;
      ve.key = in.pv.variant;
      ve.sha256 = in.pv.sha256;
      ve.size = in.pv.size;
      ve.abi = in.manifest.abi;
      ve.glibc = in.manifest.glibc;  // the glibc floor travels to the index, where selection reads it
      ve.description = in.manifest.description;
      ve.ops = in.manifest.ops;  // with their docs: `kernels info --op` and `kernels docs` read them there
      rel->variants.push_back(std::move(ve));
      std::sort(rel->variants.begin(), rel->variants.end(),
                [](const VariantEntry& a, const VariantEntry& b) { return a.key < b.key; });
      changed[repo] = true;
    }
    incoming.push_back(std::move(in));
  }

  // 2. Blobs, each through a temp name and a rename. A blob already there is kept if it
  //    hashes right, replaced if it does not.
  for (const Incoming& in : incoming) {
    std::string blob = hub_dir + "/" + blob_path(in.pv.sha256);
    if (path_exists(blob) && sha256_file_hex(blob) == in.pv.sha256) continue;
    make_directories(detail::parent_path(blob));
    std::string tmp = temp_sibling(blob);
    try {
      copy_file(in.archive, tmp, 0644);
      if (sha256_file_hex(tmp) != in.pv.sha256)
        fail(KH_ERROR_IO, "publish: '" + in.archive + "' changed while it was being published; publish again");
      if (::rename(tmp.c_str(), blob.c_str()) != 0) detail::fail_errno("cannot rename '" + tmp + "' to '" + blob + "'", errno);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
    detail::fsync_directory(detail::parent_path(blob));
  }

  // 3. Indexes last: a reader never sees an index naming a blob that is not there yet.
  //    Each index's signatures go first, so a reader that sees the new index finds them.
  int64_t expires = static_cast<int64_t>(std::time(nullptr)) + static_cast<int64_t>(expires_days) * 86400;
  for (auto& [repo, index] : indexes) {
    const std::string index_file = hub_dir + "/" + repo_index_path(repo);
    if (!changed[repo]) {
      if (!signing_keys.empty() && !path_exists(index_file + ".minisig"))
        detail::write_index_signatures(hub_dir, repo, read_regular_file(index_file, kIndexMaxBytes), signing_keys);
      continue;
    }
    if (index.version >= kMaxMetadataVersion)
      fail(KH_ERROR_BAD_METADATA,
           "cannot publish " + repo + ": its index is at version " + std::to_string(index.version) +
               ", the highest kh accepts (2^53 - 1), so it cannot grow again. An index that high was signed with a "
               "misused key: rotate the index keys with a new root (`kernels trust rotate`), set \"version\" in " +
               index_file + " back to the last honest version, and publish again (clients reset their rollback "
               "state when the index keys change)");
    index.version += 1;
    index.expires = format_rfc3339_utc(expires);
    index.expires_unix = expires;
    const std::string text = serialize_repo_index(index);
    if (!signing_keys.empty()) detail::write_index_signatures(hub_dir, repo, text, signing_keys);
    write_file_atomic(index_file, text);
  }

  std::string hub_json = hub_dir + "/kh-hub.json";
  if (!path_exists(hub_json)) {
    std::string abs = hub_dir;
    while (abs.size() > 1 && abs.back() == '/') abs.pop_back();
    nlohmann::ordered_json doc{{"protocol", 1}, {"name", detail::base_name(abs)}};
    write_file_atomic(hub_json, doc.dump(2) + "\n");
  }
  bool any_changed = std::any_of(changed.begin(), changed.end(), [](const auto& kv) { return kv.second; });
  if (any_changed || !path_exists(hub_dir + "/catalog.json")) write_catalog(hub_dir);

  std::vector<PublishedVariant> out;
  for (Incoming& in : incoming) out.push_back(std::move(in.pv));
  return out;
}

}  // namespace kh::registry
