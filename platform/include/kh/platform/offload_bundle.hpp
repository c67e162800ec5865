// Clang offload bundles, the container clang puts HIP device code in (a library's
// .hip_fatbin section holds one per translation unit, each aligned, padded with zeros):
//   "__CLANG_OFFLOAD_BUNDLE__", u64 entry count, then per entry u64 offset (from the bundle's
//   start), u64 size, u64 triple size, the triple ("hipv4-amdgcn-amd-amdhsa--gfx942",
//   "host-x86_64-unknown-linux-gnu-"); the entries' bytes follow.
// Read by `kernels check-abi` (which archs a library carries) and by the kernel libraries'
// HIP shim (the code object to hand the runtime). Kept free of the C++ library's allocating
// parts beyond std::string, so the shim can compile it into every HIP kernel library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kh::platform {

struct OffloadBundleEntry {
  std::string triple;
  const unsigned char* data = nullptr;  // inside the bundle's bytes
  uint64_t size = 0;
  // For amdgcn entries: the target id after "--" ("gfx942", "gfx942:xnack-"); else empty.
  std::string amdgcn_target() const;
};

struct OffloadBundle {
  std::vector<OffloadBundleEntry> entries;
  size_t size = 0;  // bytes from the magic to the end of the last entry's data
};

// Reads the bundle at `data`, of which `available` bytes may be read. Returns false, with
// `error` set, when the bytes are not an uncompressed bundle that fits.
bool read_offload_bundle(const unsigned char* data, size_t available, OffloadBundle& out, std::string& error);

}  // namespace kh::platform
