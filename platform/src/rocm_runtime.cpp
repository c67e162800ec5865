// Code-object versions and the runtimes that load them; see rocm_runtime.hpp.
#include "kh/platform/rocm_runtime.hpp"

namespace kh::platform {

std::optional<int> code_object_version_of_abi_version(int elf_abi_version) {
  // ELFABIVERSION_AMDGPU_HSA_V4 = 2, _V5 = 3, _V6 = 4 (LLVM's AMDGPUUsage).
  if (elf_abi_version >= 2 && elf_abi_version <= 4) return elf_abi_version + 2;
  return std::nullopt;
}

std::optional<MajorMinor> oldest_runtime_for_code_object(int version) {
  switch (version) {
    case 4: return MajorMinor{4, 0};
    case 5: return MajorMinor{6, 0};
    case 6: return MajorMinor{6, 3};
    default: return std::nullopt;
  }
}

}  // namespace kh::platform
