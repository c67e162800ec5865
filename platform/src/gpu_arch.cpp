// Parsing and spelling GPU archs; see gpu_arch.hpp.
#include "kh/platform/gpu_arch.hpp"

namespace kh::platform {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

const char* suffix(CudaArch::Kind kind) {
  switch (kind) {
    case CudaArch::Kind::ArchSpecific: return "a";
    case CudaArch::Kind::Family: return "f";
    case CudaArch::Kind::Plain: break;
  }
  return "";
}

}  // namespace

std::optional<CudaArch> parse_cuda_arch(std::string_view text) {
  if (text.substr(0, 3) == "sm_") {
    text.remove_prefix(3);
  } else if (text.substr(0, 2) == "sm") {
    text.remove_prefix(2);
  } else {
    return std::nullopt;
  }
  CudaArch arch;
  if (!text.empty() && (text.back() == 'a' || text.back() == 'f')) {
    arch.kind = text.back() == 'a' ? CudaArch::Kind::ArchSpecific : CudaArch::Kind::Family;
    text.remove_suffix(1);
  }
  // Two or three digits: the last is the minor (7.5 .. 12.1); no leading zero.
  if (text.size() < 2 || text.size() > 3 || !all_digits(text) || text[0] == '0') return std::nullopt;
  arch.minor = text.back() - '0';
  arch.major = 0;
  for (char c : text.substr(0, text.size() - 1)) arch.major = arch.major * 10 + (c - '0');
  return arch;
}

std::string digits(const CudaArch& arch) {
  return std::to_string(arch.major) + std::to_string(arch.minor) + suffix(arch.kind);
}
std::string key_name(const CudaArch& arch) { return "sm" + digits(arch); }
std::string sass_name(const CudaArch& arch) { return "sm_" + digits(arch); }
std::string ptx_name(const CudaArch& arch) { return "compute_" + digits(arch); }
std::string capability_text(int major, int minor) { return std::to_string(major) + "." + std::to_string(minor); }

bool suffix_exists(const CudaArch& arch) {
  switch (arch.kind) {
    case CudaArch::Kind::ArchSpecific: return arch.major >= 9;
    case CudaArch::Kind::Family: return arch.major >= 10;
    case CudaArch::Kind::Plain: return true;
  }
  return false;
}

std::optional<AmdTarget> parse_amd_target(std::string_view text) {
  const size_t colon = text.find(':');
  std::string_view processor = text.substr(0, colon);
  if (processor.size() < 6 || processor.substr(0, 3) != "gfx") return std::nullopt;
  const std::string_view major = processor.substr(3, processor.size() - 5);
  const int minor = hex_digit(processor[processor.size() - 2]);
  const int stepping = hex_digit(processor[processor.size() - 1]);
  if (!all_digits(major) || major.size() > 2 || major[0] == '0' || minor < 0 || stepping < 0) return std::nullopt;
  AmdTarget t;
  t.processor = std::string(processor);
  t.major = major.size() == 1 ? major[0] - '0' : (major[0] - '0') * 10 + (major[1] - '0');
  t.minor = minor;
  t.stepping = stepping;
  bool seen_sramecc = false, seen_xnack = false;
  std::string_view rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  while (colon != std::string_view::npos && !rest.empty()) {
    const size_t next = rest.find(':');
    const std::string_view feature = rest.substr(0, next);
    if (feature.size() < 2) return std::nullopt;
    const char sign = feature.back();
    if (sign != '+' && sign != '-') return std::nullopt;
    const AmdFeature value = sign == '+' ? AmdFeature::On : AmdFeature::Off;
    const std::string_view name = feature.substr(0, feature.size() - 1);
    if (name == "sramecc" && !seen_sramecc) {
      t.sramecc = value;
      seen_sramecc = true;
    } else if (name == "xnack" && !seen_xnack) {
      t.xnack = value;
      seen_xnack = true;
    } else {
      return std::nullopt;
    }
    if (next == std::string_view::npos) break;
    rest = rest.substr(next + 1);
    if (rest.empty()) return std::nullopt;  // a trailing ':'
  }
  if (colon != std::string_view::npos && !seen_sramecc && !seen_xnack) return std::nullopt;
  return t;
}

std::string target_id(const AmdTarget& t) {
  std::string id = t.processor;
  if (t.sramecc != AmdFeature::Any) id += t.sramecc == AmdFeature::On ? ":sramecc+" : ":sramecc-";
  if (t.xnack != AmdFeature::Any) id += t.xnack == AmdFeature::On ? ":xnack+" : ":xnack-";
  return id;
}

std::optional<AmdTarget> amd_target_from_version(long version) {
  static const char kHex[] = "0123456789abcdef";
  const long major = version / 10000, minor = (version / 100) % 100, stepping = version % 100;
  if (version <= 0 || major < 1 || major > 99 || minor > 15 || stepping > 15) return std::nullopt;
  std::string name = "gfx" + std::to_string(major);
  name += kHex[minor];
  name += kHex[stepping];
  return parse_amd_target(name);
}

}  // namespace kh::platform
