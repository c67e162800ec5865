// kh-manifest.json, the first thing in every package archive: what the package is and
// the sha256 of every file in it, so the unpacked tree can be checked file by file.
//
// { "schema": 1, "name": "kernels-community/rms-norm", "version": "1.0.0",
//   "variant": "cpu-x86_64-abi1-x86_64-linux", "abi": "1.0",
//   "glibc": "2.36",        // the glibc floor: newest GLIBC_ symbol version the library needs
//   "runtime": "5.0", "code_object": 4,   // ROCm builds: oldest HIP runtime, code-object version
//   "library": "lib/libkh_rms_norm.so",
//   "description": "...",   // optional: the package's, from kernel.json
//   "ops": [ { "name": "...", "schema": "...", "summary": "...", ... } ],   // docs: op_docs.hpp
//   "provenance": { "source": ..., "builder": ..., "inputs": ... },   // optional: provenance.hpp
//   "files": [ { "path": "lib/libkh_rms_norm.so", "sha256": "...", "size": 123 } ] }
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kh/registry/provenance.hpp"
#include "kh/registry/repo_index.hpp"

namespace kh::registry {

inline constexpr const char* kManifestName = "kh-manifest.json";
inline constexpr int kManifestSchema = 1;

struct ManifestFile {
  std::string path;  // relative, '/'-separated
  std::string sha256;
  uint64_t size = 0;
};

struct PackageManifest {
  int schema = kManifestSchema;
  std::string name, version, variant, abi, library;
  // The glibc floor, from the ABI check at pack time (`kernels pack` always records it);
  // publishing copies it into the index entry. Optional when read: packages packed before
  // the field existed lack it. Empty: no versioned glibc symbol needed, no floor.
  std::string glibc;
  // What the build needs of its GPU runtime (RepoIndex's VariantEntry has the same fields):
  // recorded by `kernels pack` from the ABI check, copied into the index at publish.
  std::string runtime;
  uint32_t code_object = 0;
  std::string description;  // the package's (kernel.json), optional
  std::vector<OpInfo> ops;  // with their docs (op_docs.hpp) where kernel.json has them
  Provenance provenance;    // where the build came from (`kernels build`); empty when not recorded
  std::vector<ManifestFile> files;  // every file but the manifest itself, sorted by path
};

// Throws StatusError(KH_ERROR_BAD_METADATA) naming the field.
PackageManifest parse_package_manifest(std::string_view json_text, std::string_view source);
std::string serialize_package_manifest(const PackageManifest& manifest);

// Lists files under dir (relative paths, sorted), hashing each: to write a manifest.
std::vector<ManifestFile> hash_tree(const std::string& dir);

}  // namespace kh::registry
