// kernels.lock: what a project pinned. Per repo: the request it was locked from, the
// resolved version, the hub, and the sha256 of every build of that version, so the same
// lockfile serves every machine (each picks its build, whose bytes are pinned).
//
// { "schema": 1,
//   "packages": {
//     "kernels-community/rms-norm": {
//       "request": "1", "version": "1.0.0", "hub": "https://hub.example/kh",
//       "variants": { "cpu-x86_64-abi1-x86_64-linux": "<sha256>", ... } } } }
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace kh::registry {

inline constexpr int kLockfileSchema = 1;
inline constexpr const char* kDefaultLockfileName = "kernels.lock";

struct LockedPackage {
  std::string request;  // the version request it was locked from ("1", "^1.2.0", "latest")
  std::string version;  // the resolved version
  std::string hub;
  std::map<std::string, std::string> variants;  // variant key -> blob sha256
};

struct Lockfile {
  int schema = kLockfileSchema;
  std::map<std::string, LockedPackage> packages;  // by repo
};

// Throws StatusError(KH_ERROR_BAD_METADATA) naming the field.
Lockfile parse_lockfile(std::string_view json_text, std::string_view source);
std::string serialize_lockfile(const Lockfile& lockfile);
// Reads a lockfile; throws KH_ERROR_NOT_FOUND if absent.
Lockfile load_lockfile(const std::string& path);

}  // namespace kh::registry
