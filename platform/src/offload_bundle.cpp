// Reading clang offload bundles; see offload_bundle.hpp.
#include "kh/platform/offload_bundle.hpp"

#include <algorithm>
#include <cstring>

namespace kh::platform {
namespace {

constexpr char kMagic[] = "__CLANG_OFFLOAD_BUNDLE__";
constexpr size_t kMagicSize = sizeof kMagic - 1;  // 24
constexpr char kCompressedMagic[] = "CCOB";

uint64_t load_u64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;  // little-endian hosts only, as the libraries themselves
}

}  // namespace

std::string OffloadBundleEntry::amdgcn_target() const {
  const size_t dashes = triple.find("--");
  if (triple.find("amdgcn") == std::string::npos || dashes == std::string::npos) return "";
  return triple.substr(dashes + 2);
}

bool read_offload_bundle(const unsigned char* b, size_t avail, OffloadBundle& out, std::string& error) {
  out = OffloadBundle{};
  if (avail >= 4 && std::memcmp(b, kCompressedMagic, 4) == 0) {
    error = "a compressed offload bundle (CCOB), which kh does not read; build without --offload-compress";
    return false;
  }
  if (avail < kMagicSize + 8 || std::memcmp(b, kMagic, kMagicSize) != 0) {
    error = "no __CLANG_OFFLOAD_BUNDLE__ magic";
    return false;
  }
  const uint64_t count = load_u64(b + kMagicSize);
  size_t h = kMagicSize + 8;
  size_t end = h;
  for (uint64_t i = 0; i < count; ++i) {
    if (avail - h < 24) {
      error = "truncated offload bundle header";
      return false;
    }
    const uint64_t off = load_u64(b + h), sz = load_u64(b + h + 8), tsz = load_u64(b + h + 16);
    h += 24;
    if (tsz > avail - h || off > avail || sz > avail - off) {
      error = "offload bundle entry " + std::to_string(i) + " overruns the bundle";
      return false;
    }
    OffloadBundleEntry e;
    e.triple.assign(reinterpret_cast<const char*>(b + h), tsz);
    e.data = b + off;
    e.size = sz;
    h += tsz;
    end = std::max<size_t>({end, h, off + sz});
    out.entries.push_back(std::move(e));
  }
  out.size = std::max(end, h);
  return true;
}

}  // namespace kh::platform
