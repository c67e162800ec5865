// libFuzzer target: package specs ("org/name@request"), version requests and versions.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kh/registry/package_spec.hpp"
#include "kh/registry/semver.hpp"
#include "kh/registry/status_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    kh::registry::PackageSpec spec = kh::registry::parse_package_spec(text);
    if (!kh::registry::is_valid_repo_part(spec.org) || !kh::registry::is_valid_repo_part(spec.name)) __builtin_trap();
  } catch (const kh::StatusError&) {
  }
  try {
    kh::registry::parse_version_request(text);
  } catch (const kh::StatusError&) {
  }
  if (auto v = kh::registry::parse_version(text)) {
    auto again = kh::registry::parse_version(kh::registry::to_string(*v));
    if (!again || kh::registry::compare_versions(*v, *again) != 0) __builtin_trap();
  }
  return 0;
}
