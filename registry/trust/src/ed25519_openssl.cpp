// Ed25519 (RFC 8032, "pure": EVP_DigestSign/Verify with a NULL digest), BLAKE2B-512 and
// random bytes through OpenSSL 3: the registry's only use of OpenSSL besides sha256.cpp.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <memory>

#include "crypto.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry::crypto {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

const EVP_MD* blake2b512_algorithm() {
  // Fetched once, as sha256.cpp does: an implicit fetch per call costs a provider lookup.
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "BLAKE2B-512", nullptr);
  return md;
}

Pkey private_key(const Ed25519Seed& seed) {
  Pkey key(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, seed.data(), seed.size()));
  if (!key) fail(KH_ERROR_INTERNAL, "ed25519: OpenSSL could not load a private key");
  return key;
}

}  // namespace

bool ed25519_verify(const Ed25519PublicKey& public_key, const Ed25519Signature& sig, std::string_view message) {
  Pkey key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, public_key.data(), public_key.size()));
  if (!key) return false;  // not a point on the curve
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit_ex(ctx.get(), nullptr, nullptr, nullptr, nullptr, key.get(), nullptr) != 1)
    fail(KH_ERROR_INTERNAL, "ed25519: OpenSSL could not set up a verification");
  int rc = EVP_DigestVerify(ctx.get(), sig.data(), sig.size(), reinterpret_cast<const unsigned char*>(message.data()),
                            message.size());
  return rc == 1;
}

Ed25519Signature ed25519_sign(const Ed25519Seed& seed, std::string_view message) {
  Pkey key = private_key(seed);
  MdCtx ctx(EVP_MD_CTX_new());
  Ed25519Signature sig{};
  size_t len = sig.size();
  if (!ctx || EVP_DigestSignInit_ex(ctx.get(), nullptr, nullptr, nullptr, nullptr, key.get(), nullptr) != 1 ||
      EVP_DigestSign(ctx.get(), sig.data(), &len, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1 ||
      len != sig.size())
    fail(KH_ERROR_INTERNAL, "ed25519: OpenSSL could not sign");
  return sig;
}

Ed25519PublicKey ed25519_public_key(const Ed25519Seed& seed) {
  Pkey key = private_key(seed);
  Ed25519PublicKey pk{};
  size_t len = pk.size();
  if (EVP_PKEY_get_raw_public_key(key.get(), pk.data(), &len) != 1 || len != pk.size())
    fail(KH_ERROR_INTERNAL, "ed25519: OpenSSL could not derive a public key");
  return pk;
}

Blake2b512 blake2b_512(std::string_view message) {
  const EVP_MD* md = blake2b512_algorithm();
  MdCtx ctx(EVP_MD_CTX_new());
  Blake2b512 out{};
  unsigned int len = 0;
  if (md == nullptr || !ctx || EVP_DigestInit_ex2(ctx.get(), md, nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), message.data(), message.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), out.data(), &len) != 1 || len != out.size())
    fail(KH_ERROR_INTERNAL, "blake2b: OpenSSL could not compute BLAKE2B-512");
  return out;
}

void random_bytes(uint8_t* out, size_t n) {
  if (n > 0 && RAND_bytes(out, static_cast<int>(n)) != 1)
    fail(KH_ERROR_INTERNAL, "random: OpenSSL's RAND_bytes failed; the system's random source is unavailable");
}

void cleanse(void* p, size_t n) { OPENSSL_cleanse(p, n); }

}  // namespace kh::registry::crypto
