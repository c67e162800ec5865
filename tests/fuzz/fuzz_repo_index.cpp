// libFuzzer target: repos/<org>/<name>/index.json parsing, then re-serialisation and a
// re-parse (what parses must round-trip) and resolution of a request against it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kh/registry/repo_index.hpp"
#include "kh/registry/status_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    kh::registry::RepoIndex index = kh::registry::parse_repo_index(text, "fuzz");
    kh::registry::RepoIndex again =
        kh::registry::parse_repo_index(kh::registry::serialize_repo_index(index), "fuzz (round trip)");
    if (again.releases.size() != index.releases.size() || again.version != index.version) __builtin_trap();
    try {
      kh::registry::resolve_release(index, kh::registry::parse_version_request("1"));
    } catch (const kh::StatusError&) {
    }
  } catch (const kh::StatusError&) {
  }
  return 0;
}
