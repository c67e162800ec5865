// repos/<org>/<name>/index.json: which versions of a repo exist and which builds
// (variants) each has. Parsed strictly: an unknown schema, a missing or mistyped field is
// an error that names the field.
//
// {
//   "schema": 1,
//   "repo": "kernels-community/rms-norm",
//   "version": 7,                         // grows with every publish (rollback protection)
//   "expires": "2027-01-01T00:00:00Z",    // RFC 3339 UTC (freeze protection)
//   "releases": {
//     "1.0.0": {
//       "yanked": false,
//       "variants": {
//         "cpu-x86_64-abi1-x86_64-linux": {
//           "sha256": "<64 hex>", "size": 12345, "abi": "1.0",
//           "glibc": "2.36",                // newest GLIBC_ symbol version the library needs
//           "runtime": "5.0", "code_object": 4,   // ROCm builds: oldest HIP runtime, AMDGPU code-object version
//           "description": "...",           // optional: the package's
//           "ops": [ { "name": "rms_norm", "schema": "rms_norm(...) -> ()", "summary": ...,
//                      "args": [...], ... } ],     // the docs are optional: op_docs.hpp
//           "provenance": {...}             // optional: where the build came from (provenance.hpp)
//         } } } } }
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kh/registry/op_docs.hpp"  // OpInfo
#include "kh/registry/provenance.hpp"
#include "kh/registry/semver.hpp"

namespace kh::registry {

inline constexpr int kRepoIndexSchema = 1;
// The highest metadata version (an index's "version", a root's) kh accepts: 2^53 - 1, the
// largest integer every JSON reader holds exactly. A counter that grows by one per publish
// never gets near it; one signed near 2^64 (a stolen index key) would leave no room to
// grow, so it is refused rather than allowed to pin clients forever (docs/trust.md).
inline constexpr uint64_t kMaxMetadataVersion = (uint64_t{1} << 53) - 1;

struct VariantEntry {
  std::string key;     // variant key, e.g. "cpu-x86_64-abi1-x86_64-linux"
  std::string sha256;  // of the blob (.tar.zst)
  uint64_t size = 0;   // of the blob, bytes
  std::string abi;     // "major.minor" of the kernel ABI the build speaks
  // The glibc floor: the newest GLIBC_ symbol version the library needs ("2.36"), copied
  // from its package manifest at publish. Empty: not recorded (entries published before
  // the field existed, or a library that needs no versioned glibc symbol); no floor checked.
  std::string glibc;
  // What the build needs of its GPU runtime, copied from its package manifest at publish
  // (ROCm builds record both; empty / 0 where not recorded): the oldest runtime version it
  // runs under ("5.0": HIP 5.0), and the AMDGPU code-object version of its device code.
  // Selection refuses the build on a host whose runtime is older or cannot load that
  // code-object version (docs/hub.md).
  std::string runtime;
  uint32_t code_object = 0;
  std::string description;  // the package's, from its manifest; empty when not recorded
  std::vector<OpInfo> ops;  // with their docs where the package carries them (op_docs.hpp)
  Provenance provenance;    // the build's, copied from its manifest at publish; empty when not recorded
};

struct Release {
  Version version;
  bool yanked = false;
  std::vector<VariantEntry> variants;  // sorted by key
};

struct RepoIndex {
  int schema = kRepoIndexSchema;
  std::string repo;
  uint64_t version = 0;
  std::string expires;       // as written
  int64_t expires_unix = 0;  // seconds since the epoch
  std::vector<Release> releases;  // sorted by version, oldest first
};

// Throws StatusError(KH_ERROR_BAD_METADATA): "<source>: field 'releases.1.0.0.variants.x.size': expected an unsigned integer".
RepoIndex parse_repo_index(std::string_view json_text, std::string_view source);
std::string serialize_repo_index(const RepoIndex& index);  // pretty JSON, stable order

// A glibc version as the index and manifest write it: two or three decimal numbers, "2.36"
// or "2.2.5" (the forms GLIBC_ symbol versions take). Both read with the platform
// vocabulary (kh/platform/versions.hpp).
bool is_glibc_version(std::string_view text);
// Compares two such versions numerically ("2.9" < "2.36"); <0, 0, >0. Both must be valid.
int compare_glibc_versions(std::string_view a, std::string_view b);

// RFC 3339 "YYYY-MM-DDTHH:MM:SSZ" <-> unix seconds; parse returns false on bad text.
bool parse_rfc3339_utc(std::string_view text, int64_t* unix_seconds);
std::string format_rfc3339_utc(int64_t unix_seconds);

// The newest release the request accepts, skipping yanked ones unless pinned exactly.
// For a Digest request: the release holding a variant with that blob digest.
// Throws StatusError(KH_ERROR_NOT_FOUND) naming the request and listing the versions there are.
const Release& resolve_release(const RepoIndex& index, const VersionRequest& request);

// The build with variant key `key` among `builds`; nullptr when there is none.
const VariantEntry* find_variant(const std::vector<VariantEntry>& builds, const std::string& key);

// Where a repo's index lives inside a hub, and where a blob lives (both relative).
std::string repo_index_path(const std::string& repo);  // "repos/<org>/<name>/index.json"
std::string blob_path(const std::string& sha256);      // "blobs/sha256/<2 hex>/<64 hex>"

}  // namespace kh::registry
