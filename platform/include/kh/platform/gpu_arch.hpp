// GPU architectures, as variant keys, compilers and drivers spell them.
//
// CUDA: compute capability major.minor, plain or with a suffix (CUDA 12.0+ 'a', 12.9+ 'f'):
//   "sm90" / "sm_90"   plain: SASS runs on 9.x with minor >= 0; PTX JIT-compiles on anything newer
//   "sm90a"            arch-specific features: runs on 9.0 only
//   "sm100f"           family-specific features: runs on 10.x with minor >= 0 (10.0 and 10.3)
// The last digit is the minor: sm75 = 7.5, sm100 = 10.0, sm121 = 12.1.
//
// ROCm: a gfx processor with optional target features (LLVM's target id):
//   "gfx942", "gfx90a:xnack-", "gfx942:sramecc+:xnack-"
// "gfx" + major (decimal) + minor + stepping (one hex digit each): gfx90a = 9.0.10, gfx1100 = 11.0.0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kh::platform {

struct CudaArch {
  enum class Kind : uint8_t { Plain, ArchSpecific, Family };
  int major = 0, minor = 0;
  Kind kind = Kind::Plain;
  bool operator==(const CudaArch& o) const { return major == o.major && minor == o.minor && kind == o.kind; }
};

// "sm90a", "sm_90a", "sm100f", "sm121" (with or without the underscore); nullopt otherwise.
std::optional<CudaArch> parse_cuda_arch(std::string_view text);
std::string key_name(const CudaArch& arch);   // "sm100f"
std::string sass_name(const CudaArch& arch);  // "sm_100f"
std::string ptx_name(const CudaArch& arch);   // "compute_100f"
std::string digits(const CudaArch& arch);     // "100f": nvcc's and CMake's spelling without the prefix
std::string capability_text(int major, int minor);  // "10.3"

// Whether nvcc accepts the suffix on this arch: 'a' from 9.0, 'f' from 10.0.
bool suffix_exists(const CudaArch& arch);

enum class AmdFeature : uint8_t { Any, On, Off };

struct AmdTarget {
  std::string processor;  // "gfx942"
  int major = 0, minor = 0, stepping = 0;
  AmdFeature sramecc = AmdFeature::Any, xnack = AmdFeature::Any;
};

// "gfx942", "gfx942:sramecc+:xnack-" (features in any order, each at most once).
std::optional<AmdTarget> parse_amd_target(std::string_view text);
std::string target_id(const AmdTarget& target);  // "gfx942:sramecc+:xnack-", features only when set
// The KFD's gfx_target_version (major * 10000 + minor * 100 + stepping, e.g. 90402) -> gfx942.
std::optional<AmdTarget> amd_target_from_version(long gfx_target_version);

}  // namespace kh::platform
