// Writing a mirror and the bundle format; see mirror.hpp.
#include "kh/registry/mirror.hpp"

#include <algorithm>
#include <map>

#include "catalog.hpp"
#include "kh/registry/archive.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/registry/trust.hpp"

namespace kh::registry {
namespace {


std::string root_rel(size_t n) { return "root/" + std::to_string(n) + ".root.json"; }

}  // namespace

MirrorReport write_mirror(HubWriter& hub, const MirrorContent& content, const std::string& who) {
  MirrorReport report;
  std::unique_ptr<PublishLock> lock = hub.lock_publishers(who);
  Hub& reader = hub.reader();

  // Checks first, so that a refused mirror writes no metadata at all.
  std::vector<bool> root_missing(content.roots.size());
  for (size_t i = 0; i < content.roots.size(); ++i) {
    const std::optional<std::string> there = fetch_metadata_if_present(reader, root_rel(i + 1), kMaxRootBytes);
    if (there && *there != content.roots[i])
      fail(KH_ERROR_SIGNATURE, "mirror to " + hub.url() + ": its " + root_rel(i + 1) + " is not the source's: the hub "
                                   "trusts another root chain; mirror into an empty hub, or one mirrored from this source");
    root_missing[i] = !there;
  }
  std::vector<bool> index_same(content.indexes.size());
  for (size_t i = 0; i < content.indexes.size(); ++i) {
    const MirrorContent::Index& x = content.indexes[i];
    const std::string rel = repo_index_path(x.repo);
    const std::optional<std::string> there = fetch_metadata_if_present(reader, rel, kMaxIndexBytes);
    if (!there) continue;
    if (*there == x.text) {
      index_same[i] = true;
      continue;
    }
    const RepoIndex current = parse_repo_index(*there, rel + " of hub " + hub.url());
    if (current.version >= x.version)
      fail(KH_ERROR_ROLLBACK, "mirror to " + hub.url() + ": it holds " + x.repo + "'s index at version " +
                                  std::to_string(current.version) + ", the source's is version " +
                                  std::to_string(x.version) + (current.version == x.version ? " with other bytes" : "") +
                                  "; a mirror never moves its clients back: mirror from a newer source");
  }

  // Blobs first: no index in the mirror ever names a blob it lacks.
  for (const MirrorContent::Blob& b : content.blobs) {
    if (hub.has_blob(b.sha256, b.size)) {
      ++report.blobs_present;
      continue;
    }
    lock->check_held();
    hub.put_blob(b.sha256, b.size, b.path);
    ++report.blobs_written;
  }
  for (size_t i = 0; i < content.roots.size(); ++i) {
    if (!root_missing[i]) continue;
    hub.put_metadata(root_rel(i + 1), content.roots[i]);
    ++report.roots_written;
  }
  for (size_t i = 0; i < content.indexes.size(); ++i) {
    if (index_same[i]) continue;
    const MirrorContent::Index& x = content.indexes[i];
    lock->check_held();
    hub.put_index(x.repo, x.text, x.minisig, x.sigs);
    ++report.indexes_written;
  }
  if (content.hub_json && !fetch_metadata_if_present(reader, "kh-hub.json", 1u << 16))
    hub.put_metadata("kh-hub.json", *content.hub_json);
  std::map<std::string, std::string> latest;
  for (const MirrorContent::Index& x : content.indexes)
    latest[x.repo] = detail::latest_version(parse_repo_index(x.text, x.repo + "'s index"));
  if (!latest.empty())
    hub.put_metadata("catalog.json", detail::merged_catalog(fetch_metadata_if_present(reader, "catalog.json", kMaxCatalogBytes), latest));
  return report;
}

void unpack_bundle(const std::string& bundle, const std::string& dir) {
  ExtractLimits limits;
  limits.max_entries = 1u << 20;                  // a whole hub: many files,
  limits.max_total_bytes = uint64_t{1} << 40;     // and large ones (what the disk holds decides)
  try {
    extract_package_archive(bundle, dir, limits);
  } catch (const StatusError& e) {
    fail(e.status(), "'" + bundle + "' is not a kh bundle (" + e.what() + ")");
  }
  if (!path_exists(dir + "/kh-hub.json") && !path_exists(dir + "/root/1.root.json"))
    fail(KH_ERROR_BAD_ARCHIVE, "'" + bundle + "' is not a kh bundle: it holds no kh-hub.json and no root/1.root.json");
}

void pack_bundle(const std::string& dir, const std::string& bundle) { create_package_archive(dir, bundle); }

}  // namespace kh::registry
