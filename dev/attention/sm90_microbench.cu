// sm90_microbench.cu: what the FP8 prefill's consumer warpgroups can get from one H100/H200 SM, each
// part alone, on the SM clock (cuda/NOTES.md, "The softmax beside the products"):
//   - MUFU.EX2's throughput (warp-instructions a clock an SMSP) at 1-3 warps an SMSP;
//   - the d128 softmax of one key block (96 scores a thread: the row maxima, four shuffles, 98 exp2,
//     the sums; optionally the e4m3 packing of P), alone and two warps an SMSP;
//   - how long a warpgroup's wgmma issue takes (S: 4 x ss m64n192k32, P V: 6 x rs m64n128k32, both
//     e4m3) alone and beside a second warpgroup, on zeros and on random e4m3 operands;
//   - the same softmax, chains of MUFU.EX2 alone and chains of FFMA alone, each while a second
//     warpgroup keeps the tensor cores busy with the block's products, with S's alone (ss) or with
//     P V's alone (rs): which part of the softmax the products slow, and which products do;
//   - the kernel's steady loop without its memory side: two warpgroups taking turns at issuing a
//     block's products (S, then P V of the block before), each then running the softmax of its S,
//     waiting for its P V and packing P (no TMA, no mbarriers, no producer), with either part
//     left out, or without the softmax's row sums (what summing P on the tensor cores would save:
//     cuda/NOTES.md, "P's row sums on the tensor cores"), clocks an iteration by segment; then
//     with the kernel's memory side (a producer thread filling K and Vt rings by bulk copies, the
//     consumers waiting on their mbarriers).
// Not a test and not built by CMake. On the GPU machine, from the repository root:
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -I kernels-src/attention/cuda \
//     -I kernels-src/attention/src -I kernels-src/common/include -I abi/include \
//     -o /tmp/sm90_microbench dev/attention/sm90_microbench.cu && /tmp/sm90_microbench
#include <cuda_fp8.h>

#include <cstdint>
#include <cstdio>

#include "attention_fwd_sm90.cuh"

using kh_attention::cuda_common::fast_exp2;
using namespace kh_attention::sm90;
using kh_attention::sm90::detail::named_bar_arrive;
using kh_attention::sm90::detail::named_bar_sync;
using kh_attention::sm90::detail::pack4_e4m3;

namespace {

// Clock sums and counts, per benchmark: [what][slot].
__device__ unsigned long long g_clocks[4][8];

constexpr int kScores = 96;  // a thread's scores of one 192-key block at d128 (two rows, 48 each)

// Adds this warp's clocks to g_clocks[what] (block 0 only, one lane a warp).
__device__ void record_warp(int what, long long clocks) {
  if (blockIdx.x == 0 && threadIdx.x % 32 == 0) {
    atomicAdd(&g_clocks[what][0], static_cast<unsigned long long>(clocks));
    atomicAdd(&g_clocks[what][1], 1ull);
  }
}

// Random e4m3 bytes, four to a word, without NaN and below 16 in magnitude.
__device__ uint32_t random_e4m3x4(uint32_t i) {
  uint32_t x = i * 2654435761u ^ 0x9e3779b9u;
  x ^= x >> 15;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  return x & 0xB7B7B7B7u;  // exponent bit 3 and mantissa bit 3 cleared
}

// One block of the kernel's online softmax (attention_fwd_sm90.cuh: the maxima in four chains a
// row, the fold of the scale into the exponent's FFMA, four sum chains), the scores replaced by
// their probabilities; kPack also packs P to e4m3 pairs as pack_p does. kSums false leaves the row
// sums out (what a column of ones in Vt would take over: P V would sum P on the tensor cores).
template <bool kPack, bool kSums = true>
__device__ __forceinline__ void softmax_block(float (&acc)[kScores], float (&row_max)[2], float (&row_sum)[2],
                                              uint32_t& packs, float fold) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float m[4] = {-1e30f, -1e30f, -1e30f, -1e30f};
#pragma unroll
    for (int j = 0; j < kScores / 4; ++j) m[j % 4] = fmaxf(m[j % 4], fmaxf(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]));
    float mx = fmaxf(fmaxf(m[0], m[1]), fmaxf(m[2], m[3]));
    mx = fmaxf(row_max[h], mx * fold);
    mx = fmaxf(mx, __shfl_xor_sync(~0u, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(~0u, mx, 2));
    const float correction = fast_exp2(row_max[h] - mx);
    float sums[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < kScores / 4; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float p = fast_exp2(fmaf(acc[4 * j + 2 * h + e], fold, -mx));
        acc[4 * j + 2 * h + e] = p;
        if constexpr (kSums) sums[j % 4] += p;
      }
    row_sum[h] = row_sum[h] * correction + (sums[0] + sums[1]) + (sums[2] + sums[3]);
    row_max[h] = mx - 0.5f;  // keeps the max moving, so that nothing in the loop is invariant
  }
  if constexpr (kPack) {
#pragma unroll
    for (int i = 0; i < kScores; i += 2) {
      uint16_t v;
      asm("{.reg .b16 t; cvt.rn.satfinite.e4m3x2.f32 t, %1, %2; mov.b16 %0, t;}" : "=h"(v) : "f"(acc[i + 1]), "f"(acc[i]));
      packs ^= v;
    }
  }
}

__device__ void init_scores(float (&acc)[kScores]) {
#pragma unroll
  for (int i = 0; i < kScores; ++i) acc[i] = 0.001f * ((threadIdx.x * 7 + i * 13) % 97);
}

// Keeps a result alive without storing it (the compare never holds).
__device__ void keep(float v, float* out) {
  if (v == 12345.f) out[0] = v;
}

constexpr int kMufuChains = 48;

// `iters` rounds of kMufuChains independent chains of one instruction each: MUFU.EX2 (kFfma false)
// or FFMA (true); the warp's clocks recorded in g_clocks[what].
template <bool kFfma>
__device__ void timed_chains(int iters, int what, float* out) {
  float x[kMufuChains];
#pragma unroll
  for (int i = 0; i < kMufuChains; ++i) x[i] = 0.01f * (threadIdx.x % 7 + i);
  const long long t0 = clock64();
  for (int r = 0; r < iters; ++r)
#pragma unroll
    for (int i = 0; i < kMufuChains; ++i) x[i] = kFfma ? fmaf(x[i], 0.999f, 0.001f) : fast_exp2(-x[i]);
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kMufuChains; ++i) s += x[i];
  keep(s, out);
  record_warp(what, t1 - t0);
}

__global__ void mufu_throughput(int iters, float* out) { timed_chains<false>(iters, 0, out); }

// `iters` blocks' softmax on this thread's scores, the warp's clocks recorded in g_clocks[1].
template <bool kPack>
__device__ void timed_softmax(int iters, float fold, float* out) {
  float acc[kScores], row_max[2] = {-1e30f, -1e30f}, row_sum[2] = {0.f, 0.f};
  uint32_t packs = 0;
  init_scores(acc);
  const long long t0 = clock64();
  for (int r = 0; r < iters; ++r) softmax_block<kPack>(acc, row_max, row_sum, packs, fold);
  const long long t1 = clock64();
  keep(row_sum[0] + row_sum[1] + static_cast<float>(packs), out);
  record_warp(1, t1 - t0);
}

template <bool kPack>
__global__ void softmax_alone(int iters, float fold, float* out) {
  timed_softmax<kPack>(iters, fold, out);
}

constexpr int kSmemBytes = 128 * 1024;
constexpr uint32_t kSOperandB = 32768, kPVOperandB = 65536;  // byte offsets of K's and Vt's stand-ins

__device__ void fill_operands(unsigned char* smem, bool random) {
  for (int i = threadIdx.x; i < kSmemBytes / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = random ? random_e4m3x4(i) : 0u;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
}

// S (+)= Q K^T of one key block for one warpgroup: 4 k-steps of 32 columns, Q at q, K at k
// (kOverwrite: the first k-step overwrites S, as the kernel's does; else every one accumulates).
template <bool kOverwrite>
__device__ __forceinline__ void issue_s(float (&s)[96], uint32_t q, uint32_t k) {
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
    Wgmma<192, __nv_fp8_e4m3>::ss(s, smem_desc<128>(q + kk * 32, 16, 1024), smem_desc<128>(k + kk * 32, 16, 1024),
                                  kOverwrite && kk == 0 ? 0 : 1);
  wgmma_commit();
}

// O += P V of one key block: 6 k-steps of 32 keys, P from registers, Vt at vt in boxes of 128 rows
// of kSwizzle bytes (k-step kk in box 32 kk / kSwizzle, as the kernel addresses its Vt stages).
template <int kSwizzle = 128>
__device__ __forceinline__ void issue_pv(float (&o)[64], const uint32_t (&pa)[6][4], uint32_t vt) {
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 6; ++kk) {
    const uint32_t box = kk * 32 / kSwizzle, koff = kk * 32 % kSwizzle;
    Wgmma<128, __nv_fp8_e4m3>::rs(o, pa[kk], smem_desc<kSwizzle>(vt + box * 128 * kSwizzle + koff, 16, 8 * kSwizzle), 1);
  }
  wgmma_commit();
}

// P (the softmax's output in S's registers) as the e4m3 A fragments of P V, as pack_p does.
__device__ __forceinline__ void pack_p(const float (&s)[96], uint32_t (&pa)[6][4]) {
#pragma unroll
  for (int kk = 0; kk < 6; ++kk) {
    const float* v = s + 16 * kk;
    pa[kk][0] = pack4_e4m3(v[0], v[1], v[4], v[5]);
    pa[kk][1] = pack4_e4m3(v[2], v[3], v[6], v[7]);
    pa[kk][2] = pack4_e4m3(v[8], v[9], v[12], v[13]);
    pa[kk][3] = pack4_e4m3(v[10], v[11], v[14], v[15]);
  }
}

// The products of one key block of one warpgroup, S (Q at a_base, K at the S operand) then P V,
// through their wait. Returns the clocks the issue of each took and of the whole.
struct BlockClocks {
  long long s_issue, pv_issue, total;
};
__device__ BlockClocks block_products(float (&s)[96], float (&o)[64], const uint32_t (&pa)[6][4], uint32_t base,
                                      uint32_t a_base) {
  const long long t0 = clock64();
  issue_s<false>(s, a_base, base + kSOperandB);
  const long long t1 = clock64();
  issue_pv(o, pa, base + kPVOperandB);
  const long long t2 = clock64();
  wgmma_wait<0>();
  fence_operands(s);
  fence_operands(o);
  return {t1 - t0, t2 - t1, clock64() - t0};
}

struct Accumulators {
  float s[96], o[64];
  uint32_t pa[6][4];
  __device__ explicit Accumulators(bool random) {
#pragma unroll
    for (int i = 0; i < 96; ++i) s[i] = 0.f;
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
#pragma unroll
    for (int k = 0; k < 6; ++k)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        // Through a volatile move, so that ptxas holds the value instead of recomputing it beside
        // each rs wgmma (which made it inject a warpgroup arrive before each: C7519).
        const uint32_t v = random ? random_e4m3x4(threadIdx.x * 24 + k * 4 + r + 77777) : 0u;
        asm volatile("mov.b32 %0, %1;" : "=r"(pa[k][r]) : "r"(v));
      }
  }
  __device__ float total() const {
    float z = 0.f;
#pragma unroll
    for (int i = 0; i < 96; ++i) z += s[i];
#pragma unroll
    for (int i = 0; i < 64; ++i) z += o[i];
    return z;
  }
};

// Every warpgroup issues `rounds` blocks' products back to back; warp 0 of each records the issue
// clocks; thread 0 also the SM clock's rate (clock64 against the global timer).
__global__ void products_alone(int rounds, int random, float* out) {
  extern __shared__ __align__(1024) unsigned char smem[];
  fill_operands(smem, random != 0);
  const int wg = threadIdx.x / 128;
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  Accumulators a(random != 0);
  long long s_issue = 0, pv_issue = 0, total = 0;
  unsigned long long g0, g1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
  const long long c0 = clock64();
  for (int r = 0; r < rounds; ++r) {
    const BlockClocks c = block_products(a.s, a.o, a.pa, base, base + wg * 16384);
    s_issue += c.s_issue;
    pv_issue += c.pv_issue;
    total += c.total;
  }
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
  const long long c1 = clock64();
  keep(a.total(), out);
  if (blockIdx.x == 0 && threadIdx.x % 128 == 0) {
    g_clocks[2][3 * wg + 0] = s_issue;
    g_clocks[2][3 * wg + 1] = pv_issue;
    g_clocks[2][3 * wg + 2] = total;
    if (wg == 0) g_clocks[3][0] = c1 - c0, g_clocks[3][1] = g1 - g0;
  }
}

// Warpgroup 0 runs a loop while warpgroup 1 issues `rounds` blocks' products (random operands),
// more than the loop lasts: which of the softmax's parts the tensor cores' work slows, and which
// of the products slows it. kLoopKind: 0 the softmax (`iters` blocks), 1 MUFU.EX2 chains, 2 FFMA
// chains (`iters` rounds of kMufuChains), 3 none (the products' baseline in the same kernel).
// kProducts: 0 none, 1 S (4 ss) then P V (6 rs) as the kernel's block, 2 S only (8 ss), 3 P V only
// (12 rs). Template arguments: a wgmma under a run-time condition makes ptxas serialize them (C7513).
template <int kLoopKind, int kProducts>
__global__ void __launch_bounds__(256, 1) loop_beside_products(int iters, int rounds, float fold, float* out) {
  extern __shared__ __align__(1024) unsigned char smem[];
  fill_operands(smem, true);
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  // The role as a warp-uniform value (a shuffle from lane 0): branching on threadIdx.x itself made
  // ptxas serialize the wgmmas (C7520, a warpgroup arrive in a divergent path).
  const int wg = __shfl_sync(~0u, static_cast<int>(threadIdx.x / 128), 0);
  if (wg == 0) {
    if constexpr (kLoopKind == 0) timed_softmax<false>(iters, fold, out);
    if constexpr (kLoopKind == 1) timed_chains<false>(iters, 1, out);
    if constexpr (kLoopKind == 2) timed_chains<true>(iters, 1, out);
  } else if constexpr (kProducts != 0) {
    Accumulators a(true);
    long long total = 0, while_loop = 0;
    for (int r = 0; r < rounds; ++r) {
      const long long t0 = clock64();
      if constexpr (kProducts == 1) {
        block_products(a.s, a.o, a.pa, base, base);
      } else {
        if constexpr (kProducts == 2) {
          issue_s<false>(a.s, base, base + kSOperandB);
          issue_s<false>(a.s, base, base + kSOperandB);
        } else {
          issue_pv(a.o, a.pa, base + kPVOperandB);
          issue_pv(a.o, a.pa, base + kPVOperandB);
        }
        wgmma_wait<0>();
        fence_operands(a.s);
        fence_operands(a.o);
      }
      const long long t = clock64() - t0;
      total += t;
      if (r < rounds / 4) while_loop += t;  // the first quarter: the loop surely still runs
    }
    keep(a.total(), out);
    if (blockIdx.x == 0 && threadIdx.x == 128) g_clocks[2][0] = while_loop / (rounds / 4), g_clocks[2][1] = total / rounds;
  }
}

// A steady loop's five segments (the turn with any wait before it, the issue, S's wait, the softmax,
// the retire: P V's wait and P's packing), summed over the blocks after the first eight and stored
// by warp 0 of each warpgroup in g_clocks[2 + wg].
struct LoopSegments {
  long long sums[5] = {0, 0, 0, 0, 0};
  __device__ void add(int block, const long long (&t)[6]) {
    if (block < 8) return;
#pragma unroll
    for (int i = 0; i < 5; ++i) sums[i] += t[i + 1] - t[i];
  }
  __device__ void store(int wg) const {
    if (blockIdx.x == 0 && threadIdx.x % 128 == 0)
      for (int i = 0; i < 5; ++i) g_clocks[2 + wg][i] = sums[i];
  }
};

// The steady loop's consumer side (attention_fwd_sm90.cuh, consume_tile) on one SM's two
// warpgroups, for `iters` blocks: mode bit 1 the products, bit 2 the softmax, bit 4 no turns (each
// warpgroup issues when it is ready), bit 8 no row sums in the softmax. Warp 0 of each
// warpgroup sums the clocks of its turn's wait, the issue, S's wait, the softmax and the retire
// (P V's wait, P's packing) over the blocks after the first eight, into g_clocks[2 + wg]. The mode is
// a template argument: a wgmma under a run-time condition makes ptxas serialize them (C7513).
template <int kMode>
__global__ void __launch_bounds__(256, 1) steady_loop(int iters, float fold, float* out) {
  extern __shared__ __align__(1024) unsigned char smem[];
  fill_operands(smem, true);
  const int wg = __shfl_sync(~0u, static_cast<int>(threadIdx.x / 128), 0);
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t s_q = base + wg * 16384;
  constexpr bool kProducts = (kMode & 1) != 0, kSoftmax = (kMode & 2) != 0, kTurns = (kMode & 4) == 0;
  constexpr bool kSums = (kMode & 8) == 0;
  Accumulators a(true);
  float row_max[2] = {-1e30f, -1e30f}, row_sum[2] = {0.f, 0.f};
  uint32_t packs = 0;
  LoopSegments segments;
  if (kTurns && wg == 1) named_bar_arrive(1, 256);  // the start-up pass: warpgroup 0 goes first
  for (int it = 0; it < iters; ++it) {
    long long t[6];
    t[0] = clock64();
    if constexpr (kTurns) named_bar_sync(1 + wg, 256);
    t[1] = clock64();
    if constexpr (kProducts) {
      issue_s<true>(a.s, s_q, base + kSOperandB);
      issue_pv(a.o, a.pa, base + kPVOperandB);
    }
    if (kTurns && !(wg == 1 && it == iters - 1)) named_bar_arrive(1 + (wg + 1) % 2, 256);  // none left dangling
    t[2] = clock64();
    if constexpr (kProducts) {
      wgmma_wait<1>();
      fence_operands(a.s);
    }
    t[3] = clock64();
    if constexpr (kSoftmax) softmax_block<false, kSums>(a.s, row_max, row_sum, packs, fold);
    t[4] = clock64();
    if constexpr (kProducts) {
      wgmma_wait<0>();
      fence_operands(a.o);
    }
    pack_p(a.s, a.pa);
    t[5] = clock64();
    segments.add(it, t);
  }
  keep(a.total() + row_sum[0] + static_cast<float>(packs), out);
  segments.store(wg);
}

// The same loop with the kernel's memory side (d128's rings: K and Vt, two stages each, 24 KB a
// block each, loaded by one producer thread with 1-D bulk copies from a 64 MB buffer that groups
// of 16 CTAs read alike, as tiles of one head read its keys from L2) and its register split
// (producer warpgroup at 56, consumers at 224, 384 threads). kMemory 0: no loads; 1: the loads,
// paced by the consumers' releases (and by the producer waiting for a stage's previous load to land
// before reusing it), but the consumers never wait for them: their shared-memory traffic alone; 2:
// the consumers wait for each block's K and Vt as the kernel does.
constexpr int kRingBlockBytes = 192 * 128;  // a block's K (192 keys x 128 bytes), and its Vt alike
// A Vt stage has room for two 128-byte boxes of 128 rows (the second half used at 192 keys); in
// 64-byte boxes the block takes three of 8 KB.
constexpr int kRingVtStageBytes = 2 * 128 * 128;
constexpr uint32_t kRingK = 16384, kRingVt = kRingK + 2 * kRingBlockBytes, kRingBars = kRingVt + 2 * kRingVtStageBytes;
constexpr int kRingSmemBytes = kRingBars + 64;

__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// kVtSwizzle: the Vt boxes' swizzle, 128 bytes or 64 (the kernel's at d128: 192-key rows).
template <int kMemory, int kVtSwizzle = 128>
__global__ void __launch_bounds__(384, 1) steady_loop_ring(int iters, const unsigned char* src, int src_blocks,
                                                            float fold, float* out) {
  using namespace kh_attention::sm90::detail;
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t bars = base + kRingBars;
  auto full_k = [&](int s) { return bars + 8 * s; };
  auto empty_k = [&](int s) { return bars + 8 * (2 + s); };
  auto full_v = [&](int s) { return bars + 8 * (4 + s); };
  auto empty_v = [&](int s) { return bars + 8 * (6 + s); };
  for (int i = threadIdx.x; i < kRingBars / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(smem)[i] = random_e4m3x4(i);
  if (threadIdx.x == 0)
    for (int s = 0; s < 2; ++s) {
      mbar_init(full_k(s), 1);
      mbar_init(full_v(s), 1);
      mbar_init(empty_k(s), 8);  // every consumer warp releases
      mbar_init(empty_v(s), 8);
    }
  if (threadIdx.x == 0) asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int warp = __shfl_sync(~0u, static_cast<int>(threadIdx.x / 32), 0);
  const int lane = threadIdx.x % 32;
  if (warp >= 8) {  // the producer warpgroup
    asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n");
    if (kMemory != 0 && warp == 8 && lane == 0)
      for (int b = 0; b < iters; ++b) {
        const int s = b % 2, parity = ((b / 2) & 1) ^ 1;
        const unsigned char* block =
            src + static_cast<size_t>(((blockIdx.x % 16) * 131 + b) % src_blocks) * 2 * kRingBlockBytes;
        if (kMemory == 1 && b >= 2) {  // nobody else waits for the loads: block b - 2's must land first
          mbar_wait(full_k(s), parity);  // (its phase: (b - 2) / 2; a second expect_tx before its phase completes is an error)
          mbar_wait(full_v(s), parity);
        }
        mbar_wait(empty_k(s), parity);
        mbar_expect_tx(full_k(s), kRingBlockBytes);
        bulk_load(base + kRingK + s * kRingBlockBytes, block, kRingBlockBytes, full_k(s));
        mbar_wait(empty_v(s), parity);
        mbar_expect_tx(full_v(s), kRingBlockBytes);
        bulk_load(base + kRingVt + s * kRingVtStageBytes, block + kRingBlockBytes, kRingBlockBytes, full_v(s));
      }
    if (kMemory != 0 && warp == 8 && lane == 0)
      for (int b = iters - 2; b < iters; ++b) {  // no copy may land after the CTA has left
        mbar_wait(full_k(b % 2), (b / 2) & 1);
        mbar_wait(full_v(b % 2), (b / 2) & 1);
      }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n");
  const int wg = warp / 4;
  const uint32_t s_q = base + wg * 8192;
  Accumulators a(true);
  float row_max[2] = {-1e30f, -1e30f}, row_sum[2] = {0.f, 0.f};
  uint32_t packs = 0;
  LoopSegments segments;
  auto wait_full = [&](uint32_t bar, int b) {
    if constexpr (kMemory == 2) mbar_wait(bar, (b / 2) & 1);
  };
  auto release = [&](uint32_t bar) {
    __syncwarp();
    if (lane == 0) mbar_arrive(bar);
  };
  auto k_stage = [&](int b) { return base + kRingK + (b % 2) * kRingBlockBytes; };
  auto vt_stage = [&](int b) { return base + kRingVt + (b % 2) * kRingVtStageBytes; };
  if (wg == 1) named_bar_arrive(1, 256);
  // Block 0: S alone.
  wait_full(full_k(0), 0);
  named_bar_sync(1 + wg, 256);
  issue_s<true>(a.s, s_q, k_stage(0));
  named_bar_arrive(1 + (wg + 1) % 2, 256);
  wgmma_wait<0>();
  fence_operands(a.s);
  release(empty_k(0));
  softmax_block<false>(a.s, row_max, row_sum, packs, fold);
  pack_p(a.s, a.pa);
  for (int it = 0; it + 1 < iters; ++it) {  // S of block it + 1 beside P V of block it
    long long t[6];
    t[0] = clock64();
    wait_full(full_k((it + 1) % 2), it + 1);
    named_bar_sync(1 + wg, 256);
    t[1] = clock64();
    fence_operands(a.s);
    issue_s<true>(a.s, s_q, k_stage(it + 1));
    fence_operands(a.o);
    wait_full(full_v(it % 2), it);
    issue_pv<kVtSwizzle>(a.o, a.pa, vt_stage(it));
    named_bar_arrive(1 + (wg + 1) % 2, 256);
    t[2] = clock64();
    wgmma_wait<1>();
    fence_operands(a.s);
    t[3] = clock64();
    release(empty_k((it + 1) % 2));
    softmax_block<false>(a.s, row_max, row_sum, packs, fold);
    t[4] = clock64();
    wgmma_wait<0>();
    fence_operands(a.o);
    release(empty_v(it % 2));
    pack_p(a.s, a.pa);
    t[5] = clock64();
    segments.add(it, t);
  }
  // The last block's P V.
  wait_full(full_v((iters - 1) % 2), iters - 1);
  named_bar_sync(1 + wg, 256);
  fence_operands(a.o);
  issue_pv<kVtSwizzle>(a.o, a.pa, vt_stage(iters - 1));
  if (wg == 0) named_bar_arrive(2, 256);
  wgmma_wait<0>();
  fence_operands(a.o);
  release(empty_v((iters - 1) % 2));
  keep(a.total() + row_sum[0] + static_cast<float>(packs), out);
  segments.store(wg);
}

void reset() {
  static const unsigned long long zero[4][8] = {};
  cudaMemcpyToSymbol(g_clocks, zero, sizeof zero);
}
void fetch(unsigned long long (&h)[4][8]) {
  cudaDeviceSynchronize();
  cudaMemcpyFromSymbol(h, g_clocks, sizeof h);
}

}  // namespace

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float* out = nullptr;
  cudaMalloc(&out, 16);
  unsigned long long h[4][8];
  constexpr int kIters = 1000;
  for (int w = 1; w <= 3; ++w) {
    reset();
    mufu_throughput<<<sms, 128 * w>>>(kIters, out);
    fetch(h);
    const double per_warp = static_cast<double>(h[0][0]) / h[0][1];
    printf("MUFU.EX2, %d warp(s) an SMSP: %.2f clocks a warp-instruction an SMSP (%.1f exp2 a clock an SM)\n", w,
           per_warp / (kIters * kMufuChains) / w, 4 * 32.0 * kMufuChains * kIters * w / per_warp);
  }
  constexpr int kBlocks = 200;
  for (int w = 1; w <= 2; ++w)
    for (int pack = 0; pack < 2; ++pack) {
      reset();
      if (pack)
        softmax_alone<true><<<sms, 128 * w>>>(kBlocks, 0.125f, out);
      else
        softmax_alone<false><<<sms, 128 * w>>>(kBlocks, 0.125f, out);
      fetch(h);
      printf("softmax of %d scores%s, %d warp(s) an SMSP: %.0f clocks a block a warp (its MUFU alone: %d)\n", kScores,
             pack ? " + e4m3 packs" : "", w, static_cast<double>(h[1][0]) / h[1][1] / kBlocks, 98 * 8 * w);
    }
  cudaFuncSetAttribute(products_alone, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  constexpr int kRounds = 2000;
  for (int random = 0; random < 2; ++random)
    for (int wgs = 1; wgs <= 2; ++wgs) {
      reset();
      products_alone<<<sms, 128 * wgs, kSmemBytes>>>(kRounds, random, out);
      fetch(h);
      for (int wg = 0; wg < wgs; ++wg)
        printf("products of a block (%s, %d warpgroup(s)) wg%d: S issue %.0f, P V issue %.0f, block %.0f clocks "
               "(at the e4m3 peak: 736 a warpgroup); SM clock %.0f MHz\n",
               random ? "random e4m3" : "zeros", wgs, wg, h[2][3 * wg] / double(kRounds),
               h[2][3 * wg + 1] / double(kRounds), h[2][3 * wg + 2] / double(kRounds), 1e3 * h[3][0] / double(h[3][1]));
    }
  // Each loop beside each kind of products (a row each; "alone" beside an idle warpgroup), then the
  // products beside no loop: clocks a block (softmax) or a warp-instruction (chains) of warpgroup 0's
  // warps, and a round of warpgroup 1's products while the loop runs / over all rounds.
  const char* loop_names[3] = {"softmax of 96 scores", "MUFU.EX2 chains", "FFMA chains"};
  const char* product_names[4] = {"alone", "beside S + P V (4 ss + 6 rs)", "beside S only (8 ss)",
                                  "beside P V only (12 rs)"};
  const int loop_iters[3] = {400, 1000, 6000};
  auto run_beside = [&](auto kernel, int loop, int products) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    reset();
    kernel<<<sms, 256, kSmemBytes>>>(loop < 3 ? loop_iters[loop] : 1, 2000, 0.125f, out);
    fetch(h);
    if (loop == 3) {
      printf("beside: %s, no loop: a round %llu clocks\n", product_names[products], h[2][1]);
      return;
    }
    const double n = loop == 0 ? loop_iters[0] : static_cast<double>(loop_iters[loop]) * kMufuChains;
    printf("beside: %s %s: %.2f clocks a %s", loop_names[loop], product_names[products],
           static_cast<double>(h[1][0]) / h[1][1] / n, loop == 0 ? "block a warp" : "warp-instruction an SMSP");
    if (products) printf("; a round of the products while it runs %llu clocks (all rounds: %llu)", h[2][0], h[2][1]);
    printf("\n");
  };
  run_beside(loop_beside_products<0, 0>, 0, 0);
  run_beside(loop_beside_products<0, 1>, 0, 1);
  run_beside(loop_beside_products<0, 2>, 0, 2);
  run_beside(loop_beside_products<0, 3>, 0, 3);
  run_beside(loop_beside_products<1, 0>, 1, 0);
  run_beside(loop_beside_products<1, 1>, 1, 1);
  run_beside(loop_beside_products<1, 2>, 1, 2);
  run_beside(loop_beside_products<1, 3>, 1, 3);
  run_beside(loop_beside_products<2, 0>, 2, 0);
  run_beside(loop_beside_products<2, 1>, 2, 1);
  run_beside(loop_beside_products<2, 2>, 2, 2);
  run_beside(loop_beside_products<2, 3>, 2, 3);
  run_beside(loop_beside_products<3, 1>, 3, 1);
  run_beside(loop_beside_products<3, 2>, 3, 2);
  run_beside(loop_beside_products<3, 3>, 3, 3);
  constexpr int kLoop = 400;
  // A steady loop's segments (LoopSegments), means over the blocks it summed.
  auto print_segments = [&](const char* what, double n) {
    for (int wg = 0; wg < 2; ++wg) {
      const unsigned long long* c = h[2 + wg];
      printf("%s wg%d: %.0f clocks a block: turn (+ K's wait) %.0f, issue (+ Vt's wait) %.0f, S's wait %.0f, "
             "softmax %.0f, retire %.0f\n",
             what, wg, (c[0] + c[1] + c[2] + c[3] + c[4]) / n, c[0] / n, c[1] / n, c[2] / n, c[3] / n, c[4] / n);
    }
  };
  auto run_loop = [&](auto kernel, const char* what) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    reset();
    kernel<<<sms, 256, kSmemBytes>>>(kLoop, 0.125f, out);
    fetch(h);
    print_segments(what, kLoop - 8);
  };
  run_loop(steady_loop<3>, "steady loop (products + softmax, turns)");
  run_loop(steady_loop<7>, "steady loop (products + softmax, no turns)");
  run_loop(steady_loop<1>, "steady loop (products alone, turns)");
  run_loop(steady_loop<2>, "steady loop (softmax alone, turns)");
  run_loop(steady_loop<3 | 8>, "steady loop (products + softmax without row sums, turns)");
  constexpr int kSrcBlocks = 64 * 1024 * 1024 / (2 * kRingBlockBytes);
  unsigned char* src = nullptr;
  cudaMalloc(&src, static_cast<size_t>(kSrcBlocks) * 2 * kRingBlockBytes);
  cudaMemset(src, 0x31, static_cast<size_t>(kSrcBlocks) * 2 * kRingBlockBytes);
  auto run_ring = [&](auto kernel, const char* what) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingSmemBytes);
    reset();
    kernel<<<sms, 384, kRingSmemBytes>>>(kLoop, src, kSrcBlocks, 0.125f, out);
    fetch(h);
    print_segments(what, kLoop - 9);
  };
  run_ring(steady_loop_ring<0>, "steady loop with rings (no loads)");
  run_ring(steady_loop_ring<2>, "steady loop with rings (loads waited for)");
  run_ring(steady_loop_ring<1>, "steady loop with rings (loads, not waited for)");
  run_ring(steady_loop_ring<2, 64>, "steady loop with rings (loads waited for, Vt in 64-byte boxes as the kernel's at d128)");
  cudaFree(src);
  const cudaError_t e = cudaGetLastError();
  printf("%s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
