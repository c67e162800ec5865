// The device code a build must carry, exactly, by its variant key: what `kernels check-abi`
// requires of a library, and what the build's compiler flags produce (cmake/KhPlatform.cmake).
//   cuda smXY    SASS sm_XY + PTX compute_XY          (PTX: JIT on newer GPUs)
//   cuda smXYa   SASS sm_XYa only                     (arch-specific code has no portable PTX)
//   cuda smXYf   SASS sm_XYf + PTX compute_XY         (plain PTX: family PTX would not JIT elsewhere)
//   rocm gfxN    amdgcn code objects for gfxN, features 'any'
//   cpu          none
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kh/platform/variant_key.hpp"

namespace kh::platform {

struct DeviceCode {
  enum class Kind : uint8_t { Sass, Ptx, Amdgcn };
  Kind kind = Kind::Sass;
  std::string arch;  // "sm_90a", "compute_80", "gfx942"
  bool operator==(const DeviceCode& o) const { return kind == o.kind && arch == o.arch; }
};
const char* kind_name(DeviceCode::Kind kind);  // "sass", "ptx", "amdgcn"

std::vector<DeviceCode> required_device_code(const VariantKey& key);

// Whether a CUDA build for this arch carries PTX (what cuda_code_fit assumes).
bool cuda_build_carries_ptx(const CudaArch& arch);

// CMAKE_CUDA_ARCHITECTURES for a CUDA arch's build: "80-real;80-virtual", "90a-real",
// "100f-real;100-virtual".
std::string cmake_cuda_architectures(const CudaArch& arch);

}  // namespace kh::platform
