// kh's build targets (the kit's build-matrix/matrix.json, the one target table) and what each
// needs on this machine: `kernels targets`, and `kernels build` choosing what it can build.
#pragma once

#include <string>
#include <vector>

namespace kh::author {

struct Requirement {
  std::string program;  // "nvcc", "clang-19"
  std::string package;  // the Debian package that installs it ("" for nvcc: the CUDA toolkit)
};

struct Target {
  std::string key;        // "cuda-sm90a"
  std::string backend;    // cpu, cuda, rocm
  std::string arch;       // as variant keys spell it: x86_64_v3, sm90a, gfx942
  std::string toolchain;  // what builds it, in words
  std::vector<Requirement> requires;
  // A package folder's backend for this target: cpu, cuda or hip (the matrix says rocm).
  std::string package_backend() const { return backend == "rocm" ? "hip" : backend; }
};

struct TargetTable {
  std::string max_glibc;  // the newest GLIBC_ a published library may need
  std::vector<Target> targets;
  // The target of `key`, or StatusError(KH_ERROR_INVALID_ARGUMENT) listing the keys there are.
  const Target& find(const std::string& key) const;
};

// Reads the table; StatusError(KH_ERROR_BAD_METADATA) naming the field on a malformed one.
TargetTable read_target_table(const std::string& matrix_json_path);

// What this machine has for a target.
struct ToolchainStatus {
  bool present = false;
  // When absent: the first missing program with what installs it, e.g.
  // "clang-19 (apt-get install clang-19)" or "nvcc (the CUDA toolkit: ...)".
  std::string missing;
  // The variant key a build here makes ("cuda13.0-sm90a-abi1-x86_64-linux"); for a GPU target
  // whose compiler is absent the version is left as a placeholder ("cuda<version>-sm90a-...").
  std::string variant_key;
  std::string compiler_version;  // nvcc's or HIP's major.minor, when found
};
ToolchainStatus probe_toolchain(const Target& target);

// The host's baseline CPU target ("cpu-x86_64" on x86-64; what `kernels build` builds by default).
std::string host_cpu_target();

}  // namespace kh::author
