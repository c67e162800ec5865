// libFuzzer target: minisign signature, public key and secret key files, and base64.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kh/registry/minisign.hpp"
#include "kh/registry/status_error.hpp"

namespace ms = kh::registry::minisign;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    ms::Signature sig = ms::parse_signature(text, "fuzz");
    ms::PublicKey pk;
    pk.key_id = sig.key_id;
    try {
      ms::verify(pk, sig, text, "fuzz");  // an all-zero key: must fail cleanly
    } catch (const kh::StatusError&) {
    }
  } catch (const kh::StatusError&) {
  }
  try {
    ms::PublicKey pk = ms::parse_public_key(text, "fuzz");
    if (!(ms::parse_public_key(pk.file_text(), "again") == pk)) __builtin_trap();
  } catch (const kh::StatusError&) {
  }
  try {
    ms::parse_secret_key(text, "fuzz");
  } catch (const kh::StatusError&) {
  }
  std::string decoded;
  if (ms::base64_decode(text, &decoded) && ms::base64_encode(decoded) != text) __builtin_trap();  // canonical
  return 0;
}
