// Device code inside a kernel library: CUDA fatbin containers (.nv_fatbin) and clang offload
// bundles (.hip_fatbin), read far enough to list which archs they carry.
#include <algorithm>
#include <cstring>
#include <string>

#include "kh/abi_check/abi_check.hpp"
#include "kh/platform/offload_bundle.hpp"
#include "kh/platform/rocm_runtime.hpp"

namespace kh::abi_check {
namespace {

template <class T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;  // little-endian hosts only, as the libraries themselves
}

// The fatbin container (what nvcc's fatbinary writes; layout as cuobjdump reads it):
//   header: u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries
//   entry:  u16 kind (1 PTX, 2 ELF/SASS), u16 ?, u32 header size, u64 payload size,
//           u32 compressed size, u32 ?, u16 minor, u16 major, u32 arch (e.g. 80, 90),
//           u32 name offset, u32 name size, u64 flags, ...
// Flag 0x100000 marks arch-specific ('a') code: sm_90a, compute_90a (measured with nvcc
// 13.0: the only byte that differs between -gencode code=sm_90 and code=sm_90a); flag
// 0x200000 family-specific ('f') code: sm_100f, compute_100f (measured the same way).
constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr uint16_t kFatbinKindPtx = 1;
constexpr uint16_t kFatbinKindElf = 2;
constexpr uint64_t kFatbinFlagArchSpecific = 0x100000u;
constexpr uint64_t kFatbinFlagFamilySpecific = 0x200000u;
constexpr size_t kFatbinHeaderSize = 16;
constexpr size_t kFatbinEntryMinSize = 0x30;


// The code-object version of an AMDGPU HSA ELF (e_ident: EI_OSABI 64, EI_ABIVERSION); 0 if
// the bytes are not one.
int amdgpu_code_object_version(const unsigned char* p, size_t n) {
  constexpr size_t kEiOsAbi = 7, kEiAbiVersion = 8;
  constexpr unsigned char kElfOsAbiAmdgpuHsa = 64;
  if (n < 16 || std::memcmp(p, "\x7f" "ELF", 4) != 0 || p[kEiOsAbi] != kElfOsAbiAmdgpuHsa) return 0;
  return platform::code_object_version_of_abi_version(p[kEiAbiVersion]).value_or(0);
}

bool all_zero(const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

}  // namespace

bool parse_cuda_fatbin(const unsigned char* data, size_t size, std::vector<GpuCode>& out, std::string& error) {
  size_t pos = 0;
  int containers = 0;
  while (pos < size) {
    // The linker pads containers to their alignment with zeros.
    if (data[pos] == 0 && all_zero(data + pos, std::min<size_t>(size - pos, 8))) {
      pos += 8 - (pos % 8);
      continue;
    }
    if (size - pos < kFatbinHeaderSize || load<uint32_t>(data + pos) != kFatbinMagic) {
      error = "no fatbin magic 0xBA55ED50 at offset " + std::to_string(pos) + " of .nv_fatbin";
      return false;
    }
    const uint16_t header_size = load<uint16_t>(data + pos + 6);
    const uint64_t entries_size = load<uint64_t>(data + pos + 8);
    if (header_size < kFatbinHeaderSize || header_size > size - pos || entries_size > size - pos - header_size) {
      error = "fatbin container at offset " + std::to_string(pos) + " overruns .nv_fatbin";
      return false;
    }
    size_t e = pos + header_size;
    const size_t end = e + entries_size;
    while (e < end) {
      if (end - e < kFatbinEntryMinSize) {
        error = "truncated fatbin entry at offset " + std::to_string(e);
        return false;
      }
      const uint16_t kind = load<uint16_t>(data + e);
      const uint32_t entry_header = load<uint32_t>(data + e + 4);
      const uint64_t payload = load<uint64_t>(data + e + 8);
      const uint32_t arch = load<uint32_t>(data + e + 0x1c);
      const uint64_t flags = load<uint64_t>(data + e + 0x28);
      if (entry_header < kFatbinEntryMinSize || entry_header > end - e || payload > end - e - entry_header) {
        error = "fatbin entry at offset " + std::to_string(e) + " overruns its container";
        return false;
      }
      const std::string sm = std::to_string(arch) + ((flags & kFatbinFlagArchSpecific)     ? "a"
                                                     : (flags & kFatbinFlagFamilySpecific) ? "f"
                                                                                           : "");
      if (kind == kFatbinKindElf)
        out.push_back({"sass", "sm_" + sm});
      else if (kind == kFatbinKindPtx)
        out.push_back({"ptx", "compute_" + sm});
      else
        out.push_back({"unknown-kind-" + std::to_string(kind), "sm_" + sm});
      e += entry_header + payload;
    }
    pos = end;
    ++containers;
  }
  if (containers == 0) {
    error = ".nv_fatbin holds no fatbin container";
    return false;
  }
  return true;
}

// The .hip_fatbin section: one clang offload bundle per translation unit (the platform
// vocabulary reads each, kh/platform/offload_bundle.hpp), aligned with zero padding.
bool parse_offload_bundles(const unsigned char* data, size_t size, std::vector<GpuCode>& out, std::string& error) {
  size_t pos = 0;
  int bundles = 0;
  while (pos < size) {
    if (data[pos] == 0) {
      ++pos;
      continue;
    }
    platform::OffloadBundle bundle;
    std::string why;
    if (!platform::read_offload_bundle(data + pos, size - pos, bundle, why)) {
      error = why + " at offset " + std::to_string(pos) + " of .hip_fatbin";
      return false;
    }
    for (const platform::OffloadBundleEntry& e : bundle.entries) {
      if (e.triple.rfind("host-", 0) == 0) continue;
      const std::string target = e.amdgcn_target();
      if (!target.empty())
        out.push_back({"amdgcn", target, amdgpu_code_object_version(e.data, e.size)});
      else
        out.push_back({"offload", e.triple});
    }
    pos += bundle.size;
    ++bundles;
  }
  if (bundles == 0) {
    error = ".hip_fatbin holds no offload bundle";
    return false;
  }
  return true;
}

}  // namespace kh::abi_check
