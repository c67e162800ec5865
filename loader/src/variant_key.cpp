// Variant key parsing; see variant_key.hpp.
#include "variant_key.hpp"

#include <cctype>
#include <vector>

namespace kh::loader {
namespace {

std::vector<std::string> split_dashes(std::string_view s) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t dash = s.find('-', start);
    parts.emplace_back(s.substr(start, dash == std::string_view::npos ? std::string_view::npos : dash - start));
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  return parts;
}

bool is_token(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_' || c == '.'))
      return false;
  return true;
}

}  // namespace

std::optional<VariantKey> parse_variant_key(std::string_view text) {
  const std::vector<std::string> parts = split_dashes(text);
  if (parts.size() != 5) return std::nullopt;
  for (const auto& p : parts)
    if (!is_token(p)) return std::nullopt;
  VariantKey key;
  const std::string& backend = parts[0];
  size_t letters = 0;
  while (letters < backend.size() && std::islower(static_cast<unsigned char>(backend[letters]))) ++letters;
  key.backend = backend.substr(0, letters);
  key.backend_version = backend.substr(letters);
  if (key.backend.empty()) return std::nullopt;
  if (key.backend == "cpu" ? !key.backend_version.empty() : key.backend_version.empty()) return std::nullopt;
  key.arch = parts[1];
  if (parts[2].size() < 4 || parts[2].compare(0, 3, "abi") != 0) return std::nullopt;
  uint32_t abi = 0;
  for (size_t i = 3; i < parts[2].size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(parts[2][i])) || abi > 100000) return std::nullopt;
    abi = abi * 10 + static_cast<uint32_t>(parts[2][i] - '0');
  }
  key.abi_major = abi;
  key.cpu = parts[3];
  key.os = parts[4];
  return key;
}

std::string to_string(const VariantKey& key) {
  return key.backend + key.backend_version + "-" + key.arch + "-abi" + std::to_string(key.abi_major) + "-" + key.cpu +
         "-" + key.os;
}

}  // namespace kh::loader
