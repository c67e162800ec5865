// libFuzzer target: root/<N>.root.json parsing and signature checking (every signature
// parsed and verified against the root's own keys), and index.json.sigs lists. Inputs
// starting with 'D' are nested deep inside "signed" first (deep_nesting.hpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "deep_nesting.hpp"

#include "kh/registry/status_error.hpp"
#include "kh/registry/trust.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Deep mode: the nesting goes into an otherwise well-formed root, so that without the
  // depth check parsing would reach the canonical bytes (dump()).
  const std::string doc = kh_fuzz::maybe_deep(
      data, size,
      R"({"signed":{"expires":"2027-11-30T04:19:53Z","keys":{"36C603B6C8E9E5F3":{"public_key":)"
      R"("RWTz5enItgPGNg0qYvv4Db+qycIwq+mhirSRFE3JDWu1LwP0JgUDsbkQ"}},"roles":{"index":{"keyids":)"
      R"(["36C603B6C8E9E5F3"],"threshold":1},"root":{"keyids":["36C603B6C8E9E5F3"],"threshold":1}},)"
      R"("type":"root","version":1,"x":)",
      R"(},"signatures":[]})");
  std::string_view text(doc);
  try {
    kh::registry::RootMetadata root = kh::registry::parse_root(text, "fuzz");
    try {
      kh::registry::verify_root_self_signed(root, "fuzz");
    } catch (const kh::StatusError&) {
    }
    try {
      kh::registry::verify_root_update(root, root, "fuzz");
    } catch (const kh::StatusError&) {
    }
  } catch (const kh::StatusError&) {
  }
  try {
    kh::registry::parse_signature_list(text, "fuzz");
  } catch (const kh::StatusError&) {
  }
  return 0;
}
