// Naming the first difference between a rebuilt archive and a published one.
#include "kh/author/archive_compare.hpp"

#include <map>
#include <nlohmann/json.hpp>

#include "kh/registry/archive.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/sha256.hpp"

namespace kh::author {
namespace {

using ojson = nlohmann::ordered_json;

std::string describe(const registry::ManifestFile& f) {
  return "sha256 " + f.sha256.substr(0, 16) + "..., " + std::to_string(f.size) + " bytes";
}

// The first leaf where two JSON documents differ, as "field.path: rebuilt X, published Y".
std::string first_json_difference(const ojson& a, const ojson& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    std::map<std::string, bool> keys;
    for (const auto& [k, _] : a.items()) keys[k] = true;
    for (const auto& [k, _] : b.items()) keys[k] = true;
    for (const auto& [k, _] : keys) {
      const std::string p = path.empty() ? k : path + "." + k;
      if (!a.contains(k)) return p + ": only the published manifest has it";
      if (!b.contains(k)) return p + ": only the rebuilt manifest has it";
      const std::string d = first_json_difference(a[k], b[k], p);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (a == b) return "";
  return path + ": rebuilt " + a.dump() + ", published " + b.dump();
}

}  // namespace

ArchiveComparison compare_with_published(const std::string& rebuilt_archive, const std::string& published_sha256,
                                         const registry::PackageManifest& published) {
  ArchiveComparison c;
  if (registry::sha256_file_hex(rebuilt_archive) == published_sha256) {
    c.identical = true;
    return c;
  }
  const std::string text = registry::read_archive_member(rebuilt_archive, registry::kManifestName,
                                                       registry::kMaxPackageManifestBytes);
  const registry::PackageManifest rebuilt = registry::parse_package_manifest(text, rebuilt_archive);
  std::map<std::string, const registry::ManifestFile*> mine, theirs;
  for (const registry::ManifestFile& f : rebuilt.files) mine[f.path] = &f;
  for (const registry::ManifestFile& f : published.files) theirs[f.path] = &f;
  std::map<std::string, bool> paths;
  for (const auto& [p, _] : mine) paths[p] = true;
  for (const auto& [p, _] : theirs) paths[p] = true;
  for (const auto& [p, _] : paths) {
    auto m = mine.find(p);
    auto t = theirs.find(p);
    if (m == mine.end()) {
      c.first_difference = p + ": only the published build has it";
      return c;
    }
    if (t == theirs.end()) {
      c.first_difference = p + ": only the rebuilt build has it";
      return c;
    }
    if (m->second->sha256 != t->second->sha256 || m->second->size != t->second->size) {
      c.first_difference = p + ": rebuilt " + describe(*m->second) + "; published " + describe(*t->second);
      return c;
    }
  }
  const std::string field = first_json_difference(ojson::parse(registry::serialize_package_manifest(rebuilt)),
                                                  ojson::parse(registry::serialize_package_manifest(published)), "");
  c.first_difference = field.empty() ? "every file and the manifest are the same; only the archive container's bytes "
                                       "differ (another libarchive or zstd version packed it?)"
                                     : std::string(registry::kManifestName) + ": " + field;
  return c;
}

}  // namespace kh::author
