// Cache verification and tidying; see cache_maintenance.hpp.
#include "kh/registry/cache_maintenance.hpp"

#include <sys/stat.h>

#include <ctime>

#include "kh/registry/cache_layout.hpp"
#include "kh/registry/detail/internal.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry {
namespace {

uint64_t tree_bytes(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) return static_cast<uint64_t>(st.st_size);
  uint64_t total = 0;
  for (const auto& e : detail::list_tree(path))
    if (e.type == detail::TreeEntry::Type::File) total += e.size;
  return total;
}

void remove_into(GarbageReport* report, const std::string& root, const std::string& relative) {
  const std::string path = root + "/" + relative;
  report->bytes += tree_bytes(path);
  remove_tree(path);
  report->removed.push_back(relative);
}

int64_t age_s(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(std::time(nullptr)) - static_cast<int64_t>(st.st_mtime);
}

}  // namespace

std::vector<PackageCheck> verify_cache(const Cache& cache, bool remove_damaged) {
  std::vector<PackageCheck> checks;
  const std::string pkgs = cache_layout::under(cache.root(), cache_layout::kPackagesDir);
  if (!path_exists(pkgs)) return checks;
  for (const std::string& sha : detail::list_names(pkgs)) {
    const std::optional<std::string> dir = cache.complete_package_dir(sha);  // damaged ones too: reported
    if (!dir) continue;  // incomplete: never trusted; gc removes it
    PackageCheck check;
    check.sha256 = sha;
    check.dir = *dir;
    try {
      const std::string manifest_path = *dir + "/" + kManifestName;
      const PackageManifest m = parse_package_manifest(read_file(manifest_path, kMaxPackageManifestBytes), manifest_path);
      check.name = m.name + " " + m.version + " (" + m.variant + ")";
      verify_tree_against_manifest(*dir, m);
    } catch (const StatusError& e) {
      check.problem = e.what();
      if (remove_damaged) remove_tree(*dir);
    }
    checks.push_back(check);
  }
  return checks;
}

GarbageReport collect_garbage(const Cache& cache, int64_t min_tmp_age_s, bool drop_archives) {
  GarbageReport report;
  const std::string& root = cache.root();
  using namespace cache_layout;
  const std::string tmp = under(root, kTmpDir), pkgs = under(root, kPackagesDir), blobs = under(root, kBlobsDir);
  if (path_exists(tmp))
    for (const std::string& name : detail::list_names(tmp))
      if (age_s(tmp + "/" + name) >= min_tmp_age_s || detail::is_orphaned_work(tmp, name))
        remove_into(&report, root, std::string(kTmpDir) + "/" + name);
  if (path_exists(pkgs))
    for (const std::string& sha : detail::list_names(pkgs))
      if (!cache.package_dir(sha)) remove_into(&report, root, std::string(kPackagesDir) + "/" + sha);
  if (drop_archives && path_exists(blobs))
    for (const std::string& prefix : detail::list_names(blobs))
      for (const std::string& sha : detail::list_names(blobs + "/" + prefix))
        if (cache.package_dir(sha)) remove_into(&report, root, std::string(kBlobsDir) + "/" + prefix + "/" + sha);
  return report;
}

GarbageReport clean_cache(const Cache& cache, bool include_trust) {
  GarbageReport report;
  const std::string& root = cache.root();
  if (!path_exists(root)) return report;
  for (const std::string& name : detail::list_names(root)) {
    // Trust state (pinned roots, highest index versions seen) lives under hubs/; keeping
    // it keeps rollback protection across a clean.
    if (name == cache_layout::kHubsDir && !include_trust) {
      for (const std::string& hub : detail::list_names(cache_layout::under(root, cache_layout::kHubsDir)))
        for (const std::string& entry : detail::list_names(cache_layout::hub_dir(root, hub)))
          if (entry == "repos" || entry == "catalog.json")
            remove_into(&report, root, std::string(cache_layout::kHubsDir) + "/" + hub + "/" + entry);
      continue;
    }
    remove_into(&report, root, name);
  }
  return report;
}

}  // namespace kh::registry
