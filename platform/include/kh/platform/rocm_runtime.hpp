// The HIP runtime as kh reaches it at run time: the sonames tried with dlopen (newest
// first; an unversioned development link last), and which runtime loads which AMDGPU
// code-object version. Shared by the loader's probe and the kernel libraries' HIP shim, so
// both find the same runtime.
#pragma once

#include <optional>

#include "kh/platform/versions.hpp"

namespace kh::platform {

inline constexpr const char* kHipRuntimeSonames[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5",
                                                     "libamdhip64.so"};
// The oldest HIP runtime a shim-built library can use: the oldest soname the shim opens.
inline constexpr MajorMinor kOldestShimRuntime{5, 0};

// The AMDGPU code-object version of an ELF's e_ident[EI_ABIVERSION] for ELFOSABI_AMDGPU_HSA:
// 2 -> 4, 3 -> 5, 4 -> 6; nullopt for others (v2 and v3 are no longer produced or loaded).
std::optional<int> code_object_version_of_abi_version(int elf_abi_version);
// The oldest ROCm runtime that loads a code-object version; nullopt for unknown versions.
// v4: ROCm 4.0; v5: taken as 6.0 (the first release that made it the default; some 5.x
// load it too); v6: 6.3 (docs/abi.md gives the sources).
std::optional<MajorMinor> oldest_runtime_for_code_object(int version);

}  // namespace kh::platform
