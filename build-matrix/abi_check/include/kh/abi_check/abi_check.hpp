// ABI check of a built kernel library: what `kernels check-abi` and `kernels pack` run before a
// build may be published. It reads the ELF file itself (no libelf) and applies the rules a
// kernel library must meet for its variant key (see check_library()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kh::abi_check {

struct Policy {
  std::string variant;           // the variant key the library is built for, e.g. cuda13.0-sm80-abi1-x86_64-linux
  bool allow_libstdcxx = false;  // accept a dynamic libstdc++ (kernel libraries link it statically)
  std::string max_glibc;         // newest GLIBC_x.y the library may require; empty: no limit
};

// One piece of device code found in the library.
struct GpuCode {
  std::string kind;  // "sass" (CUDA cubin), "ptx", "amdgcn" (HIP code object)
  std::string arch;  // "sm_80", "sm_90a", "sm_100f", "compute_80", "gfx942" (target id features kept: "gfx942:xnack-")
  int code_object = 0;  // amdgcn: the AMDGPU code-object version of its ELF (4, 5, 6); 0 if not one
  bool operator==(const GpuCode& o) const { return kind == o.kind && arch == o.arch && code_object == o.code_object; }
};

struct Violation {
  std::string rule;     // exports | needed | undefined | glibc | cudart | rocm-runtime | gpu-arch | elf | variant
  std::string message;  // what was found, and what the library should do instead
};

struct UndefinedBy {
  std::string library;  // the DT_NEEDED soname a versioned reference names; "(unversioned)" otherwise
  uint64_t count = 0;
};

struct Report {
  std::string library;                  // the file's base name (never a machine path: reports are packed)
  Policy policy;
  std::vector<std::string> exports;     // defined global/weak names in .dynsym, sorted
  std::vector<std::string> needed;      // DT_NEEDED, in file order
  std::vector<UndefinedBy> undefined;   // undefined dynamic symbols per library, sorted by library
  std::string newest_glibc;             // e.g. "2.34" from .gnu.version_r; empty when none
  std::vector<GpuCode> gpu_code;        // distinct, sorted
  // ROCm libraries: the code-object version of their code objects, and the oldest HIP
  // runtime that loads them through the HIP shim (`kernels pack` records both in the manifest).
  int code_object = 0;
  std::string runtime;
  std::vector<Violation> violations;
  bool ok() const { return violations.empty(); }
};

// Checks the library at `path` against the rules for policy.variant:
//  exports    only kh_kernel_negotiate is exported (defined global/weak in .dynsym), and no
//             STB_GNU_UNIQUE symbol is defined;
//  needed     every DT_NEEDED is allowed: libc, libm, libdl, libpthread, librt, libgcc_s,
//             ld-linux; libstdc++ with allow_libstdcxx;
//  cudart     never libcudart or libcuda as DT_NEEDED (the runtime is linked statically, the
//             driver reached with dlopen);
//  rocm-runtime  never libamdhip64 as DT_NEEDED: a soname pins one ROCm release (the HIP shim
//             kh_add_hip_kernel_library links opens whichever runtime is there, 5.x to 7.x);
//  undefined  every versioned undefined symbol comes from an allowed library;
//  glibc      the newest GLIBC_ version required is at most policy.max_glibc;
//  gpu-arch   the device code is exactly what the variant names (kh/platform/device_code.hpp):
//             cuda smXY -> SASS sm_XY + PTX compute_XY, smXYa -> SASS sm_XYa only, smXYf ->
//             SASS sm_XYf + PTX compute_XY, rocm gfxN -> amdgcn gfxN only (features 'any', one
//             code-object version), cpu -> none;
//  elf        a 64-bit little-endian ELF shared object for the variant's CPU;
//  variant    the key itself is well formed.
// Never throws for a bad or unreadable file: that is an `elf` violation.
Report check_library(const std::string& path, const Policy& policy);

// The report as JSON (schema 1), the content of kh-abi-check.json in a package.
std::string report_json(const Report& report);

// Human-readable lines: "rule: message" per violation, or a one-line summary when ok.
std::string report_text(const Report& report);

// Compares GLIBC_ versions ("2.2.5" < "2.34"; "" is older than any); <0, 0, >0.
int compare_versions(const std::string& a, const std::string& b);

// Device code parsers, exposed for tests. Each appends what it recognizes and returns
// false, with `error` set, when the data is not a well-formed container.
bool parse_cuda_fatbin(const unsigned char* data, size_t size, std::vector<GpuCode>& out, std::string& error);
bool parse_offload_bundles(const unsigned char* data, size_t size, std::vector<GpuCode>& out, std::string& error);

}  // namespace kh::abi_check
