// attention_fwd_sm90.cuh: FlashAttention forward for sm90a (Hopper): wgmma + TMA, warp-specialized,
// the kernel of attention_fwd and attention_varlen_fwd on the sm90a build.
//
// Same function as the sm80 kernel (attention_fwd_sm80.cuh): out = softmax(s) v over the keys
// each row sees (attention_visibility.hpp: bottom-right causal, a window to the left), s = scale
// q k^T (then softcap tanh(s / softcap)), lse optional, rows that see nothing give 0 / -inf.
// Tiles of 64 query rows per consumer warpgroup of one head (Sm90TileConfig, per head-dim
// bucket). attention_fwd: one persistent CTA per SM walks a static schedule of tiles (causal:
// longest first, see the kernel); attention_varlen_fwd, full attention: the same persistent
// grid over a list of the call's tiles that each CTA builds from cu_seqlens
// (attention_varlen_schedule.hpp: longest sequences first); other varlen calls: one CTA per
// tile of max_seqlen_q, so that the hardware deals the uneven tiles of sequences of unequal
// lengths (longest first there too), and tiles past a sequence's end exit at once.
// Warpgroups (setmaxnreg moves registers from the producer to the consumers):
//  - the last one, the producer: one thread issues TMA loads (swizzled boxes of 16, 32 or 64
//    columns) of each tile's Q, then of its K and V blocks into a ring of stages guarded by
//    full/empty mbarriers (the ring runs on across tiles, and Q of the next tile loads once
//    every S of this one is done); TMA zero-fills rows and columns outside the tensor (columns
//    past the call's head dim when the bucket is wider: they add zeros to S and give columns
//    of O that are never stored);
//  - the others, the consumers, 64 query rows each: S = Q K^T with wgmma (both operands from
//    shared memory), online softmax in fp32 registers (exp2 with the log2(e)-scaled scale
//    folded into its FFMA), O += P V with wgmma (P from registers in the A-fragment layout, V
//    from shared memory, N-major), each stage released as soon as its wgmma has completed. S
//    of the next key block is issued before P V of the current one, so the softmax overlaps
//    P V on the tensor cores (FlashAttention-3's intra-warpgroup pipelining), and, except at
//    two warpgroups non-causal, the consumer warpgroups take turns at the tensor cores (named
//    barriers), so that one's softmax runs under the others' products (FlashAttention-3's
//    ping-pong).
// A packed (varlen) K/V block at a sequence's end holds rows of the next sequence (or, after
// the last one, whatever the caller left there): their scores are masked, and the consumers
// zero those rows of V before P V reads them (0 x NaN would be NaN); Q rows of another sequence
// compute rows that are never stored.
// FP8 (e4m3 operands): V is transposed for P V by the producer's three spare warps, or, given the
// caller's workspace, once before the kernel by a pre-pass (attention_fp8_vt.cu), whose blocks the
// TMA thread then loads straight into the Vt stages.
// Included by the generated attention_fwd_sm90_qk<Q>_v<V>_<dtype>.cu only; built for sm_90a.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#ifdef KH_DEV_FP8_PROBE_TIMES
#include <cstdio>  // the probe's device printf
#endif
#include <type_traits>

#include "attention_cuda_common.cuh"
#include "attention_causal_schedule.hpp"
#include "attention_fwd_sm90.hpp"
#include "attention_varlen_schedule.hpp"
#include "attention_visibility.hpp"
#include "wgmma_sm90.cuh"

namespace kh_attention::sm90 {

template <ElementType kType> struct ElementOf;
template <> struct ElementOf<ElementType::kF16> { using type = __half; };
template <> struct ElementOf<ElementType::kBF16> { using type = __nv_bfloat16; };

// The operand type T of an instantiation: __half / __nv_bfloat16 (q, k, v and out of that type),
// or Fp8Operands<Out> for the FP8 prefill (attention_varlen_fwd_fp8 with an e4m3 q): q, k and v
// e4m3 bytes with float32 descale factors, out of type Out.
template <typename Out> struct Fp8Operands {};
template <typename T> struct Operands {
  using Mma = T;  // wgmma's operand type
  using Out = T;
  static constexpr int kBytes = 2;
  static constexpr bool kFp8 = false;
};
template <typename O> struct Operands<Fp8Operands<O>> {
  using Mma = __nv_fp8_e4m3;
  using Out = O;
  static constexpr int kBytes = 1;
  static constexpr bool kFp8 = true;
};

namespace detail {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
using cuda_common::mbar_wait;

// One swizzled box of `rows` x (swizzle / 2) columns from a 4-D tensor map whose dims are
// (head_dim, then row/head/batch in the order `o` gives).
__device__ __forceinline__ void tma_load_box(uint32_t dst, const CUtensorMap* map, TmaDimOrder o, uint32_t bar,
                                             int col, int row, int head, int batch) {
  const int c1 = o.row == 1 ? row : o.head == 1 ? head : batch;
  const int c2 = o.row == 2 ? row : o.head == 2 ? head : batch;
  const int c3 = o.row == 3 ? row : o.head == 3 ? head : batch;
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}

// FP8 with a workspace: one box of kVDim rows x kSwizzleVt key bytes of the transposed V
// (attention_fp8_vt.hpp; a 3-D map: columns, head-dim rows, KV heads), as a Vt stage holds it.
__device__ __forceinline__ void tma_load_vt_box(uint32_t dst, const CUtensorMap* map, uint32_t bar, int col, int head) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(0), "r"(head), "r"(bar)
      : "memory");
}

// A tile of `kRows` x kWidth elements of kElemBytes is kWidth / kBoxCols boxes of
// [kRows][kBoxCols = kSwizzle / kElemBytes], each box a run of swizzle atoms (8 rows x kSwizzle
// bytes).
template <int kRows, int kWidth, int kSwizzle, int kElemBytes = 2>
__device__ __forceinline__ void tma_load_tile(uint32_t dst, const CUtensorMap* map, TmaDimOrder o, uint32_t bar,
                                              int row0, int head, int batch) {
  constexpr int kBoxCols = kSwizzle / kElemBytes;
#pragma unroll
  for (int b = 0; b < kWidth / kBoxCols; ++b)
    tma_load_box(dst + b * kRows * kSwizzle, map, o, bar, b * kBoxCols, row0, head, batch);
}

// Byte offset of 16-byte chunk `chunk` of row `row` of a box of kSwizzle-byte rows, in the
// swizzle TMA writes and wgmma reads (Swizzle<log2(kSwizzle / 16), 4, 3>: the chunk index
// XORed with the row's byte address bits from 7 up).
template <int kSwizzle>
__device__ __forceinline__ int swizzled_chunk(int row, int chunk) {
  constexpr int kMask = kSwizzle / 16 - 1;
  return row * kSwizzle + ((chunk ^ ((row * kSwizzle >> 7) & kMask)) << 4);
}

using cuda_common::pack2;

// Named barriers 1..3 (0 is __syncthreads): the consumer warpgroups' turns at the tensor
// cores; 4..6: one consumer warpgroup's own 128 threads.
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Four e4m3 bytes (round to nearest even, saturating to +-448) in one register, `a` in the
// lowest byte: the A fragment of an FP8 wgmma holds four consecutive k columns a register.
__device__ __forceinline__ uint32_t pack4_e4m3(float a, float b, float c, float d) {
  const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
  return lo | (hi << 16);
}

// 16 zero bytes to shared memory, and the fence that orders such generic-proxy writes before
// the async proxy's reads (wgmma operands).
__device__ __forceinline__ void st_shared_zero16(uint32_t addr) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(addr), "r"(0) : "memory");
}
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

using cuda_common::fast_exp2;
using cuda_common::fast_tanh;

}  // namespace detail

#ifdef KH_DEV_FP8_PROBE_TIMES
// Development probe (FP8 instances only; never in a release build): where a consumer warpgroup's
// steady-state iteration spends its clocks. Warp 0 of each warpgroup adds each segment's SM clocks
// to these counters (every CTA), and a one-thread kernel after the call prints the means an
// iteration and zeroes them (cuda/NOTES.md, FP8 prefill). Segments (kProbeSegs): K's wait, the
// turn's wait, S's issue, the Vt stage's wait, P V's issue, S's wait, then per row half h of the
// softmax its max (mask, max, shuffles, correction) and its exp2 / sum, then P V's wait and
// release, O's rescale and P's packing. CTA 0 also records when each segment ended for
// kProbeTraceIters iterations from kProbeTraceFrom of its tiles (the last tile's stay): a timeline
// of both warpgroups on one SM clock, to see which segments of the two overlap, and the SM clock's
// rate over the tile's later iterations (the clock under the call's load). The clock reads
// inside the softmax keep ptxas from interleaving its two row halves (a release build does), so
// those segments read long; KH_DEV_FP8_PROBE_LIGHT (with this macro) records the timeline alone,
// without them and without the counters.
// static: each translation unit has its own (the library links several).
constexpr int kProbeSegs = 12, kProbeTraceFrom = 16, kProbeTraceIters = 6;
static __device__ unsigned long long g_fp8_probe[2][kProbeSegs + 1];  // the segments' clocks, then the count
static __device__ uint32_t g_fp8_trace[2][kProbeTraceIters][kProbeSegs];
// The SM clock and the global timer (ns) at warpgroup 0's first trace mark and at the end of each
// later iteration of the tile (the last stays): the SM clock's rate under the call's load.
static __device__ unsigned long long g_fp8_rate[2][2];  // [first, last][clock, ns]
static __global__ void fp8_probe_print_kernel(int d) {
  static const char* const names[kProbeSegs] = {"k_wait", "turn",   "issue_s", "vt_wait", "issue_pv", "s_wait",
                                                "max0",   "exp0",   "max1",    "exp1",    "pv_wait",  "rescale_pack"};
  for (int wg = 0; wg < 2; ++wg) {
    unsigned long long* c = g_fp8_probe[wg];
    const unsigned long long iterations = c[kProbeSegs];
    const double n = iterations ? static_cast<double>(iterations) : 1.0;
    printf("fp8 probe d%d wg%d: %llu iterations; clocks an iteration:", d, wg, iterations);
    for (int i = 0; i < kProbeSegs; ++i) printf(" %s %.0f", names[i], c[i] / n);
    printf("\n");
    for (int i = 0; i <= kProbeSegs; ++i) c[i] = 0;
  }
  // The timeline: when each segment ended, clocks from warpgroup 0's first K wait's end.
  const uint32_t t0 = g_fp8_trace[0][0][0];
  const unsigned long long clocks = g_fp8_rate[1][0] - g_fp8_rate[0][0], ns = g_fp8_rate[1][1] - g_fp8_rate[0][1];
  printf("fp8 trace d%d: %llu clocks in %llu ns: SM clock %.0f MHz\n", d, clocks, ns, ns ? 1e3 * clocks / ns : 0.0);
  for (int it = 0; it < kProbeTraceIters; ++it)
    for (int wg = 0; wg < 2; ++wg) {
      printf("fp8 trace d%d it%d wg%d:", d, kProbeTraceFrom + it, wg);
      for (int i = 0; i < kProbeSegs; ++i) printf(" %s %d", names[i], static_cast<int>(g_fp8_trace[wg][it][i] - t0));
      printf("\n");
    }
}
#endif

// Which code a call needs beyond full attention at a positive scale. Each addition costs
// registers the consumers (160 a thread with three warpgroups) do not have to spare (ptxas
// spilled 76-172 bytes a thread at d = 64-96 with all of it in one kernel: cuda/NOTES.md), so
// each is its own instantiation:
//   kFixed    attention_fwd without window or soft-cap, scale > 0;
//   kVarlen   attention_varlen_fwd likewise: per-sequence offsets and lengths from cu_seqlens,
//             full attention on the persistent grid (the tile list of
//             attention_varlen_schedule.hpp, up to kSchedSeqs sequences), else one CTA per
//             tile; V rows past a packed sequence zeroed;
//   kGeneral  anything else: a window (a lower bound in the mask), a soft-cap or a scale <= 0
//             (scores transformed before the max), either op.
// A head dim below the bucket's needs nothing but the store predicate (TMA zero-fills the
// columns), which every mode has.
enum class Sm90Mode { kFixed, kVarlen, kGeneral };

// One tile of the schedule: query rows [m0, m0 + kBlockM) of a sequence and head (only rows
// in [0, len_q) are valid), the key blocks it visits, and where its sequence's rows are.
struct Sm90Tile {
  int m0 = 0, head = 0, batch = 0;
  int len_q = 0, len_k = 0;
  int q_row0 = 0, k_row0 = 0;  // packed row of the sequence's row 0 (varlen), else 0
  int tma_batch = 0;           // the tensor maps' batch coordinate (varlen: 0)
  TileVisibility<int> vis;
  __device__ int n_blocks() const { return vis.blocks(); }
};

// The consumer warpgroups' part of a tile: S = Q K^T, online softmax, O += P V over the key
// blocks, then the epilogue (out, lse).
template <int kQKDim, int kVDim, typename T, bool kCausal, Sm90Mode kMode>
__device__ __forceinline__ void consume_tile(const FwdLaunchParams& p, unsigned char* o_stage, uint32_t sQ,
                                             uint32_t sK, uint32_t sV, uint32_t bars, const Sm90Tile& tl, int warp,
                                             int lane, int kv_base, int q_phase) {
  using namespace detail;
  using Ops = Operands<T>;
  using Out = typename Ops::Out;
  constexpr bool kFp8 = Ops::kFp8;
  using Cfg = Sm90TileConfig<kQKDim, kVDim, Ops::kBytes>;
  constexpr int kBlockM = Cfg::kBlockM;
  constexpr int kBlockN = Cfg::kBlockN;
  constexpr int kStagesK = Cfg::kStagesK, kStagesV = Cfg::kStagesV;
  constexpr int kStagesPV = kFp8 ? Cfg::kStagesVt : kStagesV;  // the ring P V reads
  constexpr int kSwzQK = Cfg::kSwizzleQK, kSwzV = Cfg::kSwizzleV, kSwzVt = Cfg::kSwizzleVt, kSwzO = Cfg::kSwizzleO;
  constexpr int kBoxQK = kSwzQK / Ops::kBytes, kBoxO = kSwzO / 2;  // columns per box
  constexpr int kKStep = 32 / Ops::kBytes;  // k columns of one wgmma (32 bytes)
  constexpr int kNTiles = kBlockN / 8;  // 8-key column tiles of S
  constexpr int kDTiles = kVDim / 8;    // 8-column tiles of O
  constexpr float kLog2e = 1.4426950408889634f;
  constexpr float kLn2 = 0.6931471805599453f;
  using MmaS = Wgmma<kBlockN, typename Ops::Mma>;
  using MmaO = Wgmma<kVDim, typename Ops::Mma>;
  constexpr int kWgs = Cfg::kConsumerWarpgroups;
  // Ping-pong of the consumer warpgroups (below) everywhere but two warpgroups non-causal,
  // where it measured 1-3% slower at d = 128 on the H200 (and causal +10%, d = 64 with three
  // warpgroups +30%).
  // FP8 takes it everywhere: once the V transposer stopped setting the pace, its softmax (exp2 on
  // the MUFU unit, 16 a clock an SM, as busy as the tensor cores) gained from running beside the
  // other warpgroup's products: d128 s8k full +6-8%, d256 +1% (H100, A/B in one run; it had
  // measured 0.98-1.03x while the transposer was the bound: cuda/NOTES.md, FP8 prefill).
  constexpr bool kPingPong = kCausal || kWgs == 3 || kFp8;
  constexpr bool kGeneral = kMode == Sm90Mode::kGeneral;
  const uint32_t q_full = bars;
  auto full_k = [&](int s) { return bars + 8 * (1 + s); };
  auto full_v = [&](int s) { return bars + 8 * (1 + kStagesK + s); };
  auto empty_k = [&](int s) { return bars + 8 * (1 + kStagesK + kStagesV + s); };
  auto empty_v = [&](int s) { return bars + 8 * (1 + 2 * kStagesK + kStagesV + s); };
  const uint32_t q_empty = bars + 8 * (1 + 2 * kStagesK + 2 * kStagesV);
  // P V's operand: V as loaded, or (FP8) the transposers' Vt stage: ready / consumed.
  constexpr int kVtBar = 2 + 2 * kStagesK + 2 * kStagesV;
  auto v_ready = [&](int s) { return kFp8 ? bars + 8 * (kVtBar + s) : full_v(s); };
  auto v_done = [&](int s) { return kFp8 ? bars + 8 * (kVtBar + Cfg::kStagesVt + s) : empty_v(s); };
  // Ring positions of this tile's block it: stage and phase parity in the K ring and in the
  // ring P V reads.
  auto stage = [&](int it) { return (kv_base + it) % kStagesK; };
  auto phase = [&](int it) { return ((kv_base + it) / kStagesK) & 1; };
  auto pv_stage = [&](int it) { return (kv_base + it) % kStagesPV; };
  auto pv_phase = [&](int it) { return ((kv_base + it) / kStagesPV) & 1; };
  const int n_blocks = tl.n_blocks();

  const int wg = warp >> 2;
  const int wg_warp = warp & 3;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int wg_row0 = wg * 64;                   // this warpgroup's rows in the tile
  const int warp_row0 = wg_row0 + wg_warp * 16;  // this warp's rows in the tile

  float acc_o[MmaO::kRegs];
#pragma unroll
  for (int i = 0; i < MmaO::kRegs; ++i) acc_o[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY};  // of the log2-domain scores
  float row_sum[2] = {0.f, 0.f};              // this thread's partial sums

  if (n_blocks > 0) {
    // FP8: the scores are of the e4m3 values, q k^T times q_scale k_scale (per tensor or per KV
    // head), folded into the score scale; v_scale multiplies O in the epilogue.
    float descale_qk = 1.f;
    if constexpr (kFp8) {
      const int kv_head = tl.head / (p.heads_q / p.heads_kv);
      descale_qk = p.q_scale[kv_head * p.q_scale_stride] * p.k_scale[kv_head * p.k_scale_stride];
    }
    const float scale_log2 = p.scale * kLog2e * descale_qk;
    // The scores reach the exp2 domain in the exponent's FFMA (a factor `fold` on the raw
    // max and scores) unless the max does not commute with that factor: a soft-cap
    // (cap * tanh) or a scale <= 0. Then they are transformed first and fold is 1.
    const bool prescale = kGeneral && (p.softcap > 0.f || !(p.scale > 0.f));
    const float fold = prescale ? 1.f : scale_log2;
    float acc_s[MmaS::kRegs];         // S of the block in flight, then its probabilities P
    uint32_t pa[kBlockN / kKStep][4];  // P of the block whose P V runs, as wgmma A fragments

    // S = Q K^T of the block in ring stage s (issued, not waited for). k-step kk covers
    // columns kKStep kk.. (32 bytes): box (kKStep kk) / kBoxQK, at (kKStep kk) % kBoxQK columns
    // into its rows.
    auto issue_qk = [&](int s) {
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kQKDim / kKStep; ++kk) {
        const uint32_t box = (kk * kKStep) / kBoxQK, koff = ((kk * kKStep) % kBoxQK) * Ops::kBytes;
        const uint64_t da =
            smem_desc<kSwzQK>(sQ + box * kBlockM * kSwzQK + wg_row0 * kSwzQK + koff, 16, 8 * kSwzQK);
        const uint64_t db =
            smem_desc<kSwzQK>(sK + s * Cfg::kKStage + box * kBlockN * kSwzQK + koff, 16, 8 * kSwzQK);
        MmaS::ss(acc_s, da, db, kk > 0 ? 1 : 0);
      }
      wgmma_commit();
    };
#ifdef KH_DEV_FP8_PROBE_TIMES
    uint32_t probe_t = static_cast<uint32_t>(clock());
    int probe_it = 0;  // steady iterations of this tile so far
#ifdef KH_DEV_FP8_PROBE_LIGHT
    // Light: CTA 0's timeline only, at the ends of K's wait, the turn, P V's issue, S's wait, the
    // softmax and the retire (no counters, and no clock reads inside the softmax, whose two row
    // halves ptxas then interleaves as in a release build).
    constexpr unsigned kProbed = 1u << 0 | 1u << 1 | 1u << 4 | 1u << 5 | 1u << 9 | 1u << 11;
    constexpr bool kCount = false;
#else
    constexpr unsigned kProbed = (1u << kProbeSegs) - 1;
    constexpr bool kCount = true;
#endif
    auto probe = [&](int seg) {
      if (!((kProbed >> seg) & 1u)) return;
      const uint32_t now = static_cast<uint32_t>(clock());
      if (kFp8 && wg_warp == 0 && lane == 0) {
        if (kCount) atomicAdd(&g_fp8_probe[wg & 1][seg], now - probe_t);
        const int slot = probe_it - kProbeTraceFrom;
        if (blockIdx.x == 0 && slot >= 0 && slot < kProbeTraceIters) g_fp8_trace[wg & 1][slot][seg] = now;
        const bool first = slot == 0 && seg == 0, later = slot >= 0 && seg == kProbeSegs - 1;
        if (blockIdx.x == 0 && wg == 0 && (first || later)) {
          unsigned long long ns;
          asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
          g_fp8_rate[first ? 0 : 1][0] = clock64();
          g_fp8_rate[first ? 0 : 1][1] = ns;
        }
        if (seg == kProbeSegs - 1) {
          if (kCount) atomicAdd(&g_fp8_probe[wg & 1][kProbeSegs], 1ull);
          ++probe_it;
        }
      }
      probe_t = now;
    };
#else
    auto probe = [](int) {};
#endif
    // Online softmax of acc_s (acc_s[4j + e]: row g + 8 (e / 2), column 8j + 2t + e % 2):
    // updates the running max and sum, leaves P in acc_s and the factor O must be scaled by.
    // FP8: the max and the sum of a row run as kChains independent chains. Tried as a cure for the
    // FP8 kernel's stalls, it measured the same as one chain (H100; in the 16-bit kernel 0.94-1.0x,
    // so that keeps one): cuda/NOTES.md, FP8 prefill, run 5. Kept in the FP8 instances, being what
    // their GPU checks ran.
    constexpr int kChains = kFp8 ? 4 : 1;
    auto softmax = [&](int n_block, float (&correction)[2]) {
      if (prescale) {
        if (p.softcap > 0.f) {
          const float over_softcap = kFp8 ? p.scale_over_softcap * descale_qk : p.scale_over_softcap;
#pragma unroll
          for (int i = 0; i < MmaS::kRegs; ++i) acc_s[i] = p.softcap_log2 * fast_tanh(acc_s[i] * over_softcap);
        } else {
#pragma unroll
          for (int i = 0; i < MmaS::kRegs; ++i) acc_s[i] *= scale_log2;
        }
      }
      const int key0 = n_block * kBlockN;
      if (tl.vis.needs_mask(n_block, kBlockN)) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = tl.m0 + warp_row0 + g + 8 * h;
          const KeyRange<int> seen = visible_keys<int>(row, tl.len_q, tl.len_k, kCausal, kGeneral ? p.window_left : -1);
#pragma unroll
          for (int j = 0; j < kNTiles; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int key = key0 + j * 8 + 2 * t + e;
              // Without a window no key falls off the left end of a row's range.
              if ((kGeneral && key < seen.lo) || key >= seen.end) acc_s[4 * j + 2 * h + e] = -INFINITY;
            }
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mxs[kChains];
#pragma unroll
        for (int a = 0; a < kChains; ++a) mxs[a] = -INFINITY;
#pragma unroll
        for (int j = 0; j < kNTiles; ++j)
          mxs[j % kChains] = fmaxf(mxs[j % kChains], fmaxf(acc_s[4 * j + 2 * h], acc_s[4 * j + 2 * h + 1]));
        float mx = mxs[0];
#pragma unroll
        for (int a = 1; a < kChains; ++a) mx = fmaxf(mx, mxs[a]);
        // fold > 0, so max(fold s) = fold max(s): the factor is applied in the exponent's
        // FFMA below instead of a multiply per score.
        mx = fmaxf(row_max[h], mx * fold);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float base_max = mx == -INFINITY ? 0.f : mx;  // fully masked so far: keep exp2 at 0, not NaN
        correction[h] = fast_exp2(row_max[h] - base_max);
        row_max[h] = mx;
        probe(6 + 2 * h);
        float sums[kChains];
#pragma unroll
        for (int a = 0; a < kChains; ++a) sums[a] = 0.f;
#pragma unroll
        for (int j = 0; j < kNTiles; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float pv = fast_exp2(fmaf(acc_s[4 * j + 2 * h + e], fold, -base_max));
            acc_s[4 * j + 2 * h + e] = pv;
            sums[j % kChains] += pv;
          }
        float sum = sums[0];
#pragma unroll
        for (int a = 1; a < kChains; ++a) sum += sums[a];
        row_sum[h] = row_sum[h] * correction[h] + sum;
        probe(7 + 2 * h);
      }
    };
    // P as A fragments. 16-bit: register r of k-step kk holds row g + 8 (r % 2), columns
    // 8 (r / 2) + 2t, +1: exactly this thread's S registers. FP8: register r holds row g + 8 (r % 2)
    // and four columns 16 (r / 2) + 4t..+3 of the step's 32 keys, while this thread's S has keys
    // 8j + 2t, +1 of the step's four 8-key tiles j; so each register takes the thread's keys
    // 2t, 2t + 1, 8 + 2t, 9 + 2t (+16) of the row, and the transposers put V's keys in the same
    // order (key 8 (i / 2) + 2t + i % 2 at position 4t + i of each 16: transpose_v_block).
    auto pack_p = [&] {
      if constexpr (kFp8) {
#pragma unroll
        for (int kk = 0; kk < kBlockN / 32; ++kk) {
          const float* a = acc_s + 16 * kk;
          pa[kk][0] = pack4_e4m3(a[0], a[1], a[4], a[5]);
          pa[kk][1] = pack4_e4m3(a[2], a[3], a[6], a[7]);
          pa[kk][2] = pack4_e4m3(a[8], a[9], a[12], a[13]);
          pa[kk][3] = pack4_e4m3(a[10], a[11], a[14], a[15]);
        }
      } else {
#pragma unroll
        for (int kk = 0; kk < kBlockN / 16; ++kk) {
          pa[kk][0] = pack2<T>(acc_s[8 * kk + 0], acc_s[8 * kk + 1]);
          pa[kk][1] = pack2<T>(acc_s[8 * kk + 2], acc_s[8 * kk + 3]);
          pa[kk][2] = pack2<T>(acc_s[8 * kk + 4], acc_s[8 * kk + 5]);
          pa[kk][3] = pack2<T>(acc_s[8 * kk + 6], acc_s[8 * kk + 7]);
        }
      }
    };
    auto release = [&](uint32_t bar) {
      __syncwarp();
      if (lane == 0) mbar_arrive(bar);
    };

    // O += P V of the block in ring stage s (issued, not waited for). 16-bit: k-step kk covers
    // keys 16 kk..16 kk + 15, 16 rows of every box of V (N-major). FP8: sV is the Vt ring
    // (K-major, [key boxes][kVDim rows][kSwzVt bytes]); k-step kk covers keys 32 kk.. of box
    // (32 kk) / kSwzVt.
    auto issue_pv = [&](int s) {
      wgmma_fence();
      if constexpr (kFp8) {
#pragma unroll
        for (int kk = 0; kk < kBlockN / 32; ++kk) {
          const uint32_t box = (kk * 32) / kSwzVt, koff = (kk * 32) % kSwzVt;
          const uint64_t db =
              smem_desc<kSwzVt>(sV + s * Cfg::kVtStage + box * Cfg::kVtBoxBytes + koff, 16, 8 * kSwzVt);
          MmaO::rs(acc_o, pa[kk], db, 1);
        }
      } else {
#pragma unroll
        for (int kk = 0; kk < kBlockN / 16; ++kk) {
          const uint64_t db =
              smem_desc<kSwzV>(sV + s * Cfg::kVStage + kk * 16 * kSwzV, kBlockN * kSwzV, 8 * kSwzV);
          MmaO::template rs<1>(acc_o, pa[kk], db, 1);
        }
      }
      wgmma_commit();
    };
    // Packed sequences: the first block of a tile (its last keys) may run past the sequence;
    // its V rows from len_k on belong to another sequence or to no one, and P V would turn a
    // NaN there into NaN rows (0 x NaN). Each consumer warpgroup zeroes those rows of every V
    // box before its own P V (both write the same zeros: the bytes are 0 whichever lands
    // last), fences them for the async proxy and syncs its 128 threads. (FP8: the transposers
    // write those keys of Vt as zeros.)
    const int v_tail = tl.n_blocks() > 0 ? tl.len_k - (tl.vis.n_hi - 1) * kBlockN : kBlockN;
    const bool zero_tail = !kFp8 && kMode != Sm90Mode::kFixed && p.cu_seqlens_k != nullptr && v_tail < kBlockN;
    auto zero_v_tail = [&](int s) {
      constexpr int kBoxV = kSwzV / Ops::kBytes;
      constexpr int kBoxes = kVDim / kBoxV, kRowChunks = kSwzV / 16;
      const int per_box = (kBlockN - v_tail) * kRowChunks;
      const int wg_tid = wg_warp * 32 + lane;
      for (int i = wg_tid; i < kBoxes * per_box; i += 128) {
        const int b = i / per_box, j = i - b * per_box;
        st_shared_zero16(sV + s * Cfg::kVStage + b * kBlockN * kSwzV + v_tail * kSwzV + j * 16);
      }
      fence_proxy_async_shared();
      named_bar_sync(4 + wg, 128);
    };

    auto rescale_o = [&](const float (&correction)[2]) {
      // Most blocks leave every row max of a warp as it was: skip the multiplies then.
      if (!__any_sync(0xffffffffu, correction[0] != 1.f || correction[1] != 1.f)) return;
#pragma unroll
      for (int j = 0; j < kDTiles; ++j) {
        acc_o[4 * j + 0] *= correction[0];
        acc_o[4 * j + 1] *= correction[0];
        acc_o[4 * j + 2] *= correction[1];
        acc_o[4 * j + 3] *= correction[1];
      }
    };
    // Ping-pong: the consumer warpgroups take turns at issuing their products (named barrier
    // 1 + wg: this warpgroup's turn; it passes the turn to the next one), so that one's
    // softmax runs while the tensor cores work on the others' S and P V. Warpgroup 0 goes
    // first; per tile each warpgroup waits for its turn n_blocks + 1 times and is passed it
    // as often (the last warpgroup's start-up pass stands in for its final one).
    auto turn_sync = [&] {
      if constexpr (kPingPong) named_bar_sync(1 + wg, 256);  // this warpgroup and the one passing the turn
    };
    auto turn_pass = [&] {
      if constexpr (kPingPong) named_bar_arrive(1 + (wg + 1) % kWgs, 256);
    };
    float correction[2];
    if (wg == kWgs - 1) turn_pass();
    // Prologue: S and P of the first block (the last key block: masking comes first).
    mbar_wait(q_full, q_phase);
    mbar_wait(full_k(stage(0)), phase(0));
    turn_sync();
    issue_qk(stage(0));
    turn_pass();
    wgmma_wait<0>();
    fence_operands(acc_s);
    release(empty_k(stage(0)));
    softmax(tl.vis.n_hi - 1, correction);  // O is still zero: no rescale
    pack_p();
    // Varlen mode zeroes the first block's V tail here rather than in the steady-state loop:
    // there, the conditional barrier (taken or not) sat between the wgmma of S and that of P V,
    // where the varlen instance waited on the tensor cores twice as often as attention_fwd's
    // (Nsight Compute, same work: 12% slower; cuda/NOTES.md, varlen). The general mode keeps the
    // loop's place: here it spilled 20-24 more bytes a thread at d = 80 and 96 (causal).
    constexpr bool kZeroFirst = kMode == Sm90Mode::kVarlen;
    if (kZeroFirst && zero_tail) {
      mbar_wait(v_ready(pv_stage(0)), pv_phase(0));
      zero_v_tail(pv_stage(0));
    }

    // Steady state: S of block it + 1 runs on the tensor cores beside P V of block it, and
    // its softmax overlaps that P V (FlashAttention-3's intra-warpgroup pipelining). The loop
    // has no conditional wgmma, so that ptxas can tell which group wait<1> retires (else it
    // serializes them, warning C7514).
    // Before block it's P V (at the end of the previous iteration): P V of block it - 1 done, its
    // V stage released, O rescaled to the running max, P of block it packed. ptxas hoists the wait
    // above the softmax; moved to the top of the next iteration, where it cannot, the wait let the
    // softmax overlap P V and gained nothing with the workspace, and without it cost 9% (the V stage
    // released later holds up the transposers; cuda/NOTES.md, FP8 prefill).
#ifdef KH_DEV_FP8_STRIP
    // Dev probe (FP8 instances; wrong results): what a part of the steady loop costs, by leaving it
    // out. 1: the softmax (P is S as it came); 2: O's rescale.
    constexpr int kStrip = kFp8 ? KH_DEV_FP8_STRIP : 0;
#else
    constexpr int kStrip = 0;
#endif
    auto retire_pv = [&](int it) {
      wgmma_wait<0>();
      fence_operands(acc_o);
      if (it > 0) release(v_done(pv_stage(it - 1)));
      probe(10);
      if constexpr (kStrip != 2) rescale_o(correction);
      pack_p();
      probe(11);
    };
    int it = 0;
    for (; it + 1 < n_blocks; ++it) {
      const int s = pv_stage(it);
      const int s_next = stage(it + 1);
      mbar_wait(full_k(s_next), phase(it + 1));
      probe(0);
      turn_sync();
      probe(1);
      fence_operands(acc_s);
      issue_qk(s_next);
      probe(2);
      fence_operands(acc_o);
      mbar_wait(v_ready(s), pv_phase(it));
      probe(3);
      if (!kZeroFirst && it == 0 && zero_tail) zero_v_tail(s);
      issue_pv(s);
      turn_pass();
      probe(4);
      wgmma_wait<1>();  // S of block it + 1 is done; P V of block it may still run
      fence_operands(acc_s);
      probe(5);
      release(empty_k(s_next));
      if constexpr (kStrip == 1)
        correction[0] = correction[1] = 1.f;
      else
        softmax(tl.vis.n_hi - 2 - it, correction);
      retire_pv(it + 1);
    }
    // Every S of the tile is done: the producer may load the next Q tile.
    release(q_empty);
    // The last block's P V.
    const int s = pv_stage(it);
    mbar_wait(v_ready(s), pv_phase(it));
    if (!kZeroFirst && it == 0 && zero_tail) zero_v_tail(s);
    turn_sync();
    fence_operands(acc_o);
    issue_pv(s);
    if (wg != kWgs - 1) turn_pass();
    wgmma_wait<0>();
    fence_operands(acc_o);
    release(v_done(s));
  }

  // Epilogue: normalize, write lse, store the call's columns of O: staged in this warp's 16
  // rows of the staging tile (V's layout; its own tile, as the next Q may be landing) and
  // stored as 16-byte chunks, or (kStageO false) from registers, 4 bytes a lane.
  Out* const out = static_cast<Out*>(p.out) + tl.batch * p.o_batch_stride + tl.head * p.o_head_stride;
  const int out_chunks = p.head_dim_v / 8;
  float descale_v = 1.f;
  if constexpr (kFp8) descale_v = p.v_scale[(tl.head / (p.heads_q / p.heads_kv)) * p.v_scale_stride];
  __syncwarp();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = row_sum[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const float inv = sum > 0.f ? descale_v / sum : 0.f;
    const int r = warp_row0 + g + 8 * h;
    const bool row_valid = tl.m0 + r >= 0 && tl.m0 + r < tl.len_q;  // causal tile 0 may start above row 0
    const int64_t row = static_cast<int64_t>(tl.q_row0) + tl.m0 + r;
    if (p.lse != nullptr && t == 0 && row_valid)
      p.lse[tl.batch * p.lse_batch_stride + tl.head * p.lse_head_stride + row * p.lse_row_stride] =
          sum > 0.f ? (row_max[h] + log2f(sum)) * kLn2 : -INFINITY;
#pragma unroll
    for (int j = 0; j < kDTiles; ++j) {
      const uint32_t packed = pack2<Out>(acc_o[4 * j + 2 * h] * inv, acc_o[4 * j + 2 * h + 1] * inv);
      if constexpr (Cfg::kStageO) {
        const int box = j / (kBoxO / 8), chunk = j % (kBoxO / 8);
        *reinterpret_cast<uint32_t*>(o_stage + box * kBlockM * kSwzO + swizzled_chunk<kSwzO>(r, chunk) + 4 * t) =
            packed;
      } else if (row_valid && j < out_chunks) {
        *reinterpret_cast<uint32_t*>(out + row * p.o_row_stride + j * 8 + 2 * t) = packed;
      }
    }
  }
  if constexpr (Cfg::kStageO) {
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 16 * kDTiles / 32; ++i) {
      const int idx = lane + i * 32;
      const int r = warp_row0 + idx / kDTiles;
      const int cc = idx % kDTiles;
      const int box = cc / (kBoxO / 8), chunk = cc % (kBoxO / 8);
      if (tl.m0 + r >= 0 && tl.m0 + r < tl.len_q && cc < out_chunks)
        *reinterpret_cast<uint4*>(out + (static_cast<int64_t>(tl.q_row0) + tl.m0 + r) * p.o_row_stride + cc * 8) =
            *reinterpret_cast<const uint4*>(o_stage + box * kBlockM * kSwzO + swizzled_chunk<kSwzO>(r, chunk));
    }
  }
}

// Whether an instance may deal causal varlen calls by pair items (attention_varlen_schedule.hpp,
// "Causal pair lists"): the two-warpgroup buckets (d > 96) in varlen mode; the launch decides per
// call (launch_attention_fwd_sm90).
template <int kQKDim, bool kCausal, Sm90Mode kMode, bool kFp8 = false>
constexpr bool kSm90PairListCapable = kMode == Sm90Mode::kVarlen && kCausal && kQKDim > 96 && !kFp8;

// Every thread of the CTA places its sequences b = tid, tid + threads, ... in a list of the
// sequences by key (attention_varlen_schedule.hpp, step 2): keys[b] and entries[b] as step 1 left
// them in shared memory.
template <typename Cfg>
__device__ __forceinline__ void rank_varlen_sequences(const FwdLaunchParams& p, const int32_t* keys,
                                                      const int32_t* entries, int32_t* first_tile,
                                                      int32_t* seq_of_rank) {
  for (int b = static_cast<int>(threadIdx.x); b < p.batch; b += Cfg::kThreads) {
    const VarlenRank r = varlen_seq_rank(keys, entries, p.batch, b);
    seq_of_rank[r.rank] = b;
    first_tile[r.rank] = r.first_tile;
    if (r.rank == p.batch - 1) first_tile[p.batch] = r.first_tile + entries[b];
  }
  // These generic-proxy accesses to the Q tile come before the producer's TMA writes to it.
  detail::fence_proxy_async_shared();
}

// The tile list of a persistent varlen grid (attention_varlen_schedule.hpp, steps 1 and 2), by
// every thread of the CTA before the roles split: the sequences' keys and tile counts go to
// `scratch` (the Q tile, free until the producer's first load), then each thread places its
// sequences. Every CTA builds the same list from the same cu_seqlens. Not inlined: inlined into
// the kernel it made ptxas spill 208 bytes a consumer thread at d = 96 (160 registers), though
// it runs before the consumers' setmaxnreg.
template <typename Cfg>
__device__ __noinline__ void build_varlen_tile_list(const FwdLaunchParams& p, int32_t* scratch, int32_t* first_tile,
                                                    int32_t* seq_of_rank) {
  int32_t* const keys = scratch;
  int32_t* const tiles = scratch + Cfg::kSchedSeqs;
  for (int b = static_cast<int>(threadIdx.x); b < p.batch; b += Cfg::kThreads) {
    const SeqBounds s = launch_seq_bounds<true>(p, b);
    keys[b] = varlen_seq_key(s, Cfg::kBlockN);
    tiles[b] = varlen_seq_tiles(s, Cfg::kBlockM, p.heads_q);
  }
  __syncthreads();
  rank_varlen_sequences<Cfg>(p, keys, tiles, first_tile, seq_of_rank);
}

// The causal pair list (attention_varlen_schedule.hpp, "Causal pair lists"), as above: the
// sequences' pair keys and query tiles, then each one's entries (pair items, or tiles in the
// tail) and the count of those outside the tail (*cut, the first tail rank), then the ranks.
template <typename Cfg>
__device__ __noinline__ void build_varlen_pair_list(const FwdLaunchParams& p, int32_t* scratch, int32_t* first_tile,
                                                    int32_t* seq_of_rank, int32_t* cut, int32_t tail_rounds) {
  int32_t* const keys = scratch;
  int32_t* const tiles = scratch + Cfg::kSchedSeqs;
  int32_t* const entries = scratch + 2 * Cfg::kSchedSeqs;
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) *cut = 0;
  for (int b = tid; b < p.batch; b += Cfg::kThreads) {
    const SeqBounds s = launch_seq_bounds<true>(p, b);
    keys[b] = varlen_pair_key(s, Cfg::kBlockM, Cfg::kBlockN);
    tiles[b] = static_cast<int32_t>((s.len_q + Cfg::kBlockM - 1) / Cfg::kBlockM);
  }
  __syncthreads();
  const int grid = static_cast<int>(gridDim.x);
  for (int b = tid; b < p.batch; b += Cfg::kThreads) {
    const bool tail = varlen_pair_in_tail(keys, tiles, p.batch, b, p.heads_q, grid, tail_rounds);
    entries[b] = varlen_pair_entries(tiles[b], p.heads_q, tail);
    if (!tail) atomicAdd(cut, 1);
  }
  __syncthreads();
  rank_varlen_sequences<Cfg>(p, keys, entries, first_tile, seq_of_rank);
}

// The causal list of a persistent varlen grid (attention_varlen_schedule.hpp, "Causal lists"):
// list[0] = the number of items, list[1 + rank] = item (sequence, tile from its end). Each
// sequence's keys and tile count go to `scratch` (the Q tile) first; then item i of the
// sequences' tiles in order is thread i % kThreads's, placed at its rank (O(batch) each). The
// launch bounds items x batch (Sm90TileConfig::kSchedWork). Not inlined, as above.
template <typename Cfg>
__device__ __noinline__ void build_varlen_causal_list(const FwdLaunchParams& p, int32_t* scratch, int32_t* list) {
  int32_t* const len_k = scratch;
  int32_t* const tiles = scratch + Cfg::kSchedSeqs;
  const int tid = static_cast<int>(threadIdx.x);
  for (int b = tid; b < p.batch; b += Cfg::kThreads) {
    const SeqBounds s = launch_seq_bounds<true>(p, b);
    len_k[b] = static_cast<int32_t>(s.len_k);
    tiles[b] = static_cast<int32_t>((s.len_q + Cfg::kBlockM - 1) / Cfg::kBlockM);
  }
  __syncthreads();
  int32_t first = 0, phase = 0;  // items before sequence b, and that count mod kThreads
  for (int b = 0; b < p.batch; ++b) {
    const int32_t nt = tiles[b];
    for (int32_t j = (tid - phase + Cfg::kThreads) % Cfg::kThreads; j < nt; j += Cfg::kThreads)
      list[1 + varlen_causal_rank(len_k, tiles, p.batch, b, j, Cfg::kBlockM, Cfg::kBlockN)] = varlen_causal_item(b, j);
    first += nt;
    phase = (phase + nt) % Cfg::kThreads;
  }
  if (tid == 0) list[0] = first;
  detail::fence_proxy_async_shared();
}

// The dealing of a pair list's rounds (attention_varlen_schedule.hpp, "Causal pair lists"), by
// the producer warpgroup's three other warps (st: 0..95) while the CTA works: the work of every
// CTA of the grid, round after round, and this CTA's slot of rounds 1, 2, ... into the ring (-1:
// none, in the last round only). Round 0 needs no dealing (slot blockIdx.x), so the CTA starts
// at once; the rounds after it take the three warps ~1 us each, far less than a round of tiles,
// and run ahead of their use by up to kPairRing rounds, held back by the ring's empty barriers
// (ring_bars: kPairRing full ones, then kPairRing empty ones). A thread keeps the work ranks of
// CTAs st and st + 96 (grid <= kPairMaxGrid) in registers: the producer warpgroup has few.
template <typename Cfg>
__device__ __forceinline__ void simulate_pair_rounds(const FwdLaunchParams& p, const int32_t* first_tile,
                                                     const int32_t* seq_of_rank, int32_t cut, int32_t slots,
                                                     int32_t* work, int32_t* cost, int32_t* item_of_rank,
                                                     volatile int32_t* ring, uint32_t ring_bars, int st,
                                                     bool tile_major_tail) {
  constexpr int kThreads = Cfg::kPairSimThreads;
  constexpr int kBar = 7;  // named barrier: 1..6 are the consumers'
  const int g = static_cast<int>(gridDim.x), me = static_cast<int>(blockIdx.x);
  auto slot_cost = [&](int s) {
    const VarlenSlot v = varlen_pair_slot_at(first_tile, seq_of_rank, p.batch, p.heads_q, cut, s, tile_major_tail);
    const SeqBounds b = launch_seq_bounds<true>(p, v.seq);
    const int32_t tiles = static_cast<int32_t>((b.len_q + Cfg::kBlockM - 1) / Cfg::kBlockM);
    return varlen_pair_slot_cost(v, static_cast<int32_t>(b.len_k), tiles, Cfg::kBlockM, Cfg::kBlockN);
  };
  for (int i = st; i < g; i += kThreads) work[i] = i < slots ? slot_cost(i) : 0;
  detail::named_bar_sync(kBar, kThreads);
  for (int r = 1; r < (slots + g - 1) / g; ++r) {
    const int base = r * g, m = slots - base < g ? slots - base : g;
    for (int i = st; i < m; i += kThreads) cost[i] = slot_cost(base + i);
    detail::named_bar_sync(kBar, kThreads);
    for (int i = st; i < m; i += kThreads) item_of_rank[lpt_cost_rank(cost, m, i)] = i;
    const int i1 = st + kThreads;
    const int rank0 = st < g ? lpt_work_rank(work, g, st) : g;
    const int rank1 = i1 < g ? lpt_work_rank(work, g, i1) : g;
    detail::named_bar_sync(kBar, kThreads);
    auto take = [&](int i, int rank) {
      const int item = rank < m ? item_of_rank[rank] : -1;
      if (item >= 0) work[i] += cost[item];
      if (i == me) {
        const int e = (r - 1) % Cfg::kPairRing;
        detail::mbar_wait(ring_bars + 8 * (Cfg::kPairRing + e), (((r - 1) / Cfg::kPairRing) & 1) ^ 1);
        ring[e] = item >= 0 ? base + item : -1;
        detail::mbar_arrive(ring_bars + 8 * e);
      }
    };
    if (st < g) take(st, rank0);
    if (i1 < g) take(i1, rank1);
    detail::named_bar_sync(kBar, kThreads);
  }
}

// FP8: one piece of a key block of V (Cfg::kVKeys keys from key0 of the block: the whole block, or
// half of it at d = 256), as TMA left it in a V stage (src: [boxes][kVKeys keys][kSwizzleV bytes
// of columns], swizzled), written transposed into its keys' columns of a Vt stage (dst: [key boxes]
// [kVDim rows][kSwizzleVt bytes of keys], swizzled as wgmma reads a K-major operand) by the
// transposer warps (wt: 0 .. kTransposeWarps - 1). Within every 16 keys, key 8 (i / 2) + 2t + i % 2
// goes to position 4t + i: the order the P fragments hold them (consume_tile's pack_p). Keys from
// `valid` (counted from the piece's first) on (another sequence's rows, or past the tensor) are
// written as zeros, so that P V never meets their bytes (0 x NaN).
// A warp moves 16 keys x 32 columns (512 bytes) a step: ldmatrix.x4.trans reads them as four 8 x 8
// matrices of 16-bit pairs (keys 0-7 / 8-15 x columns 0-15 / 16-31), so that lane 4c + t holds,
// of each, keys 2t and 2t + 1 of column pair c; two byte permutes a pair of matrices make the
// words of columns 2c and 2c + 1 with keys 2t, 2t + 1, 8 + 2t, 9 + 2t (positions 4t..4t + 3);
// stmatrix.x4 writes them as four 8-row matrices whose rows are Vt rows 2j, 2j + 1, 16 + 2j,
// 17 + 2j. Both sides are swizzled, so the eight 16-byte rows of each matrix fall in distinct
// banks (the stores' rows 2j: in four, a 2-way conflict). A warp takes items of up to four
// steps (a 16-key group's columns, or half of them at d = 256), their loads in flight together;
// the swizzles' XOR terms depend on the lane alone (a group's 16 rows and a step's 32 Vt rows
// are whole periods), so a step costs its two matrix instructions, four byte permutes and two
// adds. (The first ldmatrix version computed both addresses per step: ~1260 warp instructions
// a 16 KB block, a fifth of the kernel's; this one ran +7% at d128, +23% at d256 on the H100:
// NOTES.md, FP8 prefill.)
template <typename Cfg>
__device__ __forceinline__ void transpose_v_block(uint32_t src, uint32_t dst, int key0, int valid, int wt, int lane) {
  constexpr int kVDim = Cfg::kVDimBytes, kKeys = Cfg::kVKeys;
  constexpr int kSwzV = Cfg::kSwizzleV, kSwzVt = Cfg::kSwizzleVt;
  constexpr int kColBlocks = kVDim / 32;                            // 32-column steps a 16-key group
  constexpr int kStepsPerItem = kColBlocks < 4 ? kColBlocks : 4;    // the steps one item does at once
  constexpr int kSplit = kColBlocks / kStepsPerItem;                // items a 16-key group
  constexpr int kItems = (kKeys / 16) * kSplit;
  const int m = lane >> 3, j = lane & 7;  // this lane's matrix and row (the addresses it gives)
  const int t = lane & 3;
  const int ld_key = j + 8 * (m & 1), ld_chunk = m >> 1;  // of the 16-key x 32-byte step
  const int st_row = 2 * j + (m & 1) + 16 * (m >> 1);    // of the 32 Vt rows of the step
  // A 16-key group's rows are whole swizzle periods (8 rows) of both layouts, and a step's 32
  // Vt rows too: the XOR terms depend on this lane's row within them only.
  const int ld_xor = ((ld_key * kSwzV) >> 7) & (kSwzV / 16 - 1);
  const int st_xor = ((st_row * kSwzVt) >> 7) & (kSwzVt / 16 - 1);
  const bool tail = valid < kKeys;
  for (int item = wt; item < kItems; item += Cfg::kTransposeWarps) {
    const int kg = item / kSplit, cb0 = (item % kSplit) * kStepsPerItem;
    const int key = 16 * kg + ld_key, pos = 16 * kg;
    uint32_t r[kStepsPerItem][4];
#pragma unroll
    for (int c = 0; c < kStepsPerItem; ++c) {  // every load first: kStepsPerItem in flight
      const int col = 32 * (cb0 + c) + 16 * ld_chunk;
      const uint32_t addr = src + (col / kSwzV) * (kKeys * kSwzV) + key * kSwzV +
                            ((((col % kSwzV) / 16) ^ ld_xor) << 4);
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(r[c][0]), "=r"(r[c][1]), "=r"(r[c][2]), "=r"(r[c][3])
                   : "r"(addr)
                   : "memory");
    }
    if (tail) {  // bytes of keys past `valid`: r[][0], r[][2] hold keys 2t, 2t + 1, r[][1], r[][3] 8 more
      const int k0 = pos + 2 * t;
      const uint32_t lo = (k0 < valid ? 0xffffu : 0u) | (k0 + 1 < valid ? 0xffff0000u : 0u);
      const uint32_t hi = (k0 + 8 < valid ? 0xffffu : 0u) | (k0 + 9 < valid ? 0xffff0000u : 0u);
#pragma unroll
      for (int c = 0; c < kStepsPerItem; ++c) r[c][0] &= lo, r[c][2] &= lo, r[c][1] &= hi, r[c][3] &= hi;
    }
    const int vt_pos = key0 + pos;  // of the block's keys
    const uint32_t vt_box = dst + (vt_pos / kSwzVt) * Cfg::kVtBoxBytes + ((((vt_pos % kSwzVt) / 16) ^ st_xor) << 4);
#pragma unroll
    for (int c = 0; c < kStepsPerItem; ++c) {
      const uint32_t e0 = __byte_perm(r[c][0], r[c][1], 0x6420), e1 = __byte_perm(r[c][0], r[c][1], 0x7531);
      const uint32_t e2 = __byte_perm(r[c][2], r[c][3], 0x6420), e3 = __byte_perm(r[c][2], r[c][3], 0x7531);
      const uint32_t addr = vt_box + (32 * (cb0 + c) + st_row) * kSwzVt;
      asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(e0), "r"(e1),
                   "r"(e2), "r"(e3)
                   : "memory");
    }
  }
}

template <int kQKDim, int kVDim, typename T, bool kCausal, Sm90Mode kMode>
__global__ void __launch_bounds__(Sm90TileConfig<kQKDim, kVDim, Operands<T>::kBytes>::kThreads, 1)
    attention_fwd_sm90_kernel(const __grid_constant__ FwdLaunchParams p, const __grid_constant__ FwdTensorMaps maps,
                              const bool varlen_listed, const bool varlen_pairs, const int varlen_pair_tail) {
  using namespace detail;
  constexpr bool kFp8 = Operands<T>::kFp8;
  using Cfg = Sm90TileConfig<kQKDim, kVDim, Operands<T>::kBytes>;
  constexpr int kBlockM = Cfg::kBlockM;
  constexpr int kBlockN = Cfg::kBlockN;
  constexpr int kStagesK = Cfg::kStagesK, kStagesV = Cfg::kStagesV, kStagesVt = Cfg::kStagesVt;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  unsigned char* const smem = smem_raw + (base - raw);
  const uint32_t sQ = base;
  const uint32_t sK = base + Cfg::kKOffset;  // [kStagesK][boxes][kBlockN][box columns]
  const uint32_t sV = base + Cfg::kVOffset;  // [kStagesV][boxes][kBlockN][box columns]
  const uint32_t sVt = base + Cfg::kVtOffset;  // FP8: [kStagesVt][key boxes][kVDim][kSwizzleVt bytes]
  const uint32_t bars = base + Cfg::kBarOffset;  // q_full, full_k[], full_v[], empty_k[], empty_v[], q_empty
  unsigned char* const o_stage = smem + Cfg::kOOffset;
  const uint32_t q_full = bars;
  auto full_k = [&](int s) { return bars + 8 * (1 + s); };
  auto full_v = [&](int s) { return bars + 8 * (1 + kStagesK + s); };
  auto empty_k = [&](int s) { return bars + 8 * (1 + kStagesK + kStagesV + s); };
  auto empty_v = [&](int s) { return bars + 8 * (1 + 2 * kStagesK + kStagesV + s); };
  const uint32_t q_empty = bars + 8 * (1 + 2 * kStagesK + 2 * kStagesV);
  // Pair lists: the ring of this CTA's slots, a full and an empty barrier an entry.
  constexpr int kRingBar = 2 + 2 * kStagesK + 2 * kStagesV;
  auto ring_full = [&](int e) { return bars + 8 * (kRingBar + e); };
  auto ring_empty = [&](int e) { return bars + 8 * (kRingBar + Cfg::kPairRing + e); };
  // FP8: the Vt ring's barriers (written by the transposers, read by the consumers' P V).
  auto vt_full = [&](int s) { return bars + 8 * (kRingBar + s); };
  auto vt_empty = [&](int s) { return bars + 8 * (kRingBar + kStagesVt + s); };

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  // FP8 given a workspace: the pre-pass (attention_fp8_vt.cu) wrote V transposed there, and the
  // TMA thread loads the Vt stages itself; unless the sequences' padded lengths did not fit the
  // workspace (col0[batch] past its columns), when the producer's other warps transpose as without.
  const bool vt_global = kFp8 && p.vt != nullptr && p.vt_col0[p.batch] <= p.vt_columns;

  const bool varlen = kMode == Sm90Mode::kVarlen || (kMode == Sm90Mode::kGeneral && p.cu_seqlens_q != nullptr);
  // Varlen on the persistent grid: tiles from the list every CTA builds below
  // (attention_varlen_schedule.hpp) after the barriers: full attention, and causal pair lists,
  // first_tile[batch + 1] and seq_of_rank[batch], and for pair lists the first tail rank and
  // the dealing's state (Sm90TileConfig::pair_sched_bytes); other causal lists, the item count and
  // the items. The host sets varlen_listed only for such calls, and varlen_pairs for the causal
  // calls of the two-warpgroup buckets that get a pair list (sm90_varlen_pair_list).
  constexpr bool kListable = kMode == Sm90Mode::kVarlen;
  constexpr bool kPairCapable = kSm90PairListCapable<kQKDim, kCausal, kMode, kFp8>;
  static_assert(!kPairCapable || kRingBar + 2 * Cfg::kPairRing <= Cfg::kBarriers, "no room for the ring's barriers");
  const bool listed = kListable && varlen_listed;
  const bool pair_listed = kPairCapable && listed && varlen_pairs;
  const bool tile_major_tail = varlen_pair_tail == static_cast<int>(VarlenPairTail::kTileMajor);
  int32_t* const sched_first = reinterpret_cast<int32_t*>(smem + Cfg::kSchedOffset);
  int32_t* const sched_seq = sched_first + p.batch + 1;
  int32_t* const pair_cut = sched_seq + p.batch;
  int32_t* const lpt_work = pair_cut + 1;                   // [gridDim.x]
  int32_t* const lpt_cost = lpt_work + gridDim.x;           // [gridDim.x]
  int32_t* const lpt_item = lpt_cost + gridDim.x;           // [gridDim.x]
  volatile int32_t* const lpt_ring = lpt_item + gridDim.x;  // [kPairRing]
  const int window_left = kMode == Sm90Mode::kGeneral ? p.window_left : -1;
  const int m_blocks = (p.seqlen_q + kBlockM - 1) / kBlockM;  // varlen: of max_seqlen_q
  // attention_fwd's causal tiles end at the last query row, so the partial tile (seqlen_q %
  // kBlockM rows) is the first one, which sees the fewest keys, and not the last, which sees
  // them all: its rows above row 0 are TMA zero fill, masked, and never stored. (s = 4k at
  // d = 64: 4224 rows in 192-row tiles; aligned at row 0, the padding cost 6% of a causal call.)
  const int m_shift = kCausal ? m_blocks * kBlockM - p.seqlen_q : 0;
  const int heads_batches = p.heads_q * p.batch;
  int num_tiles = m_blocks * heads_batches;  // listed: the list's length, once it is built
  const int group = p.heads_q / p.heads_kv;
  // attention_fwd causal without a window at two consumer warpgroups (d >= 128): the pair
  // schedule of attention_causal_schedule.hpp (CTAs side by side on a few heads, K and V from
  // L2; on the H200 +14% at b4 s4k h16 d192, +17% at d256, +6% at d128; 2.1 -> 0.35 GB from
  // DRAM at d192). At three warpgroups (d <= 96, less K/V a head) it measured 2-4% slower than
  // the longest-first order, which those keep. The plan (a few integer ops) is computed where
  // it is used.
  const bool pairs = kCausal && !varlen && window_left < 0 && Cfg::kConsumerWarpgroups == 2;
  auto plan = [&] { return causal_pair_plan(m_blocks, heads_batches, static_cast<int>(gridDim.x)); };
  // Tile order. attention_fwd non-causal: q block fastest, then head, then batch, so that
  // CTAs running side by side share K and V in L2. Causal: the pair schedule above, or
  // longest first across all heads (q block slowest), so that the short tiles come last and
  // fill the gaps (longest-processing-time order). Varlen (one CTA per tile, dealt by the
  // hardware in order): q block slowest too, counted from each sequence's end for causal calls (the
  // tiles that see the most keys first) and from max_seqlen_q down for the others (the tiles
  // only long sequences have first); tiles past a sequence's rows are empty. Listed (varlen on
  // the persistent grid): tile t of the list, which holds only tiles with rows; full attention:
  // longest sequences first, q block fastest; causal: (sequence, tile) items by cost, head
  // fastest.
  auto tile_of = [&](int t) {
    Sm90Tile tl;
    int hb;
    if (varlen) {
      int m_block = 0, m_idx = 0;
      bool tail = false;  // pair lists: a single tile of the tail
      if (pair_listed) {
        // Position t is the long (even t) or short (odd t) tile of slot t / 2; a tail slot has
        // its tile at even t only.
        const VarlenSlot v = varlen_pair_slot_at(sched_first, sched_seq, p.batch, p.heads_q, *pair_cut, t >> 1,
                                                 tile_major_tail);
        tl.head = v.head;
        tl.batch = v.seq;
        m_block = v.item;
        m_idx = v.item;
        tail = v.tail;
      } else if (listed) {
        const VarlenTile v = kCausal ? varlen_causal_tile_at(sched_first + 1, p.heads_q, t)
                                     : varlen_tile_at(sched_first, sched_seq, p.batch, p.heads_q, t);
        tl.head = v.head;
        tl.batch = v.seq;
        m_block = v.m_block;  // causal: the tile's place from the sequence's end
        m_idx = v.m_block;
      } else {
        m_idx = t / heads_batches;
        hb = t % heads_batches;
        tl.head = hb % p.heads_q;
        tl.batch = hb / p.heads_q;
      }
      const SeqBounds s = launch_seq_bounds<true>(p, tl.batch);
      tl.len_q = static_cast<int>(s.len_q);
      tl.len_k = static_cast<int>(s.len_k);
      tl.q_row0 = static_cast<int>(s.q_start);
      tl.k_row0 = static_cast<int>(s.k_start);
      if (pair_listed && !tail) {
        m_idx = varlen_pair_tile((tl.len_q + kBlockM - 1) / kBlockM, m_block, t & 1);
        // The short half of a middle item: no tile (no rows, no keys: nothing loaded or stored).
        if (m_idx < 0) tl.len_q = 0, m_idx = 0;
      }
      tl.m0 = kCausal ? tl.len_q - (m_idx + 1) * kBlockM
              : listed ? m_block * kBlockM
                       : (m_blocks - 1 - m_idx) * kBlockM;
    } else {
      int m_block;
      if (pairs) {
        const CausalTile c = causal_pair_tile(plan(), t);
        m_block = c.m_block;
        hb = c.head;
      } else if constexpr (kCausal) {
        m_block = m_blocks - 1 - t / heads_batches;
        hb = t % heads_batches;
      } else {
        m_block = m_blocks - 1 - t % m_blocks;
        hb = t / m_blocks;
      }
      tl.head = hb % p.heads_q;
      tl.batch = hb / p.heads_q;
      tl.tma_batch = tl.batch;
      tl.len_q = p.seqlen_q;
      tl.len_k = p.seqlen_k;
      tl.m0 = m_block * kBlockM - m_shift;
    }
    tl.vis = tile_visibility<int>(tl.m0, kBlockM, tl.len_q, tl.len_k, kCausal, window_left, kBlockN);
    return tl;
  };
  // The k-th tile this CTA takes (num_tiles: none left): rounds of gridDim.x tiles; causal
  // and listed rounds alternate direction (CTA i takes position i of even rounds and
  // gridDim.x - 1 - i of odd ones), so long and short tiles pair up across rounds. A grid of
  // num_tiles CTAs (varlen, not listed) takes one tile each. Pair lists: pair_walk below.
  auto scheduled = [&](int k) {
    const int g = static_cast<int>(gridDim.x), b = static_cast<int>(blockIdx.x);
    if (pairs) return causal_pair_position(plan(), k, b);
    const int pos = k * g + (((kCausal || listed) && (k & 1)) ? g - 1 - b : b);
    return pos < num_tiles ? pos : num_tiles;
  };
  // Pair lists: this CTA's next tile (num_tiles: none left), the slot of each round in turn
  // (round 0: slot blockIdx.x; later ones from the ring the dealing fills, simulate_pair_rounds)
  // and both tiles of a pair slot. Every consumer warp and the producer's issuing thread walk
  // the list so; each releases a ring entry once it has read it (a warp: its lane 0, after all
  // lanes' reads).
  struct PairWalk {
    int round = -1, slot = 0, sub = 1;
    bool pair = false;
  };
  auto pair_walk = [&](PairWalk& w) {
    if (w.pair && w.sub == 0) {
      w.sub = 1;
      return 2 * w.slot + 1;
    }
    const int g = static_cast<int>(gridDim.x), slots = num_tiles >> 1;
    ++w.round;
    if (w.round * g >= slots) return num_tiles;
    int s = static_cast<int>(blockIdx.x);
    if (w.round == 0) {
      if (s >= slots) return num_tiles;
    } else {
      const int e = (w.round - 1) % Cfg::kPairRing;
      mbar_wait(ring_full(e), ((w.round - 1) / Cfg::kPairRing) & 1);
      s = lpt_ring[e];
      __syncwarp(__activemask());
      if (lane == 0) mbar_arrive(ring_empty(e));
      if (s < 0) return num_tiles;  // no slot in the last round
    }
    w.slot = s;
    w.sub = 0;
    w.pair = varlen_rank_at(sched_first, p.batch, s) < *pair_cut;
    return 2 * s;
  };
  // A varlen CTA (one per tile) whose tile holds no row of its sequence has nothing to write.
  if (varlen && !listed) {
    const Sm90Tile tl = tile_of(static_cast<int>(blockIdx.x));
    if (!(tl.m0 < tl.len_q && tl.m0 + kBlockM > 0)) return;
  }
  if constexpr (kListable) {
    if (listed) {
      if constexpr (kPairCapable) {
        if (pair_listed)
          build_varlen_pair_list<Cfg>(p, reinterpret_cast<int32_t*>(smem), sched_first, sched_seq, pair_cut,
                                      varlen_pair_tail == static_cast<int>(VarlenPairTail::kNone) ? 0
                                                                                                  : kVarlenPairTailRounds);
        else build_varlen_causal_list<Cfg>(p, reinterpret_cast<int32_t*>(smem), sched_first);
      } else if constexpr (kCausal) {
        build_varlen_causal_list<Cfg>(p, reinterpret_cast<int32_t*>(smem), sched_first);
      } else {
        build_varlen_tile_list<Cfg>(p, reinterpret_cast<int32_t*>(smem), sched_first, sched_seq);
      }
    }
  }

  if (tid == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < kStagesK; ++s) {
      mbar_init(full_k(s), 1);
      mbar_init(empty_k(s), Cfg::kConsumerWarps);
    }
    for (int s = 0; s < kStagesV; ++s) {
      mbar_init(full_v(s), 1);
      // FP8: the transposers read V; the consumers read their Vt.
      mbar_init(empty_v(s), kFp8 ? Cfg::kTransposeWarps : Cfg::kConsumerWarps);
    }
    for (int s = 0; s < kStagesVt; ++s) {
      mbar_init(vt_full(s), vt_global ? 1 : Cfg::kTransposeWarps);
      mbar_init(vt_empty(s), Cfg::kConsumerWarps);
    }
    mbar_init(q_empty, Cfg::kConsumerWarps);
    if (pair_listed)
      for (int e = 0; e < Cfg::kPairRing; ++e) {
        mbar_init(ring_full(e), 1);
        mbar_init(ring_empty(e), Cfg::kConsumerWarps + 1);  // every consumer warp and the producer's thread
      }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (listed)
    num_tiles = pair_listed ? 2 * sched_first[p.batch] : kCausal ? sched_first[0] * p.heads_q : sched_first[p.batch];
  // The next tile of this CTA, by pair_walk or scheduled (k: the tiles taken so far).
  auto next_tile = [&](int k, PairWalk& w) { return pair_listed ? pair_walk(w) : scheduled(k); };

  if (warp >= Cfg::kConsumerWarps) {  // producer warpgroup; one thread issues every copy
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Cfg::kProducerRegs));
    if (pair_listed && warp > Cfg::kConsumerWarps) {
      // The producer warpgroup's other three warps deal the pair list's rounds ahead of use.
      if constexpr (kPairCapable)
        simulate_pair_rounds<Cfg>(p, sched_first, sched_seq, *pair_cut, num_tiles >> 1, lpt_work, lpt_cost, lpt_item,
                                  lpt_ring, bars + 8 * kRingBar, tid - (Cfg::kConsumerWarps + 1) * 32,
                                  tile_major_tail);
    } else if (kFp8 && warp > Cfg::kConsumerWarps) {
      // FP8: the other three warps transpose each V block the TMA thread loads into the Vt ring,
      // walking the same tiles and blocks (with V transposed in the workspace: nothing to do).
      if constexpr (kFp8) {
        if (vt_global) return;
        const int wt = warp - Cfg::kConsumerWarps - 1;
        int kv = 0;
        PairWalk walk;
        for (int k = 0, t; (t = next_tile(k, walk)) < num_tiles; ++k) {
          const Sm90Tile tl = tile_of(t);
          const int n_blocks = tl.n_blocks();
          for (int it = 0; it < n_blocks; ++it, ++kv) {
            const int n_block = tl.vis.n_hi - 1 - it;
            const int st = kv % kStagesVt;
#pragma unroll
            for (int h = 0; h < Cfg::kVSplit; ++h) {  // the block's V pieces, a V stage each
              // (waits and arrives in the order of the one-piece code before the pieces, which keeps
              // those instances' code as it was)
              const int vp = kv * Cfg::kVSplit + h, sv = vp % kStagesV;
              mbar_wait(full_v(sv), (vp / kStagesV) & 1);
              if (h == 0) mbar_wait(vt_empty(st), ((kv / kStagesVt) & 1) ^ 1);
              transpose_v_block<Cfg>(sV + sv * Cfg::kVStage, sVt + st * Cfg::kVtStage, h * Cfg::kVKeys,
                                     tl.len_k - n_block * kBlockN - h * Cfg::kVKeys, wt, lane);
              fence_proxy_async_shared();  // the generic-proxy writes before the consumers' wgmma reads
              __syncwarp();
              if (lane == 0) {
                if (h == Cfg::kVSplit - 1) mbar_arrive(vt_full(st));
                mbar_arrive(empty_v(sv));
              }
            }
          }
        }
      }
    } else if (warp == Cfg::kConsumerWarps && lane == 0) {
      int kv = 0;       // K/V blocks loaded so far (ring position)
      int q_tiles = 0;  // Q tiles loaded so far
      PairWalk walk;
      for (int k = 0, t; (t = next_tile(k, walk)) < num_tiles; ++k) {
        const Sm90Tile tl = tile_of(t);
        const int n_blocks = tl.n_blocks();
        if (n_blocks == 0) continue;
        const int kv_head = tl.head / group;
        const int vt_col0 = vt_global ? p.vt_col0[tl.batch] : 0;  // the sequence's first column there
        mbar_wait(q_empty, (q_tiles & 1) ^ 1);  // a fresh barrier passes parity 1
        mbar_expect_tx(q_full, Cfg::kQBytes);
        tma_load_tile<kBlockM, kQKDim, Cfg::kSwizzleQK, Operands<T>::kBytes>(sQ, &maps.q, maps.q_order, q_full,
                                                                             tl.q_row0 + tl.m0, tl.head, tl.tma_batch);
        ++q_tiles;
        for (int it = 0; it < n_blocks; ++it, ++kv) {
          const int n_block = tl.vis.n_hi - 1 - it;
          const int sk = kv % kStagesK;
          mbar_wait(empty_k(sk), ((kv / kStagesK) & 1) ^ 1);
          mbar_expect_tx(full_k(sk), Cfg::kKBytes);
          tma_load_tile<kBlockN, kQKDim, Cfg::kSwizzleQK, Operands<T>::kBytes>(
              sK + sk * Cfg::kKStage, &maps.k, maps.k_order, full_k(sk), tl.k_row0 + n_block * kBlockN, kv_head,
              tl.tma_batch);
          if constexpr (kFp8) {
            if (vt_global) {  // the block's columns of the transposed V, straight into a Vt stage
              const int st = kv % kStagesVt;
              mbar_wait(vt_empty(st), ((kv / kStagesVt) & 1) ^ 1);
              mbar_expect_tx(vt_full(st), Cfg::kVtBytes);
#pragma unroll
              for (int box = 0; box < kBlockN / Cfg::kSwizzleVt; ++box)
                tma_load_vt_box(sVt + st * Cfg::kVtStage + box * Cfg::kVtBoxBytes, &maps.vt, vt_full(st),
                                vt_col0 + n_block * kBlockN + box * Cfg::kSwizzleVt, kv_head);
              continue;
            }
          }
          // V piece vp of the ring (a block is Sm90TileConfig::kVSplit pieces) from key row `row`.
          auto load_v = [&](int vp, int row) {
            const int sv = vp % kStagesV;
            mbar_wait(empty_v(sv), ((vp / kStagesV) & 1) ^ 1);
            mbar_expect_tx(full_v(sv), Cfg::kVBytes);
            tma_load_tile<Cfg::kVKeys, kVDim, Cfg::kSwizzleV, Operands<T>::kBytes>(
                sV + sv * Cfg::kVStage, &maps.v, maps.v_order, full_v(sv), row, kv_head, tl.tma_batch);
          };
          if constexpr (Cfg::kVSplit == 1) {  // written as before the pieces: those instances compile as they did
            load_v(kv, tl.k_row0 + n_block * kBlockN);
          } else {
#pragma unroll
            for (int h = 0; h < Cfg::kVSplit; ++h)
              load_v(kv * Cfg::kVSplit + h, tl.k_row0 + n_block * kBlockN + h * Cfg::kVKeys);
          }
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Cfg::kConsumerRegs));
    int kv = 0, q_tiles = 0;
    PairWalk walk;
    for (int k = 0, t; (t = next_tile(k, walk)) < num_tiles; ++k) {
      const Sm90Tile tl = tile_of(t);
      consume_tile<kQKDim, kVDim, T, kCausal, kMode>(p, o_stage, sQ, sK, kFp8 ? sVt : sV, bars, tl, warp, lane, kv,
                                                     q_tiles & 1);
      if (tl.n_blocks() > 0) {
        kv += tl.n_blocks();
        ++q_tiles;
      }
    }
  }
}

// attention_fwd: a persistent grid, one CTA per SM, tiles dealt statically (the next tile's Q
// and K/V loads overlap this one's last products and epilogue). Non-causal: +2% at s = 4k,
// +10% at s = 1k on the H200 against one CTA per tile. Causal, with the longest-first snake
// order: d = 64 +2-9%, d = 128 -3% (s = 1k) to +3-6% (s >= 8k); dealt round-robin in the
// q-block order instead, it lost 40% at d = 64 s = 4k (every CTA drew the same q block). At
// d >= 128 the causal pair schedule has since replaced the snake order (see the kernel).
// attention_varlen_fwd, full attention, up to kSchedSeqs sequences: the persistent grid over
// the list each CTA builds (a tile's cost is its sequence's key blocks; the list puts the
// longest sequences first). With one CTA per tile instead (the 1.1.0 path, still that of causal
// and general varlen calls and of a development build's comparison switch) every tile paid its
// prologue and the grid of max_seqlen_q tiles per sequence its empty CTAs: 0.81x of
// attention_fwd's TFLOP/s on the H200 at lengths 8k/1k/5k/2k and 2k/1k/4k/1k/3k/1k/2k/2k.
// Causal varlen: its tiles' costs differ within a sequence, so its list is of (sequence, tile)
// items sorted by cost (a list of tiles by sequence balanced worse in a model than the hardware's
// dealing of one CTA per tile, cuda/NOTES.md); up to kSchedItems items bound by max_seqlen_q and
// items x batch <= kSchedWork, else one CTA per tile. The two-warpgroup buckets (d >= 128) take a
// list by sequence of pair items instead (tiles j and T - 1 - j of a head cost about the same:
// attention_varlen_schedule.hpp, "Causal pair lists"), head-major, so that the CTAs side by side
// read a few heads' K and V from L2 (cuda/NOTES.md, run 15: +11-15% on the 2k mix at d192 / d256),
// with a tail of single tiles, dealt a round at a time longest first onto the least loaded CTAs
// (dealt in snake rounds, pairs were too coarse to end the grid evenly), in calls of at least six
// rounds of pairs.
template <int kQKDim, int kVDim, typename T, bool kCausal, Sm90Mode kMode>
cudaError_t launch_attention_fwd_sm90(const FwdLaunchParams& p, const FwdTensorMaps& maps, cudaStream_t stream) {
  using Cfg = Sm90TileConfig<kQKDim, kVDim, Operands<T>::kBytes>;
  constexpr bool kListable = kMode == Sm90Mode::kVarlen;
  constexpr bool kPairCapable = kSm90PairListCapable<kQKDim, kCausal, kMode, Operands<T>::kFp8>;
  // The room of the largest list the instance may build (pair lists: all the room there is).
  constexpr int kItemBytes = Cfg::causal_sched_bytes(Cfg::kSchedItems), kSeqBytes = Cfg::sched_bytes(Cfg::kSchedSeqs);
  constexpr int kSchedMax = !kCausal ? kSeqBytes : kPairCapable ? Cfg::kSchedRoom : kItemBytes;
  constexpr int kSmemMax = Cfg::kSmemBytes + (kListable ? kSchedMax : 0);
  static_assert(kSmemMax <= 227 * 1024, "over the sm90 shared-memory limit per CTA");
  auto kernel = attention_fwd_sm90_kernel<kQKDim, kVDim, T, kCausal, kMode>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax);
  if (err != cudaSuccess) return err;
  const bool varlen = p.cu_seqlens_q != nullptr;
  // Tiles of max_seqlen_q per sequence (listed: an upper bound on the list's length).
  const int64_t items = static_cast<int64_t>((p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM) * p.batch;
  const int64_t tiles = items * p.heads_q;
  const int64_t persistent_grid = std::min<int64_t>(tiles, sm90_sm_count());
  // Causal pair lists where there are at least 6 rounds of pairs by total_q (the host's bound on
  // the rows): smaller calls measured 3-28% slower with them on the H200 (3 x 2176 and 2 x 1024
  // tokens, 16 heads; cuda/NOTES.md), as their short tiles end before the dealing's warps have
  // the next rounds ready, and their tail would be the whole call. And where their state fits:
  // the list and the dealing's (a few KiB; d256 has ~1.9 KiB of room, so up to ~40 sequences
  // there), a grid whose work ranks the dealing's threads hold, slot positions (two a slot,
  // middles included) and every CTA's work in int32 (at most every tile's key blocks and fixed
  // cost).
  const int64_t key_blocks = (p.seqlen_k + Cfg::kBlockN - 1) / Cfg::kBlockN;
  const bool pairs = kPairCapable && sm90_varlen_pair_list() &&
                     static_cast<int64_t>(p.heads_q) * p.total_q >= int64_t(12) * Cfg::kBlockM * sm90_sm_count() &&
                     persistent_grid <= Cfg::kPairMaxGrid &&
                     Cfg::pair_sched_bytes(p.batch, persistent_grid) <= Cfg::kSchedRoom &&
                     2 * (tiles + static_cast<int64_t>(p.heads_q) * p.batch) <= INT32_MAX &&
                     tiles * (key_blocks + kVarlenTileOverheadBlocks) <= INT32_MAX;
  const bool fits = kCausal && !pairs ? items <= Cfg::kSchedItems && items * p.batch <= Cfg::kSchedWork : true;
  const bool listed = kListable && p.batch <= Cfg::kSchedSeqs && fits && sm90_varlen_persistent();
  const int smem =
      Cfg::kSmemBytes +
      (!listed ? 0
       : pairs ? static_cast<int>(Cfg::pair_sched_bytes(p.batch, persistent_grid))
       : kCausal ? Cfg::causal_sched_bytes(static_cast<int>(items))
                 : Cfg::sched_bytes(p.batch));
  if (tiles > INT32_MAX) return cudaErrorNotSupported;
  const int grid = varlen && !listed ? static_cast<int>(tiles) : static_cast<int>(persistent_grid);
  if (grid == 0) return cudaSuccess;
  // The pair list's tail tile-major (VarlenPairTail): head-major and none measured the same or
  // slower (cuda/NOTES.md, "Pair lists at d128 too"); the kernel still takes the layout.
  constexpr int kPairTail = static_cast<int>(VarlenPairTail::kTileMajor);
  kernel<<<grid, Cfg::kThreads, smem, stream>>>(p, maps, listed, listed && pairs, listed && pairs ? kPairTail : 0);
#ifdef KH_DEV_FP8_PROBE_TIMES
  if constexpr (Operands<T>::kFp8) fp8_probe_print_kernel<<<1, 1, 0, stream>>>(kQKDim);
#endif
  return cudaGetLastError();
}

// The mode a call needs (Sm90Mode), then causal or not. FP8 calls are varlen only: no kFixed
// instance of them is built.
template <int kQKDim, int kVDim, typename T>
cudaError_t run_sm90_modes(const FwdLaunchParams& p, const FwdTensorMaps& maps, cudaStream_t stream) {
  auto run = [&](auto mode) {
    constexpr Sm90Mode kMode = decltype(mode)::value;
    return p.causal ? launch_attention_fwd_sm90<kQKDim, kVDim, T, true, kMode>(p, maps, stream)
                    : launch_attention_fwd_sm90<kQKDim, kVDim, T, false, kMode>(p, maps, stream);
  };
  if (p.window_left >= 0 || p.softcap > 0.f || !(p.scale > 0.f))
    return run(std::integral_constant<Sm90Mode, Sm90Mode::kGeneral>{});
  if (p.cu_seqlens_q != nullptr) return run(std::integral_constant<Sm90Mode, Sm90Mode::kVarlen>{});
  if constexpr (Operands<T>::kFp8) {
    return cudaErrorInvalidValue;
  } else {
    return run(std::integral_constant<Sm90Mode, Sm90Mode::kFixed>{});
  }
}

template <int kQKDim, int kVDim, ElementType kType>
cudaError_t run_attention_fwd_sm90_instance(const FwdLaunchParams& p, const FwdTensorMaps& maps,
                                            cudaStream_t stream) {
  return run_sm90_modes<kQKDim, kVDim, typename ElementOf<kType>::type>(p, maps, stream);
}

// FP8 prefill (attention_varlen_fwd_fp8 with an e4m3 q): e4m3 operands, out of kOutType.
template <int kDim, ElementType kOutType>
cudaError_t run_attention_fwd_sm90_fp8_instance(const FwdLaunchParams& p, const FwdTensorMaps& maps,
                                                cudaStream_t stream) {
  return run_sm90_modes<kDim, kDim, Fp8Operands<typename ElementOf<kOutType>::type>>(p, maps, stream);
}

}  // namespace kh_attention::sm90
