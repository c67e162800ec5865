// attention_cache_cuda.cu: paged_kv_cache_write on CUDA: one CTA per 4 tokens (1 for small calls),
// each thread moving fixed 16-byte chunks (8 elements of one head, of key or of value) of every
// token of its CTA: a bf16/fp16 cache gets the chunk as is, an e4m3 cache its 8 bytes quantized
// (x / scale rounded as float32 IEEE division, by ScaleDivisor's reciprocal where that is exact,
// then round to nearest even with saturation: cvt.rn.satfinite.e4m3x2.f32 where the arch has it
// (sm89+), else attention_fp8.hpp's integer rounding, which gives the same bytes). The slot is
// read on the device: a negative or out-of-range slot writes nothing. No allocation, no host
// synchronisation.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "attention_cache_launch.hpp"
#include "attention_fp8.hpp"

namespace kh_attention {
namespace {

// 256 threads: 8 KV heads of d128 (256 chunks of keys and values) are one chunk a thread, so a
// CTA's loads all go out at once rather than in two turns of a thread (H100, against 128 threads x
// 8 tokens in one process, two rounds, cuda/NOTES.md "FP8": 16384 tokens -> e4m3 40.6 -> 40.0 us,
// 0.83-0.84 -> 0.84-0.85 of the 512 MiB copy rate; 32768 75.6 -> 74.0; 65536 144.3 -> 142.8; 256
// tokens, one a CTA, 6.4 -> 5.7).
constexpr int kCacheWriteThreads = 256;

struct Bf16In {};
struct F16In {};

__device__ __forceinline__ float to_float(uint16_t bits, Bf16In) { return __uint_as_float(static_cast<uint32_t>(bits) << 16); }
__device__ __forceinline__ float to_float(uint16_t bits, F16In) { return __half2float(__ushort_as_half(bits)); }

// Four floats (first lowest) as four e4m3 bytes.
__device__ __forceinline__ uint32_t to_e4m3x4(float f0, float f1, float f2, float f3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint32_t out;
  asm("{\n .reg .b16 lo, hi;\n"
      " cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n"
      " cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
      " mov.b32 %0, {lo, hi};\n}\n"
      : "=r"(out)
      : "f"(f0), "f"(f1), "f"(f2), "f"(f3));
  return out;
#else
  return static_cast<uint32_t>(float_to_e4m3(f0)) | static_cast<uint32_t>(float_to_e4m3(f1)) << 8 |
         static_cast<uint32_t>(float_to_e4m3(f2)) << 16 | static_cast<uint32_t>(float_to_e4m3(f3)) << 24;
#endif
}

// x / s rounded to nearest, as IEEE division (the op's rule), in 3 instructions where the
// division's ~10 and its range checks weighed on a kernel that moves 24 bytes a chunk (H100, A/B in
// one run: 16384 tokens 43.4 -> 42.1 us, 32768 78.2 -> 77.6; cuda/NOTES.md "FP8"). r = RN(1 / s),
// once a chunk; q0 = RN(x r) is within an ulp of x / s, so the remainder x - q0 s is exact by FMA
// and RN(q0 + rem r) = RN(x / s) (Markstein's theorem, r within half an ulp of 1 / s). The operands
// are kept where no step can leave float32's normal range (s and |x| in [2^-60, 2^60]); any other x
// (zero, tiny, huge, inf, NaN) or s takes the IEEE division. tests/gpu/attention/check_fp8.py
// compares every bf16 and fp16 value's byte with PyTorch's quantize (passed on the H100).
struct ScaleDivisor {
  float s, r;
  bool fast;
};
__device__ __forceinline__ ScaleDivisor scale_divisor(float s) {
  const float a = fabsf(s);
  return {s, __frcp_rn(s), a >= 0x1p-60f && a <= 0x1p60f};
}
__device__ __forceinline__ bool in_fast_range(float x) {
  const float a = fabsf(x);
  return a >= 0x1p-60f && a <= 0x1p60f;
}
__device__ __forceinline__ float divide_by_reciprocal(float x, const ScaleDivisor& d) {
  const float q0 = __fmul_rn(x, d.r);
  return __fmaf_rn(__fmaf_rn(-q0, d.s, x), d.r, q0);
}

// A chunk's N quotients. The reciprocal's steps run for all N unconditionally, and one test a
// chunk sends the rare chunk holding a value outside the range (a zero, say) to the division for
// those values. A branch a value (132 in the 8-token instance's PTX) kept ptxas from interleaving
// the values' dependent FMAs: H100, A/B in one run, 16384 tokens 42.9 -> 40.9 us (0.87 -> 0.91 of
// a same-size copy; the bf16 write, with no arithmetic, is at 0.93), 32768 77.9 -> 76.1.
template <int N>
__device__ __forceinline__ void divide_chunk_rn(const float (&x)[N], const ScaleDivisor& d, float (&q)[N]) {
  bool all_fast = d.fast;
#pragma unroll
  for (int e = 0; e < N; ++e) {
    q[e] = divide_by_reciprocal(x[e], d);
    all_fast &= in_fast_range(x[e]);
  }
  if (!all_fast) {
#pragma unroll
    for (int e = 0; e < N; ++e)
      if (!(d.fast && in_fast_range(x[e]))) q[e] = __fdiv_rn(x[e], d.s);
  }
}

__device__ __forceinline__ uint4 load_streamed(const void* ptr) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(ptr));
  return r;
}

// A CTA writes TOKENS tokens: each thread owns fixed chunks (a head and 8 dims, of key or of value),
// whose offsets it works out once (no division a token), and moves that chunk of every token of the
// CTA with the loads of all tokens issued before the first store. H100, 65536 tokens x 8 heads x
// d128, 128 threads: one token a CTA reached 0.80 (e4m3) and 0.91 (bf16) of the copy bandwidth, 8
// tokens a CTA 0.85 and 0.92; but a decode step's 256 tokens took 10.8 us in 32 CTAs of 8 against
// 5.9 us in 256 CTAs of 1, so calls of up to kFewTokens tokens take one a CTA (cuda/NOTES.md "FP8").
// At 256 threads 4 tokens a CTA beat 8 (16384 tokens -> e4m3 40.7 -> 40.1 us) and 16 (42.0).
constexpr int kTokensPerCta = 4;
constexpr int64_t kFewTokens = 4096;

// Where one chunk comes from and goes to.
struct Chunk {
  const uint16_t* src;  // token t0's 8 elements
  int64_t src_step;     // elements from one token to the next
  int64_t dst_col;      // elements (bytes for e4m3) from a cache row's start
  int head;
  bool is_v;
};
__device__ __forceinline__ Chunk chunk_at(const CacheWriteParams& p, int i, int chunks, int per_head, int64_t t0) {
  const bool is_v = i >= chunks;
  const int ci = is_v ? i - chunks : i;
  const int h = ci / per_head, e0 = (ci - h * per_head) * 8;
  const int64_t src_step = is_v ? p.value_token_stride : p.key_token_stride;
  const uint16_t* src = static_cast<const uint16_t*>(is_v ? p.value : p.key) +
                        h * (is_v ? p.value_head_stride : p.key_head_stride) + e0 + t0 * src_step;
  return {src, src_step, h * (is_v ? p.vc_head_stride : p.kc_head_stride) + e0, h, is_v};
}

// The chunk of every token of the CTA, skipped ones included (their source rows exist; only their
// stores depend on the slot), so that the loads need not wait for the slots.
template <int TOKENS>
__device__ __forceinline__ void load_chunk(const Chunk& c, int nt, uint4 (&raw)[TOKENS]) {
#pragma unroll
  for (int k = 0; k < TOKENS; ++k)
    if (k < nt) raw[k] = load_streamed(c.src + k * c.src_step);
}

template <typename In, bool FP8, int TOKENS>
__device__ __forceinline__ void store_chunk(const CacheWriteParams& p, const Chunk& c, int nt, const int64_t* k_dst,
                                            const int64_t* v_dst, const uint4 (&raw)[TOKENS]) {
  const int64_t* dst_row = c.is_v ? v_dst : k_dst;
  if constexpr (FP8) {
    const float scale = c.is_v ? p.v_scale[c.head * p.v_scale_stride] : p.k_scale[c.head * p.k_scale_stride];
    const ScaleDivisor s = scale_divisor(scale);
    uint8_t* cache = static_cast<uint8_t*>(c.is_v ? p.v_cache : p.k_cache) + c.dst_col;
#pragma unroll
    for (int k = 0; k < TOKENS; ++k) {
      if (k < nt && dst_row[k] >= 0) {
        const uint32_t w[4] = {raw[k].x, raw[k].y, raw[k].z, raw[k].w};
        float x[8], f[8];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          x[2 * j] = to_float(static_cast<uint16_t>(w[j] & 0xffffu), In{});
          x[2 * j + 1] = to_float(static_cast<uint16_t>(w[j] >> 16), In{});
        }
        // One token a CTA (calls of a decode step's size) keeps the IEEE division: there the
        // reciprocal serves one chunk and cost 0.2 us a call (H100, 256 tokens 6.1 -> 6.3 us in
        // two runs); with several tokens a CTA it pays (16384 tokens 42.9 -> 42.1).
        if constexpr (TOKENS > 1) {
          divide_chunk_rn(x, s, f);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) f[e] = __fdiv_rn(x[e], scale);
        }
        *reinterpret_cast<uint2*>(cache + dst_row[k]) =
            make_uint2(to_e4m3x4(f[0], f[1], f[2], f[3]), to_e4m3x4(f[4], f[5], f[6], f[7]));
      }
    }
  } else {
    uint16_t* cache = static_cast<uint16_t*>(c.is_v ? p.v_cache : p.k_cache) + c.dst_col;
#pragma unroll
    for (int k = 0; k < TOKENS; ++k)
      if (k < nt && dst_row[k] >= 0) *reinterpret_cast<uint4*>(cache + dst_row[k]) = raw[k];
  }
}

// A thread's first kLeadChunks chunks are loaded before the slots are read: a decode step's call
// (256 tokens, one a CTA) otherwise waits on two global round trips in turn, the slot and then the
// source rows. One token a CTA leads with up to 4 chunks (heads x head dim <= 4096 in one go: 8
// KV heads of d128 are 1 a thread). Several tokens a CTA lead with none: those calls are long
// enough for other CTAs to hide the round trip, and 8 chunks' registers held across the slot's
// 64-bit division (a call) made sm80's e4m3 instance spill; leading with the first chunk at 8
// tokens a CTA lost on the H200 (16384 tokens -> e4m3 32.0 -> 33.7 us).
template <int TOKENS>
constexpr int kLeadChunks = TOKENS == 1 ? 4 : 0;

template <typename In, bool FP8, int TOKENS>
__global__ void __launch_bounds__(kCacheWriteThreads) cache_write_kernel(const CacheWriteParams p) {
  constexpr int kLead = kLeadChunks<TOKENS>;
  __shared__ int64_t k_dst[TOKENS], v_dst[TOKENS];  // row offsets; -1: skip the token
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * TOKENS;
  const int nt = static_cast<int>(p.tokens - t0 < TOKENS ? p.tokens - t0 : TOKENS);
  const int per_head = static_cast<int>(p.head_dim / 8);
  const int chunks = static_cast<int>(p.heads) * per_head;
  const int tid = static_cast<int>(threadIdx.x);
  uint4 lead[kLead > 0 ? kLead : 1][TOKENS];
#pragma unroll
  for (int j = 0; j < kLead; ++j)
    if (tid + j * kCacheWriteThreads < 2 * chunks)
      load_chunk(chunk_at(p, tid + j * kCacheWriteThreads, chunks, per_head, t0), nt, lead[j]);
  if (tid < nt) {
    const int64_t t = t0 + tid;
    const int64_t slot = p.slots_i64 ? static_cast<const int64_t*>(p.slots)[t * p.slot_stride]
                                     : static_cast<const int32_t*>(p.slots)[t * p.slot_stride];
    const bool on = slot >= 0 && slot < p.num_blocks * p.block_size;
    const int64_t block = on ? slot / p.block_size : 0, row = on ? slot - block * p.block_size : 0;
    k_dst[tid] = on ? block * p.kc_block_stride + row * p.kc_row_stride : -1;
    v_dst[tid] = on ? block * p.vc_block_stride + row * p.vc_row_stride : -1;
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kLead; ++j)
    if (tid + j * kCacheWriteThreads < 2 * chunks)
      store_chunk<In, FP8, TOKENS>(p, chunk_at(p, tid + j * kCacheWriteThreads, chunks, per_head, t0), nt, k_dst,
                                   v_dst, lead[j]);
  for (int i = tid + kLead * kCacheWriteThreads; i < 2 * chunks; i += kCacheWriteThreads) {
    const Chunk c = chunk_at(p, i, chunks, per_head, t0);
    uint4 raw[TOKENS];
    load_chunk(c, nt, raw);
    store_chunk<In, FP8, TOKENS>(p, c, nt, k_dst, v_dst, raw);
  }
}

template <typename In, int TOKENS>
cudaError_t launch_tokens(const CacheWriteParams& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.tokens + TOKENS - 1) / TOKENS));
  if (p.fp8)
    cache_write_kernel<In, true, TOKENS><<<grid, kCacheWriteThreads, 0, stream>>>(p);
  else
    cache_write_kernel<In, false, TOKENS><<<grid, kCacheWriteThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

template <typename In>
cudaError_t launch_typed(const CacheWriteParams& p, cudaStream_t stream) {
  return p.tokens <= kFewTokens ? launch_tokens<In, 1>(p, stream) : launch_tokens<In, kTokensPerCta>(p, stream);
}

}  // namespace

cudaError_t launch_cache_write(const CacheWriteParams& p, cudaStream_t stream) {
  return p.dtype == ElementType::kBF16 ? launch_typed<Bf16In>(p, stream) : launch_typed<F16In>(p, stream);
}

}  // namespace kh_attention
