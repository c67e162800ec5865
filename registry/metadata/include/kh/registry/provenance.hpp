// Where a build came from: its source (repository, commit, folder), its builder (kh, the
// target, the compilers) and a digest of its inputs. `kernels build` records it in the
// package's kh-manifest.json, `kernels publish` copies it into the build's entry of the signed
// index, `kernels info --provenance` shows it and `kernels build --verify` rebuilds from it
// (docs/authoring.md, "Provenance"):
//
//   "provenance": {
//     "source": {"repository": "https://github.com/acme/scale", "commit": "<40 hex>",
//                "path": "", "dirty": false},
//     "builder": {"kh": "0.1.0", "target": "cuda-sm90a",
//                 "tools": {"c++": "GNU 12.2.0", "cuda": "NVIDIA 13.0.88"}},
//     "inputs": "sha256:<64 hex>" }
//
// "source" is absent for a build made outside a git checkout. Hub metadata is hostile: every
// field is checked and bounded when read.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace kh::registry {

inline constexpr size_t kMaxProvenanceTextBytes = 1024;
inline constexpr size_t kMaxProvenanceTools = 16;

struct Provenance {
  // The source. Empty repository and commit: not recorded (a build outside a git checkout).
  std::string repository;  // as the builder's checkout names its origin (or KH_SOURCE_REPOSITORY)
  std::string commit;      // the checked-out commit: 40 (SHA-1) or 64 (SHA-256) lowercase hex
  std::string path;        // the package's folder inside the repository, "" for its root
  bool dirty = false;      // the checkout had changes the commit does not hold
  // The builder.
  std::string kh_version;                   // of the author kit that built it
  std::string target;                       // the kh target: "cpu-x86_64", "cuda-sm90a", ...
  std::map<std::string, std::string> tools;  // "c++", "cuda", "hip" -> "<id> <version>"
  // sha256 of the build's inputs (the package's files, the target, the kit), 64 hex.
  std::string inputs;

  bool empty() const { return kh_version.empty(); }
  bool has_source() const { return !commit.empty(); }
};

// Reads the "provenance" object at `path` (e.g. "provenance" or
// "releases.1.0.0.variants.x.provenance"). Throws StatusError(KH_ERROR_BAD_METADATA) naming
// the field and `source`.
Provenance parse_provenance(const nlohmann::json& obj, const std::string& path, std::string_view source);
nlohmann::ordered_json provenance_json(const Provenance& p);

// "<40 or 64 lowercase hex>": a git commit id.
bool is_git_commit_id(std::string_view text);

}  // namespace kh::registry
