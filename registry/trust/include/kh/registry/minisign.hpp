// minisign-compatible Ed25519 keys and signatures (https://jedisct1.github.io/minisign/),
// so that CI may sign with the stock `minisign` tool and users may verify with it.
//
//   public key   "untrusted comment: <text>\n" + base64("Ed" || key id[8] || ed25519 pk[32])
//   secret key   "untrusted comment: <text>\n" + base64(158 bytes): "Ed", kdf "\0\0"
//                (unencrypted; "Sc" = scrypt-encrypted, refused), "B2", salt[32],
//                opslimit[8], memlimit[8], key id[8], seed[32] || pk[32], checksum[32] =
//                BLAKE2b-256("Ed" || key id || seed || pk) (all zero from minisign 0.11 -W)
//   signature    "untrusted comment: <text>\n"
//                base64("ED" || key id[8] || Ed25519(BLAKE2b-512(message))[64])
//                "trusted comment: <text>\n"
//                base64(Ed25519(signature[64] || trusted comment text)[64])
// The legacy "Ed" signature (over the raw message) is refused. Only the second and fourth
// lines are authenticated; the "untrusted comment" is never shown as if it were trusted.
// Every parse error is a StatusError(KH_ERROR_SIGNATURE) that names the source.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kh::registry::minisign {

using KeyId = std::array<uint8_t, 8>;

// minisign's rendering of a key id: the 8 bytes as a little-endian integer, 16 uppercase
// hex digits (what `minisign -G` prints and puts in its public key's comment).
std::string key_id_hex(const KeyId& id);

struct PublicKey {
  KeyId key_id{};
  std::array<uint8_t, 32> key{};
  std::string key_id_hex() const { return minisign::key_id_hex(key_id); }
  // The base64 line alone ("RWQ..."), as `minisign -P` takes it.
  std::string base64() const;
  // A whole .pub file: comment line + base64 line + "\n".
  std::string file_text() const;
  bool operator==(const PublicKey& o) const { return key_id == o.key_id && key == o.key; }
};

class SecretKey {
 public:
  SecretKey() = default;
  SecretKey(const SecretKey&) = default;
  SecretKey& operator=(const SecretKey&) = default;
  ~SecretKey();
  KeyId key_id{};
  std::array<uint8_t, 32> seed{};  // the Ed25519 private key
  std::array<uint8_t, 32> public_key_bytes{};
  PublicKey public_key() const { return PublicKey{key_id, public_key_bytes}; }
  // A whole unencrypted minisign secret key file (kdf "\0\0", real BLAKE2b-256 checksum):
  // both kh and `minisign -S -s <file>` can sign with it.
  std::string file_text() const;
};

struct Signature {
  KeyId key_id{};
  std::array<uint8_t, 64> signature{};         // over BLAKE2b-512(message)
  std::string trusted_comment;                 // without the "trusted comment: " prefix
  std::array<uint8_t, 64> global_signature{};  // over signature || trusted_comment
  std::string untrusted_comment;               // shown to no one as trusted
  std::string key_id_hex() const { return minisign::key_id_hex(key_id); }
};

// A fresh key pair from the system's CSPRNG (random key id, as minisign makes them).
SecretKey generate_key();

// Accepts a whole .pub file or its base64 line alone. `source` names the input in errors.
PublicKey parse_public_key(std::string_view text, std::string_view source);
// Accepts unencrypted minisign secret keys (what `kernels keys generate` and
// `minisign -G -W` write); refuses encrypted ones with what to do instead.
SecretKey parse_secret_key(std::string_view text, std::string_view source);
Signature parse_signature(std::string_view text, std::string_view source);

// Throws StatusError(KH_ERROR_SIGNATURE) naming `source` unless `sig` was made by `key`
// over exactly `message` and its trusted comment is intact: a key id other than the
// key's, a bad message signature and a bad global signature each say so.
void verify(const PublicKey& key, const Signature& sig, std::string_view message, std::string_view source);

// Signs message: returns a whole .minisig text. The trusted comment must be one line
// (no CR/LF) of at most 8192 bytes; `default_trusted_comment` gives minisign's form.
std::string sign(const SecretKey& key, std::string_view message, std::string_view trusted_comment,
                 std::string_view untrusted_comment = "signature from kh secret key");
// "timestamp:<unix seconds>\tfile:<file_name>\thashed", as `minisign -S` writes it.
std::string default_trusted_comment(std::string_view file_name);

// Strict standard base64 (RFC 4648, '=' padding, canonical). decode returns false on any
// other input. Exposed for the trust layer and the fuzzers.
std::string base64_encode(std::string_view bytes);
bool base64_decode(std::string_view text, std::string* out);

}  // namespace kh::registry::minisign
