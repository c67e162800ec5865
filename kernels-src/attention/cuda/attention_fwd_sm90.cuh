// attention_fwd_sm90.cuh: FlashAttention forward for sm90a (Hopper): wgmma + TMA, warp-specialized.
//
// Same function as the sm80 kernel (attention_fwd_sm80.cuh): out = softmax(scale q k^T
// [+ bottom-right causal mask]) v, lse optional, fully masked rows give 0 / -inf.
// One CTA per (128-row q tile, head, batch), three warpgroups (setmaxnreg moves registers
// from the producer to the consumers):
//  - warpgroup 2, the producer: one thread issues TMA loads (128-byte swizzled boxes of 64
//    columns) of the Q tile once, then of K and V tiles into a two-stage ring guarded by
//    full/empty mbarriers; TMA zero-fills rows past the sequence end;
//  - warpgroups 0 and 1, the consumers, 64 query rows each: S = Q K^T with wgmma (both
//    operands from shared memory), online softmax in fp32 registers (exp2, log2(e)-folded
//    scale), O += P V with wgmma (P from registers in the A-fragment layout, V from shared
//    memory, N-major), each stage released as soon as its wgmma has completed. Non-causal
//    calls issue S of the next key block before P V of the current one, so the softmax
//    overlaps P V on the tensor cores (FlashAttention-3's intra-warpgroup pipelining).
// Included by attention_fwd_sm90_hd<D>_<dtype>.cu only; built for sm_90a.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "attention_fwd_sm90.hpp"
#include "wgmma_sm90.cuh"

namespace kh_attention::sm90 {

template <ElementType kType> struct ElementOf;
template <> struct ElementOf<ElementType::kF16> { using type = __half; };
template <> struct ElementOf<ElementType::kBF16> { using type = __nv_bfloat16; };

// 128 x 128 tiles for d = 64 and 128: wgmma's M is 64 per warpgroup, so two consumer
// warpgroups cover 128 query rows; N = 128 keys keeps S at 64 fp32 registers per thread and
// O at d/2 (with P, the next S and O live at once: ~200 registers, under kConsumerRegs).
// Two K and two V stages at d = 128: 160 KB of shared memory (the SM has 227 KB; three
// would not fit). Three at d = 64 (112 KB): a block's two products take ~0.7 us there, about
// one TMA load's latency, so two stages can leave the consumers waiting on loads.
template <int kHeadDim> struct Sm90TileConfig {
  static constexpr int kBlockM = 128;
  static constexpr int kBlockN = 128;
  static constexpr int kStages = kHeadDim <= 64 ? 3 : 2;
};
constexpr int kConsumerWarpgroups = 2;
constexpr int kConsumerWarps = kConsumerWarpgroups * 4;
constexpr int kSm90Threads = (kConsumerWarpgroups + 1) * 128;  // + one producer warpgroup
// Registers per thread after setmaxnreg: the producer warpgroup gives its share to the
// consumers (128 x 24 + 256 x 240 <= 65536). At entry every thread is capped at 168.
constexpr int kProducerRegs = 24;
constexpr int kConsumerRegs = 240;
constexpr int kBoxCols = 64;                             // 64 16-bit columns = one 128-byte swizzle row

template <int kHeadDim>
constexpr int sm90_smem_bytes() {
  using C = Sm90TileConfig<kHeadDim>;
  // Q + K/V stages, 16 mbarriers, and slack to align the base to 1024 bytes (the swizzle atom).
  return (C::kBlockM + 2 * C::kStages * C::kBlockN) * kHeadDim * 2 + 16 * 8 + 1024;
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

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace detail

// The consumer warpgroups' part of a tile: S = Q K^T, online softmax, O += P V over the key
// blocks, then the epilogue (out, lse).
template <int kHeadDim, typename T, bool kCausal>
__device__ __forceinline__ void consume_tile(const FwdLaunchParams& p, unsigned char* smem, uint32_t sQ, uint32_t sK,
                                             uint32_t sV, uint32_t bars, int n_blocks, int m0, int head, int batch,
                                             int warp, int lane) {
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
  // Overlap S of the next block with P V of this one (FlashAttention-3's intra-warpgroup
  // pipelining) for non-causal calls only: measured on the H200 (d=128, bf16) it gave
  // +21% at s=4k non-causal but -8% (s=4k) to -18% (s=1k) causal, where the short rows
  // of blocks leave little to overlap and the extra live registers cost more.
  constexpr bool kIntraWarpgroupOverlap = !kCausal;
  const uint32_t q_full = bars;
  auto full_k = [&](int s) { return bars + 8 * (1 + s); };
  auto full_v = [&](int s) { return bars + 8 * (1 + kStages + s); };
  auto empty_k = [&](int s) { return bars + 8 * (1 + 2 * kStages + s); };
  auto empty_v = [&](int s) { return bars + 8 * (1 + 3 * kStages + s); };
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
#pragma unroll
      for (int i = 0; i < MmaS::kRegs; ++i) acc_s[i] *= scale_log2;
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
        float mx = row_max[h];
#pragma unroll
        for (int j = 0; j < kNTiles; ++j) mx = fmaxf(mx, fmaxf(acc_s[4 * j + 2 * h], acc_s[4 * j + 2 * h + 1]));
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
            const float pv = fast_exp2(acc_s[4 * j + 2 * h + e] - base_max);
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

    float correction[2];
    if constexpr (kIntraWarpgroupOverlap) {
      // Prologue: S and P of the first block (the last key block: masking comes first).
      mbar_wait(q_full, 0);
      mbar_wait(full_k(0), 0);
      issue_qk(0);
      wgmma_wait<0>();
      fence_operands(acc_s);
      release(empty_k(0));
      softmax(n_blocks - 1, correction);  // O is still zero: no rescale
      pack_p();

      // Steady state: S of block it + 1 runs on the tensor cores beside P V of block it, and
      // its softmax overlaps that P V. The loop has no conditional wgmma, so that ptxas can
      // tell which group wait<1> retires (else it serializes them, warning C7514).
      int it = 0;
      for (; it + 1 < n_blocks; ++it) {
        const int s = it % kStages;
        const int s_next = (it + 1) % kStages;
        mbar_wait(full_k(s_next), ((it + 1) / kStages) & 1);
        fence_operands(acc_s);
        issue_qk(s_next);
        fence_operands(acc_o);
        mbar_wait(full_v(s), (it / kStages) & 1);
        issue_pv(s);
        wgmma_wait<1>();  // S of block it + 1 is done; P V of block it may still run
        fence_operands(acc_s);
        release(empty_k(s_next));
        softmax(n_blocks - 2 - it, correction);
        wgmma_wait<0>();
        fence_operands(acc_o);
        release(empty_v(s));
#pragma unroll
        for (int j = 0; j < kDTiles; ++j) {
          acc_o[4 * j + 0] *= correction[0];
          acc_o[4 * j + 1] *= correction[0];
          acc_o[4 * j + 2] *= correction[1];
          acc_o[4 * j + 3] *= correction[1];
        }
        pack_p();
      }
      // The last block's P V.
      const int s = it % kStages;
      fence_operands(acc_o);
      mbar_wait(full_v(s), (it / kStages) & 1);
      issue_pv(s);
      wgmma_wait<0>();
      fence_operands(acc_o);
      release(empty_v(s));
    } else {
      // One block at a time: S, softmax, P V, each waited for.
      mbar_wait(q_full, 0);
      for (int it = 0; it < n_blocks; ++it) {
        const int s = it % kStages;
        const uint32_t parity = (it / kStages) & 1;
        mbar_wait(full_k(s), parity);
        fence_operands(acc_s);
        issue_qk(s);
        wgmma_wait<0>();
        fence_operands(acc_s);
        release(empty_k(s));
        softmax(n_blocks - 1 - it, correction);
#pragma unroll
        for (int j = 0; j < kDTiles; ++j) {
          acc_o[4 * j + 0] *= correction[0];
          acc_o[4 * j + 1] *= correction[0];
          acc_o[4 * j + 2] *= correction[1];
          acc_o[4 * j + 3] *= correction[1];
        }
        pack_p();
        fence_operands(acc_o);
        mbar_wait(full_v(s), parity);
        issue_pv(s);
        wgmma_wait<0>();
        fence_operands(acc_o);
        release(empty_v(s));
      }
    }
  }

  // Epilogue: normalize, write lse, stage this warp's 16 rows of O in its own rows of the Q
  // tile (same swizzled box layout; only this warpgroup ever read them) and store 16-byte chunks.
  T* const stage = reinterpret_cast<T*>(smem);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = row_sum[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const int r = warp_row0 + g + 8 * h;
    if (p.lse != nullptr && t == 0 && m0 + r < seqlen_q)
      p.lse[batch * p.lse_batch_stride + head * p.lse_head_stride + static_cast<int64_t>(m0 + r) * p.lse_row_stride] =
          sum > 0.f ? (row_max[h] + log2f(sum)) * kLn2 : -INFINITY;
#pragma unroll
    for (int j = 0; j < kDTiles; ++j) {
      const int box = j / 8, chunk = j % 8;
      *reinterpret_cast<uint32_t*>(stage + box * kBlockM * kBoxCols + r * kBoxCols + ((chunk ^ (r & 7)) << 3) + 2 * t) =
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
    if (m0 + r < seqlen_q)
      *reinterpret_cast<uint4*>(out + static_cast<int64_t>(m0 + r) * p.o_row_stride + cc * 8) =
          *reinterpret_cast<const uint4*>(stage + box * kBlockM * kBoxCols + r * kBoxCols + ((chunk ^ (r & 7)) << 3));
  }
}

template <int kHeadDim, typename T, bool kCausal>
__global__ void __launch_bounds__(kSm90Threads, 1)
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
  const uint32_t bars = sV + kStages * kKVBytes;  // q_full, full_k[], full_v[], empty_k[], empty_v[]
  const uint32_t q_full = bars;
  auto full_k = [&](int s) { return bars + 8 * (1 + s); };
  auto full_v = [&](int s) { return bars + 8 * (1 + kStages + s); };
  auto empty_k = [&](int s) { return bars + 8 * (1 + 2 * kStages + s); };
  auto empty_v = [&](int s) { return bars + 8 * (1 + 3 * kStages + s); };

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;

  const int m_block = gridDim.x - 1 - blockIdx.x;  // causal: the longest tiles first
  const int head = blockIdx.y;
  const int batch = blockIdx.z;
  const int kv_head = head / (p.heads_q / p.heads_kv);
  const int m0 = m_block * kBlockM;
  const int seqlen_q = p.seqlen_q;
  const int seqlen_k = p.seqlen_k;
  const int causal_shift = seqlen_k - seqlen_q;
  int n_blocks = (seqlen_k + kBlockN - 1) / kBlockN;
  if constexpr (kCausal) {
    const int last_key = m0 + kBlockM - 1 + causal_shift;
    n_blocks = last_key < 0 ? 0 : min(n_blocks, last_key / kBlockN + 1);
  }

  if (tid == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full_k(s), 1);
      mbar_init(full_v(s), 1);
      mbar_init(empty_k(s), kConsumerWarps);
      mbar_init(empty_v(s), kConsumerWarps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp >= kConsumerWarps) {  // producer warpgroup; one thread issues every copy
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    if (warp == kConsumerWarps && lane == 0 && n_blocks > 0) {
      mbar_expect_tx(q_full, kQBytes);
      tma_load_tile<kBlockM, kHeadDim>(sQ, &maps.q, maps.q_order, q_full, m0, head, batch);
      for (int it = 0; it < n_blocks; ++it) {
        const int n_block = n_blocks - 1 - it;
        const int s = it % kStages;
        const uint32_t parity = ((it / kStages) & 1) ^ 1;  // a fresh barrier passes parity 1
        mbar_wait(empty_k(s), parity);
        mbar_expect_tx(full_k(s), kKVBytes);
        tma_load_tile<kBlockN, kHeadDim>(sK + s * kKVBytes, &maps.k, maps.k_order, full_k(s), n_block * kBlockN,
                                         kv_head, batch);
        mbar_wait(empty_v(s), parity);
        mbar_expect_tx(full_v(s), kKVBytes);
        tma_load_tile<kBlockN, kHeadDim>(sV + s * kKVBytes, &maps.v, maps.v_order, full_v(s), n_block * kBlockN,
                                         kv_head, batch);
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    consume_tile<kHeadDim, T, kCausal>(p, smem, sQ, sK, sV, bars, n_blocks, m0, head, batch, warp, lane);
  }
}

template <int kHeadDim, typename T, bool kCausal>
cudaError_t launch_attention_fwd_sm90(const FwdLaunchParams& p, const FwdTensorMaps& maps, cudaStream_t stream) {
  using Cfg = Sm90TileConfig<kHeadDim>;
  constexpr int kSmem = sm90_smem_bytes<kHeadDim>();
  auto kernel = attention_fwd_sm90_kernel<kHeadDim, T, kCausal>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (err != cudaSuccess) return err;
  const dim3 grid((p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM, p.heads_q, p.batch);
  kernel<<<grid, kSm90Threads, kSmem, stream>>>(p, maps);
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
