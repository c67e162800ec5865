// attention_fp8.hpp: float8 e4m3fn (OCP FP8 E4M3) as the 1.2 ops store it in uint8 tensors:
// decoding (exact), and the rounding paged_kv_cache_write quantizes with. One definition for the
// CPU oracle, the CUDA and HIP kernels (host and device code) and the tests' cross-checks.
//
// e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is subnormal (m * 2^-9);
// no infinities; S.1111.111 (0x7f, 0xff) is NaN; the largest finite value is 448 (0x7e).
// Every e4m3 value is exact in bf16, fp16 and float32.
// Plain C++ (no kh headers).
#pragma once

#include <cstdint>

#include "attention_visibility.hpp"  // KH_ATTN_HD

namespace kh_attention {

constexpr float kE4m3Max = 448.f;

KH_ATTN_HD uint32_t fp8_float_bits(float f) {
  union {
    float f;
    uint32_t u;
  } v{f};
  return v.u;
}
KH_ATTN_HD float fp8_bits_float(uint32_t u) {
  union {
    uint32_t u;
    float f;
  } v{u};
  return v.f;
}

// The value of an e4m3 byte; NaN for 0x7f and 0xff (the CPU oracle's decoding).
KH_ATTN_HD float e4m3_to_float(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24, em = b & 0x7fu;
  if (em == 0x7fu) return fp8_bits_float(sign | 0x7fc00000u);
  if (em < 8u) {  // subnormal (or zero): m * 2^-9
    const float mag = static_cast<float>(em) * 0.001953125f;
    return sign ? -mag : mag;
  }
  return fp8_bits_float(sign | ((em + (120u << 3)) << 20));  // exponent bias 7 -> 127
}

// Float to e4m3, round to nearest even, saturating: finite values past +-448 and infinities give
// +-448, NaN gives NaN (0x7f with the input's sign). x / scale is the caller's (IEEE division).
// This is PyTorch's x.clamp(-448, 448).to(torch.float8_e4m3fn) and CUDA's
// cvt.rn.satfinite.e4m3x2.f32, written with integer operations so that every backend (and the
// compute_80 PTX, which has no FP8 conversion) rounds alike.
KH_ATTN_HD uint8_t float_to_e4m3(float f) {
  const uint32_t u = fp8_float_bits(f);
  const uint32_t sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint8_t>(sign | 0x7fu);  // NaN
  if (a >= 0x43e00000u) return static_cast<uint8_t>(sign | 0x7eu);  // >= 448 (and inf): saturate
  if (a < 0x3c800000u) {
    // Below 2^-6: subnormal steps of 2^-9. a * 2^9 is exact (a power of two, no underflow at this
    // size); rounding it to an integer (nearest even) gives m in 0..8, and 8 is 2^-6's encoding.
    const float scaled = fp8_bits_float(a) * 512.f;
    const uint32_t whole = static_cast<uint32_t>(scaled);
    const float rest = scaled - static_cast<float>(whole);
    const uint32_t m = whole + ((rest > 0.5f || (rest == 0.5f && (whole & 1u))) ? 1u : 0u);
    return static_cast<uint8_t>(sign | m);
  }
  // Normal: keep 3 of float's 23 mantissa bits, round to nearest even at bit 20; a carry into the
  // exponent is the right result. Below 448 nothing rounds past 448.
  const uint32_t r = (a + 0x7ffffu + ((a >> 20) & 1u)) >> 20;
  return static_cast<uint8_t>(sign | (r - (120u << 3)));
}

// Where a tensor's per-KV-head factor sits: scales of one element serve every head (stride 0).
KH_ATTN_HD float fp8_scale_at(const float* scale, int64_t stride, int head) { return scale[stride * head]; }

}  // namespace kh_attention
