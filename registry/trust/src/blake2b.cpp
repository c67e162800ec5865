// Unkeyed BLAKE2b (RFC 7693) of any output length up to 64 bytes. OpenSSL 3.0 only offers
// the 64-byte BLAKE2B-512, and minisign's secret-key checksum is BLAKE2b-256 (a different
// function, not a truncation: the length is part of the parameter block). Used only for
// that checksum; message prehashes go through OpenSSL. Checked against RFC 7693's vector
// and against OpenSSL's BLAKE2B-512 in tests/registry/test_minisign.cpp.
#include <cstring>

#include "crypto.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry::crypto {
namespace {

constexpr uint64_t kIv[8] = {0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
                             0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
                             0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

constexpr uint8_t kSigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

inline uint64_t rotr(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

struct State {
  uint64_t h[8];
  uint64_t t[2] = {0, 0};
};

void compress(State& s, const uint8_t block[128], bool last) {
  uint64_t m[16], v[16];
  for (int i = 0; i < 16; ++i) m[i] = load_le64(block + 8 * i);
  for (int i = 0; i < 8; ++i) {
    v[i] = s.h[i];
    v[i + 8] = kIv[i];
  }
  v[12] ^= s.t[0];
  v[13] ^= s.t[1];
  if (last) v[14] = ~v[14];
  auto g = [&](int a, int b, int c, int d, uint64_t x, uint64_t y) {
    v[a] = v[a] + v[b] + x;
    v[d] = rotr(v[d] ^ v[a], 32);
    v[c] = v[c] + v[d];
    v[b] = rotr(v[b] ^ v[c], 24);
    v[a] = v[a] + v[b] + y;
    v[d] = rotr(v[d] ^ v[a], 16);
    v[c] = v[c] + v[d];
    v[b] = rotr(v[b] ^ v[c], 63);
  };
  for (int r = 0; r < 12; ++r) {
    const uint8_t* sg = kSigma[r];
    g(0, 4, 8, 12, m[sg[0]], m[sg[1]]);
    g(1, 5, 9, 13, m[sg[2]], m[sg[3]]);
    g(2, 6, 10, 14, m[sg[4]], m[sg[5]]);
    g(3, 7, 11, 15, m[sg[6]], m[sg[7]]);
    g(0, 5, 10, 15, m[sg[8]], m[sg[9]]);
    g(1, 6, 11, 12, m[sg[10]], m[sg[11]]);
    g(2, 7, 8, 13, m[sg[12]], m[sg[13]]);
    g(3, 4, 9, 14, m[sg[14]], m[sg[15]]);
  }
  for (int i = 0; i < 8; ++i) s.h[i] ^= v[i] ^ v[i + 8];
}

void add_to_counter(State& s, uint64_t n) {
  s.t[0] += n;
  if (s.t[0] < n) ++s.t[1];
}

}  // namespace

void blake2b(uint8_t* out, size_t out_len, std::string_view message) {
  if (out_len == 0 || out_len > 64) fail(KH_ERROR_INTERNAL, "blake2b: output length must be 1..64");
  State s;
  for (int i = 0; i < 8; ++i) s.h[i] = kIv[i];
  s.h[0] ^= 0x01010000ULL ^ static_cast<uint64_t>(out_len);  // depth 1, fanout 1, no key
  const uint8_t* p = reinterpret_cast<const uint8_t*>(message.data());
  size_t left = message.size();
  // Every full block but the last is compressed as it comes; the last one (full or
  // partial, possibly empty) is padded and compressed with the final flag.
  while (left > 128) {
    add_to_counter(s, 128);
    compress(s, p, false);
    p += 128;
    left -= 128;
  }
  uint8_t block[128] = {};
  if (left > 0) std::memcpy(block, p, left);
  add_to_counter(s, left);
  compress(s, block, true);
  uint8_t full[64];
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) full[8 * i + j] = static_cast<uint8_t>(s.h[i] >> (8 * j));
  std::memcpy(out, full, out_len);
}

}  // namespace kh::registry::crypto
