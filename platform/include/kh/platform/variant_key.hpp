// Variant keys name one build of a package:
//   {backend}{backend version}-{arch}-abi{N}-{cpu}-{os}
//   cuda13.0-sm90a-abi1-x86_64-linux, cuda13.0-sm100f-abi1-x86_64-linux,
//   rocm5.2-gfx942-abi1-x86_64-linux, cpu-x86_64_v3-abi1-x86_64-linux
// The grammar is written once, as regular expressions (grammar.hpp): this parser uses them,
// and cmake/KhPlatform.cmake (generated from them) gives the same ones to CMake.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kh/platform/backend.hpp"
#include "kh/platform/gpu_arch.hpp"
#include "kh/platform/versions.hpp"

namespace kh::platform {

struct VariantKey {
  Backend backend = Backend::Cpu;
  std::string backend_version;  // "13.0", "6.2"; empty for cpu
  std::string arch;             // "sm90a", "gfx942", "x86_64_v3"
  uint32_t abi_major = 0;
  std::string cpu;  // "x86_64", "aarch64"
  std::string os;   // "linux"

  // The arch, typed by backend (exactly one is set): CUDA arch, AMD processor, or CPU level
  // (x86-64 level 1-4; 0 for CPUs without levels, whose arch is the CPU's name).
  std::optional<CudaArch> cuda;
  std::optional<AmdTarget> amd;
  int x86_level = 0;
  MajorMinor version() const;  // backend_version as numbers ({0, 0} for cpu)
};

struct VariantKeyParse {
  std::optional<VariantKey> key;
  std::string error;  // why the text is not a key, when key is empty
};

// Checks the whole key: its shape, the backend, the version's form, that the arch is one
// its backend names (a CUDA arch for cuda, a gfx processor without features for rocm, an ISA
// level of the key's CPU for cpu), the ABI number.
VariantKeyParse parse_variant_key(std::string_view text);
std::string to_string(const VariantKey& key);

}  // namespace kh::platform
