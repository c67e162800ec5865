// test_attention_dram_pace.cpp: the FP8 decode plan's device rule (attention_dram_pace.hpp): the
// wide CTA on devices whose DRAM it keeps pace with, from the attributes each card reports. The
// H100 SXM and H200 numbers are the ones their runtimes gave (cudaDeviceGetAttribute, 2026-12-07);
// a mistake here would give an H200 a plan 18-31% slower, or an H100 one 6-9% slower.
#include <doctest/doctest.h>

#include "attention_dram_pace.hpp"

using kh_attention::peak_dram_bytes_per_sm;
using kh_attention::wide_cta_keeps_pace;

TEST_CASE("dram pace: peak bytes a second an SM from clock, bus width and SMs") {
  // H100 SXM: 2619 MHz, 5120 bits, 132 SMs: 3.352 TB/s, 25.4 GB/s an SM.
  CHECK(peak_dram_bytes_per_sm(2619000, 5120, 132) * 132 == doctest::Approx(3.352e12).epsilon(1e-3));
  CHECK(peak_dram_bytes_per_sm(2619000, 5120, 132) == doctest::Approx(25.39e9).epsilon(1e-3));
  // Unknown attributes give 0, not a division by zero or a negative rate.
  CHECK(peak_dram_bytes_per_sm(0, 5120, 132) == 0.0);
  CHECK(peak_dram_bytes_per_sm(2619000, 0, 132) == 0.0);
  CHECK(peak_dram_bytes_per_sm(2619000, 5120, 0) == 0.0);
  CHECK(peak_dram_bytes_per_sm(-1, -1, -1) == 0.0);
}

TEST_CASE("dram pace: the wide CTA where the DRAM does not outrun it") {
  CHECK(wide_cta_keeps_pace(2619000, 5120, 132));    // H100 SXM (measured: the wide CTA won)
  CHECK_FALSE(wide_cta_keeps_pace(3201000, 6144, 132));  // H200, 4.9 TB/s (measured: it lost)
  CHECK_FALSE(wide_cta_keeps_pace(3201000, 6016, 132));  // the H200 as its runtime reported it (2026-12-07)
  CHECK_FALSE(wide_cta_keeps_pace(2619000, 6144, 132));  // HBM3e's width at HBM3's clock: 30.5 GB/s
  CHECK(wide_cta_keeps_pace(1593000, 5120, 108));    // A100 80GB, 2.0 TB/s: 18.9 GB/s an SM
  CHECK_FALSE(wide_cta_keeps_pace(0, 0, 0));         // unknown: no cp.async wide CTA
  // The bar itself: at 28 GB/s an SM yes, just above no.
  const int sms = 100, bits = 8000;                  // 1000 bytes a transfer, 2000 a kHz-tick
  CHECK(wide_cta_keeps_pace(1400000, bits, sms));    // 2 x 1.4e9 x 1000 / 100 = 28.0e9
  CHECK_FALSE(wide_cta_keeps_pace(1400001, bits, sms));
}
