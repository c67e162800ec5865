// kernels.lock parsing and writing; see lockfile.hpp.
#include "kh/registry/lockfile.hpp"

#include <nlohmann/json.hpp>

#include "kh/registry/fs.hpp"
#include "kh/registry/json_limits.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/package_spec.hpp"
#include "kh/registry/semver.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry {
namespace {

constexpr uint64_t kMaxLockfileBytes = 16u << 20;

[[noreturn]] void bad(std::string_view source, const std::string& field, const std::string& what) {
  fail(KH_ERROR_BAD_METADATA, std::string(source) + ": field '" + printable(field) + "': " + printable(what, 4096) +
                                  "; fix the file or regenerate it with `kernels lock`");
}

const nlohmann::json& member(const nlohmann::json& object, const char* key, std::string_view source,
                             const std::string& path) {
  auto it = object.find(key);
  if (it == object.end()) bad(source, path + key, "missing");
  return *it;
}

std::string string_member(const nlohmann::json& object, const char* key, std::string_view source,
                          const std::string& path) {
  const nlohmann::json& v = member(object, key, source, path);
  if (!v.is_string()) bad(source, path + key, "expected a string");
  return v.get<std::string>();
}

}  // namespace

Lockfile parse_lockfile(std::string_view text, std::string_view source) {
  check_json_depth(text, source);
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) fail(KH_ERROR_BAD_METADATA, std::string(source) + ": not a JSON object");
  Lockfile lock;
  const nlohmann::json& schema = member(doc, "schema", source, "");
  if (!schema.is_number_integer() || schema.get<int64_t>() != kLockfileSchema)
    bad(source, "schema", "this kh reads lockfile schema " + std::to_string(kLockfileSchema) + " only; upgrade kh");
  const nlohmann::json& packages = member(doc, "packages", source, "");
  if (!packages.is_object()) bad(source, "packages", "expected an object");
  for (const auto& [repo, entry] : packages.items()) {
    const std::string path = "packages.\"" + repo + "\".";
    const PackageSpec spec = parse_package_spec(repo);  // validates org/name
    if (repo.find('@') != std::string::npos || spec.repo() != repo) bad(source, path, "not an org/name");
    if (!entry.is_object()) bad(source, path, "expected an object");
    LockedPackage p;
    p.request = string_member(entry, "request", source, path);
    p.version = string_member(entry, "version", source, path);
    if (!parse_version(p.version)) bad(source, path + "version", "not a semantic version");
    p.hub = string_member(entry, "hub", source, path);
    const nlohmann::json& variants = member(entry, "variants", source, path);
    if (!variants.is_object() || variants.empty()) bad(source, path + "variants", "expected a non-empty object");
    for (const auto& [key, sha] : variants.items()) {
      if (!sha.is_string() || !is_sha256_hex(sha.get<std::string>()))
        bad(source, path + "variants.\"" + key + "\"", "expected a sha256 (64 lowercase hex digits)");
      p.variants[key] = sha.get<std::string>();
    }
    lock.packages[repo] = std::move(p);
  }
  return lock;
}

std::string serialize_lockfile(const Lockfile& lock) {
  nlohmann::json packages = nlohmann::json::object();
  for (const auto& [repo, p] : lock.packages)
    packages[repo] = {{"request", p.request}, {"version", p.version}, {"hub", p.hub}, {"variants", p.variants}};
  return nlohmann::json{{"schema", lock.schema}, {"packages", packages}}.dump(2) + "\n";
}

Lockfile load_lockfile(const std::string& path) {
  if (!path_exists(path))
    fail(KH_ERROR_NOT_FOUND, "lockfile " + path + " does not exist; create it with `kernels lock <org/name@version>...`");
  return parse_lockfile(read_file(path, kMaxLockfileBytes), path);
}

}  // namespace kh::registry
