// attention_dram_pace.hpp: whether a decode CTA whose read rate is bounded on its own keeps pace with
// a device's DRAM, from what the runtime reports (memory clock, bus width, SMs). Host code; the FP8
// decode plan (cuda/attention_decode_fp8.cu) asks it about the wide CTA; checked in
// tests/kernels/test_attention_dram_pace.cpp.
#pragma once

namespace kh_attention {

// Peak DRAM bytes a second an SM: memory clock (kHz) x 2 transfers a clock x bus width (bits) / 8
// / SMs; 0 where an attribute is unknown (<= 0).
inline double peak_dram_bytes_per_sm(int memory_khz, int bus_bits, int sms) {
  if (memory_khz <= 0 || bus_bits <= 0 || sms <= 0) return 0.0;
  return 2.0 * memory_khz * 1e3 * (bus_bits / 8.0) / sms;
}

// The FP8 decode's wide CTA (one a SM, its ring filled by cp.async) read at ~3 TB/s on an H100 SXM
// and on an H200 alike (2026-12-07, cuda/NOTES.md "The wide CTA on an H200"): it won where the
// device's peak is 25.4 GB/s an SM (H100 SXM: 2619 MHz x 5120 bits / 132) and lost 18-31% at
// ~37 (H200: 4.8 TB/s / 132). Unknown attributes: no. Where it says no, the plan still takes the wide
// CTA at one or two full waves with its ring filled by TMA where the maps encode, which kept pace on
// the H200 (0.99 of the copy floor at b16 x 32k) and beat 4-warp CTAs on the H100 as well.
constexpr double kWideCtaMaxDramBytesPerSm = 28e9;
inline bool wide_cta_keeps_pace(int memory_khz, int bus_bits, int sms) {
  const double per_sm = peak_dram_bytes_per_sm(memory_khz, bus_bits, sms);
  return per_sm > 0.0 && per_sm <= kWideCtaMaxDramBytesPerSm;
}

}  // namespace kh_attention
