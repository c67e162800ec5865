// attention_fwd_sm90.cuh: FlashAttention forward for sm90a (Hopper): wgmma + TMA, warp-specialized.
//
// Same function as the sm80 kernel (attention_fwd_sm80.cuh): out = softmax(scale q k^T
// [+ bottom-right causal mask]) v, lse optional, fully masked rows give 0 / -inf.
// Tiles of 128 (d = 128) or 192 (d = 64) query rows of one head; one persistent CTA per SM
// walks a static schedule of tiles (causal: longest first, see the kernel). Warpgroups
// (setmaxnreg moves registers from the producer to the consumers):
//  - the last one, the producer: one thread issues TMA loads (128-byte swizzled boxes of 64
//    columns) of each tile's Q, then of its K and V blocks into a ring of stages guarded by
//    full/empty mbarriers (the ring runs on across tiles, and Q of the next tile loads once
//    every S of this one is done); TMA zero-fills rows outside the sequence;
//  - the others (two at d = 128, three at d = 64), the consumers, 64 query rows each:
//    S = Q K^T with wgmma (both operands from shared memory), online softmax in fp32
//    registers (exp2 with the log2(e)-scaled scale folded into its FFMA), O += P V with
//    wgmma (P from registers in the A-fragment layout, V from shared memory, N-major), each
//    stage released as soon as its wgmma has completed. S of the next key block is issued
//    before P V of the current one, so the softmax overlaps P V on the tensor cores
//    (FlashAttention-3's intra-warpgroup pipelining), and, except at d = 128 non-causal, the
//    consumer warpgroups take turns at the tensor cores (named barriers), so that one's
//    softmax runs under the others' products (FlashAttention-3's ping-pong).
// Included by attention_fwd_sm90_hd<D>_<dtype>.cu only; built for sm_90a.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "attention_cuda_common.cuh"
#include "attention_fwd_sm90.hpp"
#include "wgmma_sm90.cuh"

namespace kh_attention::sm90 {

template <ElementType kType> struct ElementOf;
template <> struct ElementOf<ElementType::kF16> { using type = __half; };
template <> struct ElementOf<ElementType::kBF16> { using type = __nv_bfloat16; };

// Tiles of kBlockM query rows x 128 keys. wgmma's M is 64 per warpgroup: at d = 128 two
// consumer warpgroups cover 128 rows, and each thread holds S (64 fp32 registers), P as A
// fragments (32) and O (64) at once, under 240 registers; two K and two V stages: 160 KB of
// shared memory, 192 KB with the O staging tile (the SM has 227 KB).
// At d = 64 three consumer warpgroups cover 192 rows (S, P and O take 128 registers, under
// 160; the softmax, which weighs twice as much against the products as at d = 128, has two
// other warpgroups' products to hide under), and three K/V stages (a block's two products
// take about one TMA load's latency there): 144 KB with the O staging tile.
template <int kHeadDim> struct Sm90TileConfig {
  static constexpr int kConsumerWarpgroups = kHeadDim <= 64 ? 3 : 2;
  static constexpr int kConsumerWarps = kConsumerWarpgroups * 4;
  static constexpr int kThreads = (kConsumerWarpgroups + 1) * 128;  // + one producer warpgroup
  static constexpr int kBlockM = 64 * kConsumerWarpgroups;
  static constexpr int kBlockN = 128;
  static constexpr int kStages = kHeadDim <= 64 ? 3 : 2;
  // Registers per thread after setmaxnreg: the producer warpgroup gives its share to the
  // consumers (128 x 24 + 256 x 240 <= 65536; 128 x 24 + 384 x 160 with three consumers).
  // At entry every thread is capped at 65536 / kThreads (168, or 128 with three consumers).
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = kConsumerWarpgroups == 2 ? 240 : 160;
};
constexpr int kBoxCols = 64;                             // 64 16-bit columns = one 128-byte swizzle row

template <int kHeadDim>
constexpr int sm90_smem_bytes() {
  using C = Sm90TileConfig<kHeadDim>;
  // Q, K/V stages, an O staging tile, 16 mbarriers, and slack to align the base to 1024
  // bytes (the swizzle atom).
  return (2 * C::kBlockM + 2 * C::kStages * C::kBlockN) * kHeadDim * 2 + 16 * 8 + 1024;
}

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
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// One 128-byte-swizzled box of `rows` x 64 columns from a 4-D tensor map whose dims are
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

// A tile of `kRows` x kHeadDim is kHeadDim / 64 boxes of [kRows][64], each box a run of
// 1024-byte swizzle atoms (8 rows x 128 bytes).
template <int kRows, int kHeadDim>
__device__ __forceinline__ void tma_load_tile(uint32_t dst, const CUtensorMap* map, TmaDimOrder o, uint32_t bar,
                                              int row0, int head, int batch) {
#pragma unroll
  for (int b = 0; b < kHeadDim / kBoxCols; ++b)
    tma_load_box(dst + b * kRows * 128, map, o, bar, b * kBoxCols, row0, head, batch);
}

// wgmma shared-memory matrix descriptor, 128-byte swizzle. K-major operands (Q, K): SBO =
// 1024 (next 8 rows), LBO unused; N-major V: LBO = the next 64-column box, SBO = 1024.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>((lbo_bytes >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((sbo_bytes >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

using cuda_common::pack2;

// Named barriers 1 and 2 (0 is __syncthreads): the consumer warpgroups' turns at the tensor cores.
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

using cuda_common::fast_exp2;

}  // namespace detail

// The consumer warpgroups' part of a tile: S = Q K^T, online softmax, O += P V over the key
// blocks, then the epilogue (out, lse).
template <int kHeadDim, typename T, bool kCausal>
__device__ __forceinline__ void consume_tile(const FwdLaunchParams& p, unsigned char* o_stage, uint32_t sQ,
                                             uint32_t sK, uint32_t sV, uint32_t bars, int n_blocks, int m0,
                                             int head, int batch, int warp, int lane, int kv_base, int q_phase) {
  using namespace detail;
  using Cfg = Sm90TileConfig<kHeadDim>;
  constexpr int kBlockM = Cfg::kBlockM;
  constexpr int kBlockN = Cfg::kBlockN;
  constexpr int kStages = Cfg::kStages;
  constexpr int kNTiles = kBlockN / 8;   // 8-key column tiles of S
  constexpr int kDTiles = kHeadDim / 8;  // 8-column tiles of O
  constexpr uint32_t kKVBytes = kBlockN * kHeadDim * 2;
  constexpr float kLog2e = 1.4426950408889634f;
  constexpr float kLn2 = 0.6931471805599453f;
  using MmaS = Wgmma<kBlockN, T>;
  using MmaO = Wgmma<kHeadDim, T>;
  constexpr int kWgs = Cfg::kConsumerWarpgroups;
  // Ping-pong of the consumer warpgroups (below) everywhere but d = 128 non-causal, where
  // it measured 1-3% slower on the H200 (and causal +10%, d = 64 with three warpgroups +30%).
  constexpr bool kPingPong = kCausal || kWgs == 3;
  const uint32_t q_full = bars;
  auto full_k = [&](int s) { return bars + 8 * (1 + s); };
  auto full_v = [&](int s) { return bars + 8 * (1 + kStages + s); };
  auto empty_k = [&](int s) { return bars + 8 * (1 + 2 * kStages + s); };
  auto empty_v = [&](int s) { return bars + 8 * (1 + 3 * kStages + s); };
  const uint32_t q_empty = bars + 8 * (1 + 4 * kStages);
  // Ring position of this tile's block it: stage and phase parity.
  auto stage = [&](int it) { return (kv_base + it) % kStages; };
  auto phase = [&](int it) { return ((kv_base + it) / kStages) & 1; };
  const int seqlen_q = p.seqlen_q;
  const int seqlen_k = p.seqlen_k;
  const int causal_shift = seqlen_k - seqlen_q;

  const int wg = warp >> 2;
  const int wg_warp = warp & 3;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int wg_row0 = wg * 64;                   // this warpgroup's rows in the tile
  const int warp_row0 = wg_row0 + wg_warp * 16;  // this warp's rows in the tile

  float acc_o[MmaO::kRegs];
#pragma unroll
  for (int i = 0; i < MmaO::kRegs; ++i) acc_o[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY};  // of scale*log2(e)*s
  float row_sum[2] = {0.f, 0.f};              // this thread's partial sums

  if (n_blocks > 0) {
    const float scale_log2 = p.scale * kLog2e;
    float acc_s[MmaS::kRegs];     // S of the block in flight, then its probabilities P
    uint32_t pa[kBlockN / 16][4];  // P of the block whose P V runs, as wgmma A fragments

    // S = Q K^T of the block in ring stage s (issued, not waited for).
    auto issue_qk = [&](int s) {
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kHeadDim / 16; ++kk) {
        const uint32_t koff = (kk % 4) * 32;  // 16 columns = 32 bytes into the swizzled row
        const uint64_t da = smem_desc(sQ + (kk / 4) * kBlockM * 128 + wg_row0 * 128 + koff, 16, 1024);
        const uint64_t db = smem_desc(sK + s * kKVBytes + (kk / 4) * kBlockN * 128 + koff, 16, 1024);
        MmaS::ss(acc_s, da, db, kk > 0 ? 1 : 0);
      }
      wgmma_commit();
    };
    // Online softmax of acc_s (acc_s[4j + e]: row g + 8 (e / 2), column 8j + 2t + e % 2):
    // updates the running max and sum, leaves P in acc_s and the factor O must be scaled by.
    auto softmax = [&](int n_block, float (&correction)[2]) {
      const int key0 = n_block * kBlockN;
      bool need_mask = key0 + kBlockN > seqlen_k;
      if constexpr (kCausal) need_mask = need_mask || key0 + kBlockN - 1 > m0 + causal_shift;
      if (need_mask) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = m0 + warp_row0 + g + 8 * h;
          int key_end = seqlen_k;
          if constexpr (kCausal) key_end = min(key_end, row + causal_shift + 1);
#pragma unroll
          for (int j = 0; j < kNTiles; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (key0 + j * 8 + 2 * t + e >= key_end) acc_s[4 * j + 2 * h + e] = -INFINITY;
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < kNTiles; ++j) mx = fmaxf(mx, fmaxf(acc_s[4 * j + 2 * h], acc_s[4 * j + 2 * h + 1]));
        // scale_log2 > 0 (the host checks), so max(scale_log2 s) = scale_log2 max(s): the
        // scale is folded into the exponent's FFMA below instead of a multiply per score.
        mx = fmaxf(row_max[h], mx * scale_log2);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float base_max = mx == -INFINITY ? 0.f : mx;  // fully masked so far: keep exp2 at 0, not NaN
        correction[h] = fast_exp2(row_max[h] - base_max);
        row_max[h] = mx;
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < kNTiles; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float pv = fast_exp2(fmaf(acc_s[4 * j + 2 * h + e], scale_log2, -base_max));
            acc_s[4 * j + 2 * h + e] = pv;
            sum += pv;
          }
        row_sum[h] = row_sum[h] * correction[h] + sum;
      }
    };
    auto pack_p = [&] {
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        pa[kk][0] = pack2<T>(acc_s[8 * kk + 0], acc_s[8 * kk + 1]);
        pa[kk][1] = pack2<T>(acc_s[8 * kk + 2], acc_s[8 * kk + 3]);
        pa[kk][2] = pack2<T>(acc_s[8 * kk + 4], acc_s[8 * kk + 5]);
        pa[kk][3] = pack2<T>(acc_s[8 * kk + 6], acc_s[8 * kk + 7]);
      }
    };
    auto release = [&](uint32_t bar) {
      __syncwarp();
      if (lane == 0) mbar_arrive(bar);
    };

    // O += P V of the block in ring stage s (issued, not waited for).
    auto issue_pv = [&](int s) {
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        const uint64_t db = smem_desc(sV + s * kKVBytes + kk * 16 * 128, kBlockN * 128, 1024);
        MmaO::template rs<1>(acc_o, pa[kk], db, 1);
      }
      wgmma_commit();
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
      if constexpr (kPingPong) named_bar_sync(1 + wg, 256);
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
    softmax(n_blocks - 1, correction);  // O is still zero: no rescale
    pack_p();

    // Steady state: S of block it + 1 runs on the tensor cores beside P V of block it, and
    // its softmax overlaps that P V (FlashAttention-3's intra-warpgroup pipelining). The loop
    // has no conditional wgmma, so that ptxas can tell which group wait<1> retires (else it
    // serializes them, warning C7514).
    int it = 0;
    for (; it + 1 < n_blocks; ++it) {
      const int s = stage(it);
      const int s_next = stage(it + 1);
      mbar_wait(full_k(s_next), phase(it + 1));
      turn_sync();
      fence_operands(acc_s);
      issue_qk(s_next);
      fence_operands(acc_o);
      mbar_wait(full_v(s), phase(it));
      issue_pv(s);
      turn_pass();
      wgmma_wait<1>();  // S of block it + 1 is done; P V of block it may still run
      fence_operands(acc_s);
      release(empty_k(s_next));
      softmax(n_blocks - 2 - it, correction);
      wgmma_wait<0>();
      fence_operands(acc_o);
      release(empty_v(s));
      rescale_o(correction);
      pack_p();
    }
    // Every S of the tile is done: the producer may load the next Q tile.
    release(q_empty);
    // The last block's P V.
    const int s = stage(it);
    mbar_wait(full_v(s), phase(it));
    turn_sync();
    fence_operands(acc_o);
    issue_pv(s);
    if (wg != kWgs - 1) turn_pass();
    wgmma_wait<0>();
    fence_operands(acc_o);
    release(empty_v(s));
  }

  // Epilogue: normalize, write lse, stage this warp's 16 rows of O in its own rows of the
  // staging tile (the Q tile's layout; its own tile, as the next Q may be landing) and store
  // 16-byte chunks.
  T* const ostage = reinterpret_cast<T*>(o_stage);
  __syncwarp();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = row_sum[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const int r = warp_row0 + g + 8 * h;
    const bool row_valid = m0 + r >= 0 && m0 + r < seqlen_q;  // causal tile 0 may start above row 0
    if (p.lse != nullptr && t == 0 && row_valid)
      p.lse[batch * p.lse_batch_stride + head * p.lse_head_stride + static_cast<int64_t>(m0 + r) * p.lse_row_stride] =
          sum > 0.f ? (row_max[h] + log2f(sum)) * kLn2 : -INFINITY;
#pragma unroll
    for (int j = 0; j < kDTiles; ++j) {
      const int box = j / 8, chunk = j % 8;
      *reinterpret_cast<uint32_t*>(ostage + box * kBlockM * kBoxCols + r * kBoxCols + ((chunk ^ (r & 7)) << 3) + 2 * t) =
          pack2<T>(acc_o[4 * j + 2 * h] * inv, acc_o[4 * j + 2 * h + 1] * inv);
    }
  }
  __syncwarp();
  T* const out = static_cast<T*>(p.out) + batch * p.o_batch_stride + head * p.o_head_stride;
#pragma unroll
  for (int i = 0; i < 16 * kDTiles / 32; ++i) {
    const int idx = lane + i * 32;
    const int r = warp_row0 + idx / kDTiles;
    const int cc = idx % kDTiles;
    const int box = cc / 8, chunk = cc % 8;
    if (m0 + r >= 0 && m0 + r < seqlen_q)
      *reinterpret_cast<uint4*>(out + static_cast<int64_t>(m0 + r) * p.o_row_stride + cc * 8) =
          *reinterpret_cast<const uint4*>(ostage + box * kBlockM * kBoxCols + r * kBoxCols + ((chunk ^ (r & 7)) << 3));
  }
}

template <int kHeadDim, typename T, bool kCausal>
__global__ void __launch_bounds__(Sm90TileConfig<kHeadDim>::kThreads, 1)
    attention_fwd_sm90_kernel(const __grid_constant__ FwdLaunchParams p, const __grid_constant__ FwdTensorMaps maps) {
  using namespace detail;
  using Cfg = Sm90TileConfig<kHeadDim>;
  constexpr int kBlockM = Cfg::kBlockM;
  constexpr int kBlockN = Cfg::kBlockN;
  constexpr int kStages = Cfg::kStages;
  constexpr uint32_t kQBytes = kBlockM * kHeadDim * 2;
  constexpr uint32_t kKVBytes = kBlockN * kHeadDim * 2;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  unsigned char* const smem = smem_raw + (base - raw);
  const uint32_t sQ = base;
  const uint32_t sK = sQ + kQBytes;                // [kStages][boxes][kBlockN][64]
  const uint32_t sV = sK + kStages * kKVBytes;     // [kStages][boxes][kBlockN][64]
  const uint32_t sO = sV + kStages * kKVBytes;     // O staging, Q's layout
  const uint32_t bars = sO + kQBytes;              // q_full, full_k[], full_v[], empty_k[], empty_v[], q_empty
  unsigned char* const o_stage = smem + (sO - base);
  const uint32_t q_full = bars;
  auto full_k = [&](int s) { return bars + 8 * (1 + s); };
  auto full_v = [&](int s) { return bars + 8 * (1 + kStages + s); };
  auto empty_k = [&](int s) { return bars + 8 * (1 + 2 * kStages + s); };
  auto empty_v = [&](int s) { return bars + 8 * (1 + 3 * kStages + s); };
  const uint32_t q_empty = bars + 8 * (1 + 4 * kStages);

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;

  const int seqlen_q = p.seqlen_q;
  const int seqlen_k = p.seqlen_k;
  const int causal_shift = seqlen_k - seqlen_q;
  const int m_blocks = (seqlen_q + kBlockM - 1) / kBlockM;
  // Causal tiles end at the last query row, so the partial tile (seqlen_q % kBlockM rows) is
  // the first one, which sees the fewest keys, and not the last, which sees them all: its
  // rows above row 0 are TMA zero fill, masked, and never stored. (s = 4k at d = 64: 4224
  // rows in 192-row tiles; aligned at row 0, the padding cost 6% of a causal call.)
  const int m_shift = kCausal ? m_blocks * kBlockM - seqlen_q : 0;
  const int num_tiles = m_blocks * p.heads_q * p.batch;
  const int group = p.heads_q / p.heads_kv;
  // Tile order. Non-causal: q block fastest, then head, then batch, so that CTAs running side
  // by side share K and V in L2. Causal: longest first across all heads (q block slowest),
  // so that the short tiles come last and fill the gaps (longest-processing-time order).
  struct Tile {
    int m0, head, batch, n_blocks;
  };
  auto tile_of = [&](int t) {
    Tile tl;
    int m_block, hb;
    if constexpr (kCausal) {
      const int heads_batches = p.heads_q * p.batch;
      m_block = m_blocks - 1 - t / heads_batches;
      hb = t % heads_batches;
    } else {
      m_block = m_blocks - 1 - t % m_blocks;
      hb = t / m_blocks;
    }
    tl.head = hb % p.heads_q;
    tl.batch = hb / p.heads_q;
    tl.m0 = m_block * kBlockM - m_shift;
    tl.n_blocks = (seqlen_k + kBlockN - 1) / kBlockN;
    if constexpr (kCausal) {
      const int last_key = tl.m0 + kBlockM - 1 + causal_shift;
      tl.n_blocks = last_key < 0 ? 0 : min(tl.n_blocks, last_key / kBlockN + 1);
    }
    return tl;
  };
  // The k-th tile this CTA takes (num_tiles: none left): rounds of gridDim.x tiles; causal
  // rounds alternate direction (CTA i takes position i of even rounds and gridDim.x - 1 - i
  // of odd ones), so long and short tiles pair up across rounds.
  auto scheduled = [&](int k) {
    const int g = static_cast<int>(gridDim.x), b = static_cast<int>(blockIdx.x);
    const int pos = k * g + ((kCausal && (k & 1)) ? g - 1 - b : b);
    return pos < num_tiles ? pos : num_tiles;
  };

  if (tid == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full_k(s), 1);
      mbar_init(full_v(s), 1);
      mbar_init(empty_k(s), Cfg::kConsumerWarps);
      mbar_init(empty_v(s), Cfg::kConsumerWarps);
    }
    mbar_init(q_empty, Cfg::kConsumerWarps);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp >= Cfg::kConsumerWarps) {  // producer warpgroup; one thread issues every copy
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Cfg::kProducerRegs));
    if (warp == Cfg::kConsumerWarps && lane == 0) {
      int kv = 0;       // K/V blocks loaded so far (ring position)
      int q_tiles = 0;  // Q tiles loaded so far
      for (int k = 0, t; (t = scheduled(k)) < num_tiles; ++k) {
        const Tile tl = tile_of(t);
        if (tl.n_blocks == 0) continue;
        const int kv_head = tl.head / group;
        mbar_wait(q_empty, (q_tiles & 1) ^ 1);  // a fresh barrier passes parity 1
        mbar_expect_tx(q_full, kQBytes);
        tma_load_tile<kBlockM, kHeadDim>(sQ, &maps.q, maps.q_order, q_full, tl.m0, tl.head, tl.batch);
        ++q_tiles;
        for (int it = 0; it < tl.n_blocks; ++it, ++kv) {
          const int n_block = tl.n_blocks - 1 - it;
          const int s = kv % kStages;
          const uint32_t parity = ((kv / kStages) & 1) ^ 1;
          mbar_wait(empty_k(s), parity);
          mbar_expect_tx(full_k(s), kKVBytes);
          tma_load_tile<kBlockN, kHeadDim>(sK + s * kKVBytes, &maps.k, maps.k_order, full_k(s), n_block * kBlockN,
                                           kv_head, tl.batch);
          mbar_wait(empty_v(s), parity);
          mbar_expect_tx(full_v(s), kKVBytes);
          tma_load_tile<kBlockN, kHeadDim>(sV + s * kKVBytes, &maps.v, maps.v_order, full_v(s), n_block * kBlockN,
                                           kv_head, tl.batch);
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Cfg::kConsumerRegs));
    int kv = 0, q_tiles = 0;
    for (int k = 0, t; (t = scheduled(k)) < num_tiles; ++k) {
      const Tile tl = tile_of(t);
      consume_tile<kHeadDim, T, kCausal>(
          p, o_stage, sQ, sK, sV, bars, tl.n_blocks, tl.m0, tl.head, tl.batch, warp, lane, kv, q_tiles & 1);
      if (tl.n_blocks > 0) {
        kv += tl.n_blocks;
        ++q_tiles;
      }
    }
  }
}

// A persistent grid: one CTA per SM, tiles dealt statically (the next tile's Q and K/V
// loads overlap this one's last products and epilogue). Non-causal: +2% at s = 4k, +10% at
// s = 1k on the H200 against one CTA per tile. Causal, with the longest-first snake order:
// d = 64 +2-9%, d = 128 -3% (s = 1k) to +3-6% (s >= 8k); dealt round-robin in the q-block
// order instead, it lost 40% at d = 64 s = 4k (every CTA drew the same q block).
template <int kHeadDim, typename T, bool kCausal>
cudaError_t launch_attention_fwd_sm90(const FwdLaunchParams& p, const FwdTensorMaps& maps, cudaStream_t stream) {
  using Cfg = Sm90TileConfig<kHeadDim>;
  constexpr int kSmem = sm90_smem_bytes<kHeadDim>();
  auto kernel = attention_fwd_sm90_kernel<kHeadDim, T, kCausal>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (err != cudaSuccess) return err;
  const int64_t tiles = static_cast<int64_t>((p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM) * p.heads_q * p.batch;
  if (tiles > INT32_MAX) return cudaErrorNotSupported;
  const int grid = static_cast<int>(std::min<int64_t>(tiles, sm90_sm_count()));
  kernel<<<grid, Cfg::kThreads, kSmem, stream>>>(p, maps);
  return cudaGetLastError();
}

template <int kHeadDim, ElementType kType>
cudaError_t run_attention_fwd_sm90_instance(const FwdLaunchParams& p, const FwdTensorMaps& maps,
                                            cudaStream_t stream) {
  using T = typename ElementOf<kType>::type;
  return p.causal ? launch_attention_fwd_sm90<kHeadDim, T, true>(p, maps, stream)
                  : launch_attention_fwd_sm90<kHeadDim, T, false>(p, maps, stream);
}

}  // namespace kh_attention::sm90
