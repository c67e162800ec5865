// ieee_reference.hpp: fp16/bf16 from their IEEE definitions for the kernel tests, written
// independently of kernels-src: exact decoding and encoding, and rounding to a dtype by
// scaling to its quantum. No kh headers, so helper tests can include it beside kh_kernel/.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <doctest/doctest.h>
#include <dlpack/dlpack.h>

namespace kh_test {

enum class Dt { f32, f16, bf16 };

inline const char* dt_name(Dt d) { return d == Dt::f32 ? "f32" : d == Dt::f16 ? "f16" : "bf16"; }
inline int dt_size(Dt d) { return d == Dt::f32 ? 4 : 2; }
inline DLDataType dl_dtype(Dt d) {
  if (d == Dt::f32) return DLDataType{kDLFloat, 32, 1};
  if (d == Dt::f16) return DLDataType{kDLFloat, 16, 1};
  return DLDataType{kDLBfloat, 16, 1};
}
// Relative spacing of the format: the tolerance unit.
inline double dt_eps(Dt d) { return d == Dt::f32 ? 0x1p-23 : d == Dt::f16 ? 0x1p-10 : 0x1p-7; }

// IEEE binary16 bits -> value, straight from the definition.
inline double decode_f16(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0x1f) v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (exp == 0) v = std::ldexp(mant, -24);
  else v = std::ldexp(1024 + mant, exp - 25);
  return sign ? -v : v;
}
inline double decode_bf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Rounds v to the nearest value of the format (ties to even), by scaling to an integer at
// the format's quantum and rounding with nearbyint (default mode: to nearest even).
inline double round_to(double v, Dt d) {
  if (d == Dt::f32) return static_cast<double>(static_cast<float>(v));
  if (v == 0 || !std::isfinite(v)) return v;
  const int mant_bits = d == Dt::f16 ? 10 : 7;
  const int min_exp = d == Dt::f16 ? -14 : -126;
  const double max_finite = d == Dt::f16 ? 65504.0 : std::ldexp(255.0, 120);  // bf16: (2 - 2^-7) * 2^127
  int e = std::ilogb(v);
  if (e < min_exp) e = min_exp;
  const double quantum = std::ldexp(1.0, e - mant_bits);
  const double r = std::nearbyint(v / quantum) * quantum;
  const double overflow = max_finite + std::ldexp(1.0, (d == Dt::f16 ? 15 : 127) - mant_bits - 1);
  if (std::fabs(r) >= overflow || std::fabs(v) >= overflow) return std::copysign(std::numeric_limits<double>::infinity(), v);
  return r;
}

// Bits of a value that the format represents exactly (finite); the test fails otherwise.
inline uint16_t encode_exact(double v, Dt d) {
  if (d == Dt::bf16) {
    const float f = static_cast<float>(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    REQUIRE((u & 0xffffu) == 0u);
    return static_cast<uint16_t>(u >> 16);
  }
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  const int e = std::ilogb(a);
  uint16_t bits;
  if (e < -14) {
    const double m = std::ldexp(a, 24);
    REQUIRE(m == std::floor(m));
    bits = static_cast<uint16_t>(m);
  } else {
    const double m = std::ldexp(a, 10 - e) - 1024;  // fraction in units of 2^(e-10)
    REQUIRE(m == std::floor(m));
    REQUIRE(e <= 15);
    bits = static_cast<uint16_t>(((e + 15) << 10) | static_cast<int>(m));
  }
  return static_cast<uint16_t>(sign | bits);
}

}  // namespace kh_test
