// libFuzzer target: repos/<org>/<name>/index.json parsing, then re-serialisation and a
// re-parse (what parses must round-trip) and resolution of a request against it. Inputs
// starting with 'D' are nested deep inside a member first (deep_nesting.hpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "deep_nesting.hpp"

#include "kh/registry/repo_index.hpp"
#include "kh/registry/status_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string doc = kh_fuzz::maybe_deep(data, size, R"({"schema":1,"repo":"a/b","version":1,"x":)", "}");
  std::string_view text(doc);
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
