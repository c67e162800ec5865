// The primitives kh's signatures rest on: Ed25519 and BLAKE2b-512 through OpenSSL 3
// (ed25519_openssl.cpp, the only file here that includes OpenSSL's signature API), and a
// small BLAKE2b of any length (blake2b.cpp) for minisign's secret-key checksum, a length
// OpenSSL 3.0's BLAKE2B-512 cannot produce. Internal to the registry.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kh::registry::crypto {

using Ed25519PublicKey = std::array<uint8_t, 32>;
using Ed25519Seed = std::array<uint8_t, 32>;  // the private key, as RFC 8032 defines it
using Ed25519Signature = std::array<uint8_t, 64>;
using Blake2b512 = std::array<uint8_t, 64>;

// True when sig is a valid Ed25519 signature of message by public_key. Never throws for
// a bad key or signature (returns false); throws StatusError(KH_ERROR_INTERNAL) only when
// OpenSSL cannot set up the check at all.
bool ed25519_verify(const Ed25519PublicKey& public_key, const Ed25519Signature& sig, std::string_view message);
Ed25519Signature ed25519_sign(const Ed25519Seed& seed, std::string_view message);
Ed25519PublicKey ed25519_public_key(const Ed25519Seed& seed);

// BLAKE2b with a 64-byte output (OpenSSL's BLAKE2B-512): minisign's message prehash.
Blake2b512 blake2b_512(std::string_view message);

// Unkeyed BLAKE2b (RFC 7693) with an out_len-byte output, 1 <= out_len <= 64.
void blake2b(uint8_t* out, size_t out_len, std::string_view message);

// Bytes from the operating system's CSPRNG (through OpenSSL's RAND_bytes).
void random_bytes(uint8_t* out, size_t n);

// Overwrites memory the compiler may not elide (OPENSSL_cleanse).
void cleanse(void* p, size_t n);

}  // namespace kh::registry::crypto
