// kh-manifest.json: parsing, serialisation, and listing a tree to write one.
#include "kh/registry/package_manifest.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "kh/registry/package_spec.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/registry/detail/internal.hpp"
#include "kh/registry/detail/json_fields.hpp"

namespace kh::registry {

PackageManifest parse_package_manifest(std::string_view json_text, std::string_view source) {
  using detail::FieldReader;
  using json = nlohmann::json;
  FieldReader r(source);
  const json doc = detail::parse_json_object(json_text, source, "repack the package");

  PackageManifest m;
  detail::check_schema(r, doc, source, kManifestSchema, "manifest", "upgrade kh to use this package");

  m.name = detail::repo_name_at(r, doc, "name");
  m.version = r.string_at(doc, "", "version");
  if (!parse_version(m.version)) r.bad("version", "'" + m.version + "' is not a semantic version");
  m.variant = r.string_at(doc, "", "variant");
  if (!detail::is_variant_key(m.variant)) r.bad("variant", "a variant key must be non-empty [a-z0-9._-]");
  m.abi = r.string_at(doc, "", "abi");
  if (!detail::is_abi_text(m.abi)) r.bad("abi", "expected '<major>.<minor>', e.g. '1.0'");
  m.glibc = detail::optional_glibc_at(r, doc, "");
  detail::optional_runtime_floor_at(r, doc, "", &m.runtime, &m.code_object);
  m.library = r.string_at(doc, "", "library");
  if (!detail::is_safe_relative_path(m.library)) r.bad("library", "'" + m.library + "' is not a safe relative path");
  m.description = detail::optional_text_at(r, doc, "", "description", kMaxPackageDescriptionBytes);
  m.ops = detail::parse_ops(r, r.array_at(doc, "", "ops"), "ops");
  if (auto it = doc.find("provenance"); it != doc.end()) m.provenance = parse_provenance(*it, "provenance", source);

  const json& files = r.array_at(doc, "", "files");
  for (size_t i = 0; i < files.size(); ++i) {
    std::string p = "files[" + std::to_string(i) + "]";
    if (!files[i].is_object()) r.bad(p, "expected an object");
    ManifestFile f;
    f.path = r.string_at(files[i], p, "path");
    if (!detail::is_safe_relative_path(f.path)) r.bad(p + ".path", "'" + f.path + "' is not a safe relative path");
    if (f.path == kManifestName) r.bad(p + ".path", "the manifest must not list itself");
    f.sha256 = r.string_at(files[i], p, "sha256");
    if (!is_sha256_hex(f.sha256)) r.bad(p + ".sha256", "expected 64 lowercase hex digits");
    f.size = r.unsigned_at(files[i], p, "size");
    m.files.push_back(std::move(f));
  }
  std::sort(m.files.begin(), m.files.end(), [](const ManifestFile& a, const ManifestFile& b) { return a.path < b.path; });
  for (size_t i = 1; i < m.files.size(); ++i)
    if (m.files[i - 1].path == m.files[i].path) r.bad("files", "'" + m.files[i].path + "' is listed twice");
  bool library_listed = std::any_of(m.files.begin(), m.files.end(), [&](const ManifestFile& f) { return f.path == m.library; });
  if (!library_listed) r.bad("library", "'" + m.library + "' is not among the manifest's files");
  return m;
}

std::string serialize_package_manifest(const PackageManifest& manifest) {
  using ojson = nlohmann::ordered_json;
  ojson doc;
  doc["schema"] = manifest.schema;
  doc["name"] = manifest.name;
  doc["version"] = manifest.version;
  doc["variant"] = manifest.variant;
  doc["abi"] = manifest.abi;
  if (!manifest.glibc.empty()) doc["glibc"] = manifest.glibc;
  detail::write_runtime_floor(doc, manifest.runtime, manifest.code_object);
  doc["library"] = manifest.library;
  if (!manifest.description.empty()) doc["description"] = manifest.description;
  doc["ops"] = detail::ops_json(manifest.ops);
  if (!manifest.provenance.empty()) doc["provenance"] = provenance_json(manifest.provenance);
  std::vector<ManifestFile> files = manifest.files;
  std::sort(files.begin(), files.end(), [](const ManifestFile& a, const ManifestFile& b) { return a.path < b.path; });
  ojson fs = ojson::array();
  for (const ManifestFile& f : files) fs.push_back(ojson{{"path", f.path}, {"sha256", f.sha256}, {"size", f.size}});
  doc["files"] = std::move(fs);
  return doc.dump(2) + "\n";
}

std::vector<ManifestFile> hash_tree(const std::string& dir) {
  std::vector<ManifestFile> out;
  for (const detail::TreeEntry& e : detail::list_tree(dir)) {
    if (e.type == detail::TreeEntry::Type::Directory) continue;
    if (e.type != detail::TreeEntry::Type::File)
      fail(KH_ERROR_INVALID_ARGUMENT, "'" + dir + "/" + e.path +
                                          "' is not a regular file or directory; a package holds only those");
    if (e.path == kManifestName) continue;  // the manifest never lists itself
    out.push_back(ManifestFile{e.path, sha256_regular_file_hex(dir + "/" + e.path), e.size});
  }
  return out;
}

}  // namespace kh::registry
