// Variant key parsing with the grammar of grammar.hpp; see variant_key.hpp.
#include "kh/platform/variant_key.hpp"

#include <regex>

#include "kh/platform/cpu_isa.hpp"
#include "kh/platform/grammar.hpp"

namespace kh::platform {
namespace {

const std::regex& compiled(const char* pattern) {
  // One compiled copy per pattern, built on first use (std::regex construction is slow).
  struct Cache {
    const char* pattern;
    std::regex re;
  };
  static const Cache caches[] = {{grammar::kVariantKey, std::regex(grammar::kVariantKey)},
                                 {grammar::kCpuArch, std::regex(grammar::kCpuArch)},
                                 {grammar::kCudaArch, std::regex(grammar::kCudaArch)},
                                 {grammar::kRocmArch, std::regex(grammar::kRocmArch)}};
  for (const Cache& c : caches)
    if (c.pattern == pattern) return c.re;
  static const std::regex never("$^");
  return never;
}

bool matches(const char* pattern, const std::string& text) { return std::regex_match(text, compiled(pattern)); }

VariantKeyParse refuse(std::string why) { return VariantKeyParse{std::nullopt, std::move(why)}; }

}  // namespace

MajorMinor VariantKey::version() const {
  const auto v = parse_major_minor(backend_version);
  return v ? *v : MajorMinor{};
}

VariantKeyParse parse_variant_key(std::string_view text_view) {
  const std::string text(text_view);
  std::smatch m;
  if (text.size() > 128 || !std::regex_match(text, m, compiled(grammar::kVariantKey))) {
    // Say which part is wrong where the shape alone tells.
    if (text.rfind("cuda-", 0) == 0 || text.rfind("rocm-", 0) == 0)
      return refuse("'" + text + "' lacks the backend version (cuda13.0-..., rocm6.2-...)");
    return refuse("'" + text + "' is not a variant key {backend}{version}-{arch}-abi{N}-{cpu}-{os} with backend cpu, "
                  "cuda or rocm, e.g. cuda13.0-sm90a-abi1-x86_64-linux");
  }
  VariantKey key;
  key.backend = *parse_backend(m[1].str());
  key.backend_version = m[2].str();
  key.arch = m[3].str();
  key.cpu = m[5].str();
  key.os = m[6].str();
  const std::string abi = m[4].str();
  if (abi.size() > 6) return refuse("'" + text + "' names an ABI major of more than 6 digits");
  key.abi_major = static_cast<uint32_t>(std::stoul(abi));
  const bool cpu_backend = key.backend == Backend::Cpu;
  if (cpu_backend != key.backend_version.empty())
    return refuse("'" + text + "': " + (cpu_backend ? "a cpu key carries no version" : "a GPU key needs its backend version"));
  if (!cpu_backend && !parse_major_minor(key.backend_version))
    return refuse("'" + text + "': backend version '" + key.backend_version + "' is not major.minor");
  switch (key.backend) {
    case Backend::Cpu:
      if (!matches(grammar::kCpuArch, key.arch) || !is_cpu_isa_for(key.arch, key.cpu))
        return refuse("'" + text + "': '" + key.arch + "' is not an ISA level of " + key.cpu +
                      (key.cpu == "x86_64" ? " (x86_64, x86_64_v2, x86_64_v3, x86_64_v4)" : ""));
      key.x86_level = x86_isa_level(key.arch);
      break;
    case Backend::Cuda:
      if (!matches(grammar::kCudaArch, key.arch) || !(key.cuda = parse_cuda_arch(key.arch)) || !suffix_exists(*key.cuda))
        return refuse("'" + text + "': '" + key.arch + "' is not a CUDA arch sm<major><minor>[a|f] ('a' from sm90, 'f' from sm100)");
      break;
    case Backend::Rocm:
      if (!matches(grammar::kRocmArch, key.arch) || !(key.amd = parse_amd_target(key.arch)))
        return refuse("'" + text + "': '" + key.arch + "' is not a gfx processor such as gfx942");
      break;
  }
  return VariantKeyParse{std::move(key), ""};
}

std::string to_string(const VariantKey& key) {
  return std::string(backend_name(key.backend)) + key.backend_version + "-" + key.arch + "-abi" +
         std::to_string(key.abi_major) + "-" + key.cpu + "-" + key.os;
}

}  // namespace kh::platform
