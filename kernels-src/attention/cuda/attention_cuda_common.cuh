// Device helpers both CUDA prefill attention kernels (sm80: mma.sync, sm90a: wgmma) use in
// their softmax and epilogue: packing two floats into one register of two 16-bit values, the
// hardware's approximate exp2, and a tanh for the soft-cap built on it; and the mbarrier wait of
// the TMA rings (the sm90a prefill kernel's, the decode op's wide CTA's).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace kh_attention::cuda_common {

// Two floats to one register of two 16-bit values (T: __half or __nv_bfloat16), rounded to
// nearest even; `lo` takes the lower half (the lower column of an mma fragment).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  } else {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
}

// 2^x by MUFU.EX2 (flush-to-zero): the softmax works in base 2 with log2(e) folded into the scale.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// tanh(x) = 1 - 2 / (1 + e^(2x)) from MUFU.EX2 and an approximate division: absolute error
// ~1e-7 (what the softmax of a soft-capped score cares about, cap * tanh being a logit), with
// two MUFU ops and two temporaries where tanhf takes a dozen registers and a branch. Saturates
// to +-1 for large |x| (e^(2x) = inf gives 1 - 0, 0 gives 1 - 2).
__device__ __forceinline__ float fast_tanh(float x) {
  constexpr float kTwoLog2e = 2.8853900817779268f;
  return 1.f - __fdividef(2.f, 1.f + fast_exp2(x * kTwoLog2e));
}

// Spins until the mbarrier at shared address `bar` completes the phase of parity `parity`.
// sm_90's try_wait: the decode kernels are one source for the sm80 and sm90a builds, and their
// sm80 code never reaches a TMA ring (it traps if it did).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#else
  (void)bar, (void)parity;
  __trap();
#endif
}

}  // namespace kh_attention::cuda_common
