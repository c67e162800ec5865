// The device code a variant must carry; see device_code.hpp.
#include "kh/platform/device_code.hpp"

namespace kh::platform {

const char* kind_name(DeviceCode::Kind kind) {
  switch (kind) {
    case DeviceCode::Kind::Sass: return "sass";
    case DeviceCode::Kind::Ptx: return "ptx";
    case DeviceCode::Kind::Amdgcn: return "amdgcn";
  }
  return "?";
}

bool cuda_build_carries_ptx(const CudaArch& arch) { return arch.kind != CudaArch::Kind::ArchSpecific; }

namespace {
// The PTX a CUDA build embeds: plain compute_XY (a family's PTX would JIT only on the family,
// which its SASS already covers).
CudaArch portable_ptx_arch(const CudaArch& arch) { return CudaArch{arch.major, arch.minor, CudaArch::Kind::Plain}; }
}  // namespace

std::vector<DeviceCode> required_device_code(const VariantKey& key) {
  if (key.cuda) {
    std::vector<DeviceCode> code = {{DeviceCode::Kind::Sass, sass_name(*key.cuda)}};
    if (cuda_build_carries_ptx(*key.cuda)) code.push_back({DeviceCode::Kind::Ptx, ptx_name(portable_ptx_arch(*key.cuda))});
    return code;
  }
  if (key.amd) return {{DeviceCode::Kind::Amdgcn, key.amd->processor}};
  return {};
}

std::string cmake_cuda_architectures(const CudaArch& arch) {
  std::string list = digits(arch) + "-real";
  if (cuda_build_carries_ptx(arch)) list += ";" + digits(portable_ptx_arch(arch)) + "-virtual";
  return list;
}

}  // namespace kh::platform
