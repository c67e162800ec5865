// kh_kernel/half.hpp: fp16 and bf16 <-> float/double conversions in plain C++ for CPU
// kernels and host code. Round-to-nearest-even; NaN stays NaN (quieted), Inf stays Inf,
// subnormals are exact. Device code should use the vendor intrinsics instead.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kh_kernels {

// Storage types: the 16 bits as they lie in memory.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2, "16-bit storage types");

inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// IEEE binary16 -> float (exact).
inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (mant << 13));  // Inf, NaN (payload kept)
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return bits_to_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

// float -> IEEE binary16, round to nearest even; overflow gives Inf.
inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {                      // Inf or NaN
    if (absx == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | ((absx >> 13) & 0x3ffu));  // quiet NaN
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: rounds to Inf
  if (absx >= 0x38800000u) {                      // normal half range, >= 2^-14
    uint32_t r = absx - 0x38000000u;              // rebias the exponent 127 -> 15
    r += 0xfffu + ((r >> 13) & 1u);               // round to nearest even at bit 13
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  if (absx <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25: rounds to (signed) zero
  // Subnormal half: value = q * 2^-24 with q = round(M * 2^(e - 126)).
  const uint32_t e = absx >> 23;
  const uint32_t m = (absx & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14..24
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (q & 1u))) ++q;  // may carry into the smallest normal: correct
  return static_cast<uint16_t>(sign | q);
}

inline float bf16_bits_to_float(uint16_t b) { return bits_to_float(static_cast<uint32_t>(b) << 16); }

// float -> bfloat16, round to nearest even; overflow gives Inf.
inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = float_to_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// double -> float rounded to odd: truncate, then set the last bit if inexact. Rounding the
// result to a format with at least two fewer significand bits (fp16, bf16) gives the same
// answer as rounding the double directly, so there is no double-rounding error.
inline float double_to_float_round_odd(double d) {
  if (std::isnan(d)) return static_cast<float>(d);
  float f = static_cast<float>(d);
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);  // toward zero
  if (static_cast<double>(f) != d) f = bits_to_float(float_to_bits(f) | 1u);
  return f;
}

inline uint16_t double_to_half_bits(double d) { return float_to_half_bits(double_to_float_round_odd(d)); }
inline uint16_t double_to_bf16_bits(double d) { return float_to_bf16_bits(double_to_float_round_odd(d)); }

// Overloads used by templated CPU code: widen to double, round from double once.
inline double to_double(float v) { return v; }
inline double to_double(Half v) { return half_bits_to_float(v.bits); }
inline double to_double(BFloat16 v) { return bf16_bits_to_float(v.bits); }

template <typename T>
T from_double(double d);
template <>
inline float from_double<float>(double d) {
  return static_cast<float>(d);
}
template <>
inline Half from_double<Half>(double d) {
  return Half{double_to_half_bits(d)};
}
template <>
inline BFloat16 from_double<BFloat16>(double d) {
  return BFloat16{double_to_bf16_bits(d)};
}

}  // namespace kh_kernels
