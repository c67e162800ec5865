// libFuzzer target: root/<N>.root.json parsing and signature checking (every signature
// parsed and verified against the root's own keys), and index.json.sigs lists.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kh/registry/status_error.hpp"
#include "kh/registry/trust.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
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
