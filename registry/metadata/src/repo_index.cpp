// repos/<org>/<name>/index.json: strict parsing, stable serialisation, version resolution.
#include "kh/registry/repo_index.hpp"

#include <algorithm>
#include <cstdio>

#include "kh/registry/package_spec.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/registry/detail/json_fields.hpp"
#include "kh/platform/versions.hpp"

namespace kh::registry {
namespace {

using json = nlohmann::json;
using detail::FieldReader;
using detail::key_in_path;

bool is_variant_key_impl(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

bool is_abi_text_impl(std::string_view s) {
  size_t dot = s.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == s.size()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (i != dot && !(s[i] >= '0' && s[i] <= '9')) return false;
  return true;
}

}  // namespace

bool is_glibc_version(std::string_view text) { return platform::parse_glibc_version(text).has_value(); }

int compare_glibc_versions(std::string_view a, std::string_view b) {
  return platform::compare(platform::parse_glibc_version(a).value_or(platform::GlibcVersion{}),
                           platform::parse_glibc_version(b).value_or(platform::GlibcVersion{}));
}

namespace detail {
bool is_variant_key(std::string_view s) { return is_variant_key_impl(s); }
bool is_abi_text(std::string_view s) { return is_abi_text_impl(s); }

std::string optional_glibc_at(const FieldReader& r, const nlohmann::json& obj, const std::string& parent) {
  auto it = obj.find("glibc");
  if (it == obj.end()) return "";
  const std::string path = FieldReader::join(parent, "glibc");
  if (!it->is_string()) r.bad(path, "expected a string, a glibc version like \"2.36\"");
  std::string text = it->get<std::string>();
  if (!is_glibc_version(text)) r.bad(path, "'" + text + "' is not a glibc version like \"2.36\" or \"2.2.5\"");
  return text;
}

void optional_runtime_floor_at(const FieldReader& r, const nlohmann::json& obj, const std::string& parent,
                               std::string* runtime, uint32_t* code_object) {
  if (auto it = obj.find("runtime"); it != obj.end()) {
    const std::string path = FieldReader::join(parent, "runtime");
    if (!it->is_string() || !platform::parse_major_minor(it->get<std::string>()))
      r.bad(path, "expected a runtime version \"major.minor\", e.g. \"5.0\"");
    *runtime = it->get<std::string>();
  }
  if (auto it = obj.find("code_object"); it != obj.end()) {
    const std::string path = FieldReader::join(parent, "code_object");
    if (!it->is_number_unsigned() || it->get<uint64_t>() == 0 || it->get<uint64_t>() > 99)
      r.bad(path, "expected a code-object version, an integer from 1 to 99");
    *code_object = static_cast<uint32_t>(it->get<uint64_t>());
  }
}

json parse_json_object(std::string_view text, std::string_view source, std::string_view fix) {
  check_json_depth(text, source);
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    fail(KH_ERROR_BAD_METADATA, std::string(source) + ": not valid JSON (" + printable(e.what()) + ")" +
                                    (fix.empty() ? "" : "; " + std::string(fix)));
  }
  if (!doc.is_object()) fail(KH_ERROR_BAD_METADATA, std::string(source) + ": expected a JSON object at the top level");
  return doc;
}

void check_schema(const FieldReader& r, const json& doc, std::string_view source, int64_t expected,
                  std::string_view what, std::string_view upgrade) {
  const json& schema = r.member(doc, "", "schema");
  if (!schema.is_number_integer()) r.bad("schema", "expected an integer");
  if (schema.get<int64_t>() != expected)
    fail(KH_ERROR_BAD_METADATA, std::string(source) + ": unsupported " + std::string(what) + " schema " +
                                    schema.dump() + "; this kh reads schema " + std::to_string(expected) +
                                    " only: " + std::string(upgrade));
}

std::string repo_name_at(const FieldReader& r, const json& doc, const std::string& key) {
  std::string name = r.string_at(doc, "", key);
  size_t slash = name.find('/');
  if (slash == std::string::npos || !is_valid_repo_part(name.substr(0, slash)) ||
      !is_valid_repo_part(name.substr(slash + 1)))
    r.bad(key, "'" + name + "' is not a valid '<org>/<name>'");
  return name;
}

void write_runtime_floor(nlohmann::ordered_json& obj, const std::string& runtime, uint32_t code_object) {
  if (!runtime.empty()) obj["runtime"] = runtime;
  if (code_object != 0) obj["code_object"] = code_object;
}

}  // namespace detail

namespace {
using detail::is_abi_text;
using detail::is_variant_key;
using detail::parse_ops;

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {  // H. Hinnant's algorithm
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

}  // namespace

bool parse_rfc3339_utc(std::string_view t, int64_t* unix_seconds) {
  // YYYY-MM-DDTHH:MM:SSZ
  if (t.size() != 20 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':' || t[19] != 'Z')
    return false;
  auto num = [&](size_t pos, size_t len, unsigned* out) {
    unsigned v = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      v = v * 10 + static_cast<unsigned>(t[i] - '0');
    }
    *out = v;
    return true;
  };
  unsigned y, mo, d, h, mi, s;
  if (!num(0, 4, &y) || !num(5, 2, &mo) || !num(8, 2, &d) || !num(11, 2, &h) || !num(14, 2, &mi) || !num(17, 2, &s))
    return false;
  static const unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  unsigned dim = kDays[mo - 1] + ((mo == 2 && leap) ? 1 : 0);
  if (d > dim) return false;
  *unix_seconds = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
  return true;
}

std::string format_rfc3339_utc(int64_t unix_seconds) {
  int64_t days = unix_seconds / 86400, secs = unix_seconds % 86400;
  if (secs < 0) {
    secs += 86400;
    days -= 1;
  }
  // civil_from_days (H. Hinnant)
  int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ", static_cast<long long>(y), m, d,
                static_cast<long long>(secs / 3600), static_cast<long long>(secs / 60 % 60),
                static_cast<long long>(secs % 60));
  return buf;
}

RepoIndex parse_repo_index(std::string_view json_text, std::string_view source) {
  FieldReader r(source);
  const json doc = detail::parse_json_object(json_text, source,
                                             "the hub's index is corrupt: ask its publisher to republish it");

  RepoIndex index;
  detail::check_schema(r, doc, source, kRepoIndexSchema, "index", "upgrade kh to read this hub");
  index.schema = kRepoIndexSchema;

  index.repo = detail::repo_name_at(r, doc, "repo");
  index.version = r.unsigned_at(doc, "", "version");
  if (index.version > kMaxMetadataVersion)
    r.bad("version", std::to_string(index.version) + " is above the highest version kh accepts (" +
                         std::to_string(kMaxMetadataVersion) + ", 2^53 - 1); an index this high can only come "
                         "from a misused signing key");
  index.expires = r.string_at(doc, "", "expires");
  if (!parse_rfc3339_utc(index.expires, &index.expires_unix))
    r.bad("expires", "'" + index.expires + "' is not an RFC 3339 UTC time like 2027-01-01T00:00:00Z");

  const json& releases = r.object_at(doc, "", "releases");
  for (auto it = releases.begin(); it != releases.end(); ++it) {
    std::string rpath = "releases." + key_in_path(it.key());
    std::optional<Version> v = parse_version(it.key());
    if (!v) r.bad(rpath, "'" + it.key() + "' is not a semantic version");
    if (!it.value().is_object()) r.bad(rpath, "expected an object");
    Release rel;
    rel.version = *v;
    if (auto y = it.value().find("yanked"); y != it.value().end()) {
      if (!y->is_boolean()) r.bad(rpath + ".yanked", "expected true or false");
      rel.yanked = y->get<bool>();
    }
    const json& variants = r.object_at(it.value(), rpath, "variants");
    for (auto vit = variants.begin(); vit != variants.end(); ++vit) {
      std::string vpath = rpath + ".variants." + key_in_path(vit.key());
      if (!is_variant_key(vit.key())) r.bad(vpath, "a variant key must be non-empty [a-z0-9._-]");
      if (!vit.value().is_object()) r.bad(vpath, "expected an object");
      VariantEntry ve;
      ve.key = vit.key();
      ve.sha256 = r.string_at(vit.value(), vpath, "sha256");
      if (!is_sha256_hex(ve.sha256)) r.bad(vpath + ".sha256", "expected 64 lowercase hex digits");
      ve.size = r.unsigned_at(vit.value(), vpath, "size");
      ve.abi = r.string_at(vit.value(), vpath, "abi");
      if (!is_abi_text(ve.abi)) r.bad(vpath + ".abi", "expected '<major>.<minor>', e.g. '1.0'");
      ve.glibc = detail::optional_glibc_at(r, vit.value(), vpath);  // optional: older entries lack it
      detail::optional_runtime_floor_at(r, vit.value(), vpath, &ve.runtime, &ve.code_object);
      ve.description = detail::optional_text_at(r, vit.value(), vpath, "description", kMaxPackageDescriptionBytes);
      ve.ops = parse_ops(r, r.array_at(vit.value(), vpath, "ops"), vpath + ".ops");
      if (auto pv = vit.value().find("provenance"); pv != vit.value().end())
        ve.provenance = parse_provenance(*pv, vpath + ".provenance", source);
      rel.variants.push_back(std::move(ve));
    }
    std::sort(rel.variants.begin(), rel.variants.end(),
              [](const VariantEntry& a, const VariantEntry& b) { return a.key < b.key; });
    index.releases.push_back(std::move(rel));
  }
  std::sort(index.releases.begin(), index.releases.end(),
            [](const Release& a, const Release& b) { return compare_versions(a.version, b.version) < 0; });
  for (size_t i = 1; i < index.releases.size(); ++i)
    if (compare_versions(index.releases[i - 1].version, index.releases[i].version) == 0)
      r.bad("releases", "'" + to_string(index.releases[i - 1].version) + "' and '" +
                            to_string(index.releases[i].version) + "' differ only in build metadata");
  return index;
}

std::string serialize_repo_index(const RepoIndex& index) {
  using ojson = nlohmann::ordered_json;
  ojson doc;
  doc["schema"] = index.schema;
  doc["repo"] = index.repo;
  doc["version"] = index.version;
  doc["expires"] = index.expires;
  ojson releases = ojson::object();
  for (const Release& rel : index.releases) {
    ojson r;
    r["yanked"] = rel.yanked;
    ojson variants = ojson::object();
    std::vector<const VariantEntry*> sorted;
    for (const VariantEntry& v : rel.variants) sorted.push_back(&v);
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->key < b->key; });
    for (const VariantEntry* v : sorted) {
      ojson entry{{"sha256", v->sha256}, {"size", v->size}, {"abi", v->abi}};
      if (!v->glibc.empty()) entry["glibc"] = v->glibc;
      detail::write_runtime_floor(entry, v->runtime, v->code_object);
      if (!v->description.empty()) entry["description"] = v->description;
      entry["ops"] = detail::ops_json(v->ops);
      if (!v->provenance.empty()) entry["provenance"] = provenance_json(v->provenance);
      variants[v->key] = std::move(entry);
    }
    r["variants"] = std::move(variants);
    releases[to_string(rel.version)] = std::move(r);
  }
  doc["releases"] = std::move(releases);
  return doc.dump(2) + "\n";
}

const Release& resolve_release(const RepoIndex& index, const VersionRequest& request) {
  if (request.kind == VersionRequest::Kind::Digest) {
    for (auto it = index.releases.rbegin(); it != index.releases.rend(); ++it)
      for (const VariantEntry& v : it->variants)
        if (v.sha256 == request.sha256) return *it;
  } else {
    for (auto it = index.releases.rbegin(); it != index.releases.rend(); ++it)
      if (request.matches(it->version) && (!it->yanked || request.pins_exactly())) return *it;
  }

  std::string available;
  std::string yanked_match;
  for (const Release& rel : index.releases) {
    if (!available.empty()) available += ", ";
    available += to_string(rel.version);
    if (rel.yanked) {
      available += " (yanked)";
      if (request.matches(rel.version)) yanked_match = to_string(rel.version);
    }
  }
  std::string msg = index.repo + ": no release matches '@" + request.text + "'";
  if (request.kind == VersionRequest::Kind::Digest) msg = index.repo + ": no build has blob digest sha256:" + request.sha256;
  msg += index.releases.empty() ? "; the repo has no releases" : "; releases: " + available;
  if (!yanked_match.empty())
    msg += "; " + yanked_match + " matches but is yanked: pin it with '@=" + yanked_match + "' to use it anyway";
  fail(KH_ERROR_NOT_FOUND, msg);
}

const VariantEntry* find_variant(const std::vector<VariantEntry>& builds, const std::string& key) {
  for (const VariantEntry& v : builds)
    if (v.key == key) return &v;
  return nullptr;
}

std::string repo_index_path(const std::string& repo) { return "repos/" + repo + "/index.json"; }

std::string blob_path(const std::string& sha256) {
  return "blobs/sha256/" + sha256.substr(0, 2) + "/" + sha256;
}

}  // namespace kh::registry
