// Variant keys name one build of a package:
//   {backend}{backend version}-{arch}-abi{N}-{cpu}-{os}
//   cuda13.0-sm90a-abi1-x86_64-linux, rocm6.2-gfx942-abi1-x86_64-linux,
//   cpu-x86_64_v3-abi1-x86_64-linux (for cpu, arch is the ISA level)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kh::loader {

struct VariantKey {
  std::string backend;          // "cpu", "cuda", "rocm"
  std::string backend_version;  // "13.0", "6.2"; empty for cpu
  std::string arch;             // "sm90a", "gfx942", "x86_64_v3"
  uint32_t abi_major = 0;
  std::string cpu;  // "x86_64", "aarch64"
  std::string os;   // "linux"
};

// nullopt when the text is not a well-formed key.
std::optional<VariantKey> parse_variant_key(std::string_view key);
std::string to_string(const VariantKey& key);

}  // namespace kh::loader
