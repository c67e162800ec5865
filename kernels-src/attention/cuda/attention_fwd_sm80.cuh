// attention_fwd_sm80.cuh: FlashAttention-2 style forward kernel for sm80+ (mma.sync), the
// kernel of attention_fwd and attention_varlen_fwd on the sm80 build (and the sm90a build's
// fallback for calls TMA cannot describe).
//
// Computes out = softmax(s) v per (sequence, head), s = scale q k^T (then softcap tanh(s /
// softcap) when asked) over the keys each row sees (attention_visibility.hpp: bottom-right
// aligned causal, a window to the left), and when asked lse = log(sum(exp(s))) per query row,
// in one pass over K/V:
//  - one CTA per (q tile of kBlockM rows, head, sequence); each warp owns 16*kMTiles whole
//    query rows, so the softmax row reductions are quad shuffles only; varlen: a sequence's
//    rows start at its cu_seqlens offset, and tiles past its length exit at once;
//  - K and V tiles of kBlockN keys stream through shared memory with cp.async, two stages
//    each (the next K tile lands while S = QK^T and softmax run, the next V tile while
//    P V runs); 16-byte chunks are XOR-swizzled so ldmatrix and cp.async are conflict-free;
//    rows past a sequence and chunks past its head dim load as zeros (src-size 0);
//  - S = Q K^T and O += P V on tensor cores with mma.sync.m16n8k16 (f32 accumulate) over the
//    bucket's head dims (attention_fwd_buckets.hpp); the S accumulator fragment is re-packed
//    in registers as the A operand of P V;
//  - online softmax in fp32 with exp2 and the log2(e)-folded scale; O stays in registers,
//    its rescale skipped when no row max of the warp moved;
//  - only the key blocks some row of the tile sees are visited, and only those that a row sees
//    in part are masked; a row that sees no key writes out = 0 and lse = -inf.
// Included by the generated attention_fwd_sm80_qk<Q>_v<V>_<dtype>.cu translation units only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "attention_cuda_common.cuh"
#include "attention_fwd_sm80.hpp"
#include "attention_visibility.hpp"

namespace kh_attention::sm80 {

template <ElementType kType> struct ElementOf;
template <> struct ElementOf<ElementType::kF16> { using type = __half; };
template <> struct ElementOf<ElementType::kBF16> { using type = __nv_bfloat16; };

// Tile shapes per bucket (kQKDim, kVDim: the head dims S = QK^T and O = PV run over).
// FlashAttention-2's sm80 choices, which its authors measured on A100; they also suit the
// H200 running this path through the PTX JIT (cuda/NOTES.md):
//  - d <= 64:  128 x 128, 4 warps (32 rows/warp). O is 64 fp32 regs/thread, S 64: no spills,
//              and each K/V fragment read from shared memory feeds two m-tiles.
//  - d 80-128: 128 x 64, 4 warps (32 rows/warp). O is <= 128 regs, S 64; 96 KB of shared
//              memory with two K and two V stages.
//  - d 192, 256, 192/128: 64 x 64, 4 warps (16 rows/warp). O is <= 128 regs; 160 / 160 / 128
//              KB of shared memory, under the A100's 163 KB per-block limit (192/128 at 128 x 64
//              spilled 200 bytes a thread at 255 registers).
// Shared-memory rows are 64, 128 or 256 elements wide (the XOR swizzle works on groups of 8
// 16-byte chunks, and 4 warps copy whole rows with a fixed chunk per thread); rows are loaded
// whole, chunks past the head dim as zeros (src-size 0, no memory read): d 80 and 96 use
// 128-element rows, d 192 256-element ones (160 KB at 64 x 64; a stepping copy of 24 chunks
// per row cost 40 bytes of spills a thread).
template <int kQKDim, int kVDim>
struct Sm80TileConfig {
  static_assert(kQKDim % 16 == 0 && kVDim % 16 == 0 && kVDim <= kQKDim, "bad bucket");
  static constexpr bool kWide = kQKDim > 128;
  static constexpr int kBlockM = kWide ? 64 : 128;
  static constexpr int kBlockN = kQKDim <= 64 ? 128 : 64;
  static constexpr int kWarps = 4;
  static constexpr int kQKWidth = kQKDim <= 64 ? 64 : kQKDim <= 128 ? 128 : 256;  // shared-memory row of Q, K
  static constexpr int kVWidth = kVDim <= 64 ? 64 : kVDim <= 128 ? 128 : 256;     // of V
};

template <int kQKDim, int kVDim>
constexpr int sm80_smem_bytes() {
  using C = Sm80TileConfig<kQKDim, kVDim>;
  // Q tile + two K stages + two V stages, 2-byte elements.
  return (C::kBlockM + 2 * C::kBlockN) * C::kQKWidth * 2 + 2 * C::kBlockN * C::kVWidth * 2;
}

namespace detail {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy; src_bytes == 0 fills the destination with zeros (rows past the end).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D = A(16x16, row) * B(16x8, col) + D, fp32 accumulate.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

using cuda_common::pack2;

using cuda_common::fast_exp2;
using cuda_common::fast_tanh;

// Element offset of 16-byte chunk `chunk` of row `row` in a swizzled [rows][kWidth] tile:
// the low three chunk bits are XORed with the row, so eight consecutive rows at the same
// logical chunk hit eight different bank groups (ldmatrix reads 8 rows x 16 bytes).
template <int kWidth>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  static_assert(kWidth % 64 == 0, "the swizzle works on groups of 8 chunks");
  return row * kWidth + ((chunk ^ (row & 7)) << 3);
}

// Async copy of rows [row0, row0 + kRows) of a (seqlen, head_dim) slice with row stride
// `row_stride` into a swizzled [kRows][kWidth] shared tile, whole rows: chunks at or past
// `valid_chunks` (the call's head dim / 8) and rows at or past `row_end` become zeros, read
// from nowhere (src-size 0). A thread copies one chunk column of every kThreads / chunks-th
// row, through a running source pointer: one add per pass instead of a register pair per pass
// hoisted out of the key loop.
template <int kRows, int kWidth, int kThreads, typename T>
__device__ __forceinline__ void load_tile_async(T* smem, const T* gmem, int64_t row_stride, int row0, int row_end,
                                                int valid_chunks, int tid) {
  constexpr int kChunksPerRow = kWidth / 8;
  constexpr int kRowsPerPass = kThreads / kChunksPerRow;
  static_assert(kThreads % kChunksPerRow == 0 && kRows % kRowsPerPass == 0, "tile must divide among threads");
  const int c = tid % kChunksPerRow;
  const bool chunk_in = c < valid_chunks;
  int r = tid / kChunksPerRow;
  const T* src = gmem + static_cast<int64_t>(row0 + r) * row_stride + c * 8;
  const int64_t pass_stride = kRowsPerPass * row_stride;
#pragma unroll
  for (int i = 0; i < kRows / kRowsPerPass; ++i, r += kRowsPerPass, src += pass_stride) {
    const bool in_range = chunk_in && row0 + r < row_end;
    cp_async_16(smem_addr(smem + swizzled<kWidth>(r, c)), in_range ? src : gmem, in_range ? 16 : 0);
  }
}

}  // namespace detail

// Which code a call needs beyond the bucket's own head dims at full attention. Each addition
// costs registers in the key loop, and at 255 registers the tiles have none to spare (ptxas
// spills 8-48 bytes a thread otherwise: cuda/NOTES.md), so each is its own instantiation, as
// FlashAttention-2 does with Is_even_K:
//   kFixed    attention_fwd at the bucket's head dims: lengths from the parameter bank;
//   kVarlen   attention_varlen_fwd at the bucket's head dims, no window, no soft-cap:
//             per-sequence offsets and lengths from cu_seqlens;
//   kGeneral  anything else: head dims below the bucket's (chunk predicates in the loads and
//             the stores), a window (a lower bound in the mask), a soft-cap (its transform),
//             either op.
enum class Sm80Mode { kFixed, kVarlen, kGeneral };

template <int kQKDim, int kVDim, typename T, bool kCausal, Sm80Mode kMode>
__global__ void __launch_bounds__(Sm80TileConfig<kQKDim, kVDim>::kWarps * 32)
    attention_fwd_sm80_kernel(const FwdLaunchParams p) {
  using namespace detail;
  using Cfg = Sm80TileConfig<kQKDim, kVDim>;
  constexpr int kBlockM = Cfg::kBlockM;
  constexpr int kBlockN = Cfg::kBlockN;
  constexpr int kQKWidth = Cfg::kQKWidth;
  constexpr int kVWidth = Cfg::kVWidth;
  constexpr int kThreads = Cfg::kWarps * 32;
  constexpr int kMTiles = kBlockM / (16 * Cfg::kWarps);  // 16-row m-tiles per warp
  constexpr int kNTiles = kBlockN / 8;                    // 8-key n-tiles of S
  constexpr int kDTiles = kVDim / 8;                      // 8-column n-tiles of O
  constexpr int kQKSteps = kQKDim / 16;                   // k-steps of Q K^T
  constexpr int kPVSteps = kBlockN / 16;                  // k-steps of P V
  constexpr float kLog2e = 1.4426950408889634f;
  constexpr float kLn2 = 0.6931471805599453f;
  static_assert(kMTiles >= 1 && kBlockM == kMTiles * 16 * Cfg::kWarps, "bad tile config");
  static_assert(kNTiles % 2 == 0 && kDTiles % 2 == 0, "bad tile config");

  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* const sQ = reinterpret_cast<T*>(smem_raw);
  T* const sK = sQ + kBlockM * kQKWidth;  // [2][kBlockN][kQKWidth]
  T* const sV = sK + 2 * kBlockN * kQKWidth;  // [2][kBlockN][kVWidth]

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int g = lane >> 2;  // row within an 8-row group of an mma fragment
  const int t = lane & 3;   // column pair within an mma fragment
  const int warp_row0 = warp * 16 * kMTiles;

  // Causal tiles at the end of the sequence do the most work: launch them first.
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const int head = blockIdx.y;
  const int batch = blockIdx.z;
  constexpr bool kGeneral = kMode == Sm80Mode::kGeneral;
  const SeqBounds seq = launch_seq_bounds<kMode != Sm80Mode::kFixed>(p, batch);
  const int seqlen_q = static_cast<int>(seq.len_q);
  const int seqlen_k = static_cast<int>(seq.len_k);
  const int m0 = m_block * kBlockM;
  if (m0 >= seqlen_q) return;  // varlen: a sequence shorter than max_seqlen_q
  const int kv_head = head / (p.heads_q / p.heads_kv);

  const T* q = static_cast<const T*>(p.q) + batch * p.q_batch_stride + seq.q_start * p.q_row_stride +
               head * p.q_head_stride;
  const T* k = static_cast<const T*>(p.k) + batch * p.k_batch_stride + seq.k_start * p.k_row_stride +
               kv_head * p.k_head_stride;
  const T* v = static_cast<const T*>(p.v) + batch * p.v_batch_stride + seq.k_start * p.v_row_stride +
               kv_head * p.v_head_stride;
  T* out = static_cast<T*>(p.out) + batch * p.o_batch_stride + seq.q_start * p.o_row_stride + head * p.o_head_stride;

  const int window_left = kGeneral ? p.window_left : -1;
  const TileVisibility<int> vis = tile_visibility<int>(m0, kBlockM, seqlen_q, seqlen_k, kCausal, window_left, kBlockN);

  float acc_o[kMTiles][kDTiles][4];
  float row_max[kMTiles][2];  // running max of the log2-domain scores, per fragment row
  float row_sum[kMTiles][2];  // this thread's partial running sum (quad-reduced at the end)
#pragma unroll
  for (int mi = 0; mi < kMTiles; ++mi) {
#pragma unroll
    for (int j = 0; j < kDTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mi][j][e] = 0.f;
    row_max[mi][0] = row_max[mi][1] = -INFINITY;
    row_sum[mi][0] = row_sum[mi][1] = 0.f;
  }

  if (vis.blocks() > 0) {
    const float scale_log2 = p.scale * kLog2e;
    const int qk_chunks = kGeneral ? p.head_dim >> 3 : kQKDim / 8;
    const int v_chunks = kGeneral ? p.head_dim_v >> 3 : kVDim / 8;

    // Prologue: Q and the last K tile in one group, the last V tile in the next.
    int n_block = vis.n_hi - 1;
    load_tile_async<kBlockM, kQKWidth, kThreads>(sQ, q, p.q_row_stride, m0, seqlen_q, qk_chunks, tid);
    load_tile_async<kBlockN, kQKWidth, kThreads>(sK, k, p.k_row_stride, n_block * kBlockN, seqlen_k,
                                                             qk_chunks, tid);
    cp_async_commit();
    load_tile_async<kBlockN, kVWidth, kThreads>(sV, v, p.v_row_stride, n_block * kBlockN, seqlen_k,
                                                           v_chunks, tid);
    cp_async_commit();

    // Per-lane ldmatrix row/chunk offsets (see the fragment layouts of mma.m16n8k16).
    const int a_row = lane & 15, a_chunk = lane >> 4;                          // Q: A operand
    const int kb_row = (lane & 7) + ((lane >> 4) << 3), kb_chunk = (lane >> 3) & 1;  // K: B operand
    const int vb_row = (lane & 7) + (((lane >> 3) & 1) << 3), vb_chunk = lane >> 4;  // V: B operand (trans)

    // Key tiles from last to first: the tiles that need masking come first.
    for (int stage = 0; n_block >= vis.n_lo; --n_block, stage ^= 1) {
      cp_async_wait<1>();  // Q and K[n_block] have landed; V[n_block] may be in flight
      __syncthreads();
      if (n_block > vis.n_lo)
        load_tile_async<kBlockN, kQKWidth, kThreads>(sK + (stage ^ 1) * kBlockN * kQKWidth, k,
                                                                 p.k_row_stride, (n_block - 1) * kBlockN, seqlen_k,
                                                                 qk_chunks, tid);
      cp_async_commit();  // possibly empty: keeps the group count uniform

      // S = Q K^T for this warp's rows.
      const T* sKs = sK + stage * kBlockN * kQKWidth;
      float acc_s[kMTiles][kNTiles][4];
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
        for (int j = 0; j < kNTiles; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc_s[mi][j][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < kQKSteps; ++kk) {
        uint32_t a[kMTiles][4];
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi)
          ldmatrix_x4(smem_addr(sQ + swizzled<kQKWidth>(warp_row0 + mi * 16 + a_row, kk * 2 + a_chunk)), a[mi]);
#pragma unroll
        for (int j2 = 0; j2 < kNTiles / 2; ++j2) {
          uint32_t b[4];
          ldmatrix_x4(smem_addr(sKs + swizzled<kQKWidth>(j2 * 16 + kb_row, kk * 2 + kb_chunk)), b);
#pragma unroll
          for (int mi = 0; mi < kMTiles; ++mi) {
            mma_16816<T>(acc_s[mi][2 * j2], a[mi], b[0], b[1]);
            mma_16816<T>(acc_s[mi][2 * j2 + 1], a[mi], b[2], b[3]);
          }
        }
      }

      // Online softmax. Masking is needed only where some row of the tile sees the block in
      // part (its end, the causal diagonal, the window's left edge). (Folding the scale into
      // the exponent's FFMA, as the sm90a kernel does, measured 1-3% slower here: ptxas spills
      // at d=128.) The soft-cap's constants are read from the parameter bank where they are
      // used, so that they hold no register.
      const int key0 = n_block * kBlockN;
      const bool need_mask = vis.needs_mask(n_block, kBlockN);
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi) {
        if (kGeneral && p.softcap > 0.f) {
#pragma unroll
          for (int j = 0; j < kNTiles; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              acc_s[mi][j][e] = p.softcap_log2 * fast_tanh(acc_s[mi][j][e] * p.scale_over_softcap);
        } else {
#pragma unroll
          for (int j = 0; j < kNTiles; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc_s[mi][j][e] *= scale_log2;
        }
        if (need_mask) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = m0 + warp_row0 + mi * 16 + g + 8 * h;
            const KeyRange<int> seen = visible_keys<int>(row, seqlen_q, seqlen_k, kCausal, window_left);
            if constexpr (kGeneral) {  // a key may fall off either end of the row's range
#pragma unroll
              for (int j = 0; j < kNTiles; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                  const int key = key0 + j * 8 + 2 * t + e;
                  if (key < seen.lo || key >= seen.end) acc_s[mi][j][2 * h + e] = -INFINITY;
                }
            } else {
#pragma unroll
              for (int j = 0; j < kNTiles; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                  if (key0 + j * 8 + 2 * t + e >= seen.end) acc_s[mi][j][2 * h + e] = -INFINITY;
            }
          }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float mx = row_max[mi][h];
#pragma unroll
          for (int j = 0; j < kNTiles; ++j) mx = fmaxf(mx, fmaxf(acc_s[mi][j][2 * h], acc_s[mi][j][2 * h + 1]));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          // A row that has seen only masked keys keeps max -inf; subtract 0 then so that
          // exp2(-inf - max) is 0, not NaN.
          const float base = mx == -INFINITY ? 0.f : mx;
          const float correction = fast_exp2(row_max[mi][h] - base);
          // Past the first blocks a row max rarely moves: skip O's rescale (64 multiplies a
          // thread at d=128) unless a row of the warp needs it, so the branch stays uniform.
          if (__any_sync(0xffffffffu, mx != row_max[mi][h])) {
#pragma unroll
            for (int j = 0; j < kDTiles; ++j) {
              acc_o[mi][j][2 * h] *= correction;
              acc_o[mi][j][2 * h + 1] *= correction;
            }
          }
          row_max[mi][h] = mx;
          float sum = 0.f;
#pragma unroll
          for (int j = 0; j < kNTiles; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float pv = fast_exp2(acc_s[mi][j][2 * h + e] - base);
              acc_s[mi][j][2 * h + e] = pv;
              sum += pv;
            }
          row_sum[mi][h] = row_sum[mi][h] * correction + sum;
        }
      }

      cp_async_wait<1>();  // V[n_block] has landed; K[n_block - 1] may be in flight
      __syncthreads();
      if (n_block > vis.n_lo)
        load_tile_async<kBlockN, kVWidth, kThreads>(sV + (stage ^ 1) * kBlockN * kVWidth, v,
                                                               p.v_row_stride, (n_block - 1) * kBlockN, seqlen_k,
                                                               v_chunks, tid);
      cp_async_commit();

      // O += P V, P re-packed from the S accumulators (C layout of n-tiles 2kk, 2kk+1 is
      // the A layout of k-step kk).
      const T* sVs = sV + stage * kBlockN * kVWidth;
#pragma unroll
      for (int kk = 0; kk < kPVSteps; ++kk) {
        uint32_t a[kMTiles][4];
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi) {
          a[mi][0] = pack2<T>(acc_s[mi][2 * kk][0], acc_s[mi][2 * kk][1]);
          a[mi][1] = pack2<T>(acc_s[mi][2 * kk][2], acc_s[mi][2 * kk][3]);
          a[mi][2] = pack2<T>(acc_s[mi][2 * kk + 1][0], acc_s[mi][2 * kk + 1][1]);
          a[mi][3] = pack2<T>(acc_s[mi][2 * kk + 1][2], acc_s[mi][2 * kk + 1][3]);
        }
#pragma unroll
        for (int j2 = 0; j2 < kDTiles / 2; ++j2) {
          uint32_t b[4];
          ldmatrix_x4_trans(smem_addr(sVs + swizzled<kVWidth>(kk * 16 + vb_row, j2 * 2 + vb_chunk)), b);
#pragma unroll
          for (int mi = 0; mi < kMTiles; ++mi) {
            mma_16816<T>(acc_o[mi][2 * j2], a[mi], b[0], b[1]);
            mma_16816<T>(acc_o[mi][2 * j2 + 1], a[mi], b[2], b[3]);
          }
        }
      }
    }
    cp_async_wait<0>();
  }

  // Epilogue: normalize, write lse, stage this warp's rows of O in its own rows of sQ
  // (only this warp ever read them) and store the call's columns with 16-byte writes.
#pragma unroll
  for (int mi = 0; mi < kMTiles; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = row_sum[mi][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = sum > 0.f ? 1.f / sum : 0.f;
      const int r = warp_row0 + mi * 16 + g + 8 * h;
      if (p.lse != nullptr && t == 0 && m0 + r < seqlen_q) {
        const float lse = sum > 0.f ? (row_max[mi][h] + log2f(sum)) * kLn2 : -INFINITY;
        p.lse[batch * p.lse_batch_stride + head * p.lse_head_stride +
              (seq.q_start + m0 + r) * p.lse_row_stride] = lse;
      }
#pragma unroll
      for (int j = 0; j < kDTiles; ++j) {
        const uint32_t packed = pack2<T>(acc_o[mi][j][2 * h] * inv, acc_o[mi][j][2 * h + 1] * inv);
        *reinterpret_cast<uint32_t*>(sQ + swizzled<kQKWidth>(r, j) + 2 * t) = packed;
      }
    }
  }
  __syncwarp();
  constexpr int kChunksPerRow = kVDim / 8;
  constexpr int kWarpChunks = 16 * kMTiles * kChunksPerRow;
  static_assert(kWarpChunks % 32 == 0, "bad tile config");
  const int out_chunks = kGeneral ? p.head_dim_v / 8 : kChunksPerRow;
#pragma unroll
  for (int i = 0; i < kWarpChunks / 32; ++i) {
    const int idx = lane + i * 32;
    const int r = warp_row0 + idx / kChunksPerRow;
    const int c = idx % kChunksPerRow;
    if (m0 + r < seqlen_q && c < out_chunks)
      *reinterpret_cast<uint4*>(out + static_cast<int64_t>(m0 + r) * p.o_row_stride + c * 8) =
          *reinterpret_cast<const uint4*>(sQ + swizzled<kQKWidth>(r, c));
  }
}

template <int kQKDim, int kVDim, typename T, bool kCausal, Sm80Mode kMode>
cudaError_t launch_attention_fwd_sm80(const FwdLaunchParams& p, cudaStream_t stream) {
  using Cfg = Sm80TileConfig<kQKDim, kVDim>;
  constexpr int kSmem = sm80_smem_bytes<kQKDim, kVDim>();
  auto kernel = attention_fwd_sm80_kernel<kQKDim, kVDim, T, kCausal, kMode>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (err != cudaSuccess) return err;
  const dim3 grid((p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM, p.heads_q, p.batch);
  kernel<<<grid, Cfg::kWarps * 32, kSmem, stream>>>(p);
  return cudaGetLastError();
}

template <int kQKDim, int kVDim, ElementType kType>
cudaError_t run_attention_fwd_sm80_instance(const FwdLaunchParams& p, cudaStream_t stream) {
  using T = typename ElementOf<kType>::type;
  auto run = [&](auto mode) {
    constexpr Sm80Mode kMode = decltype(mode)::value;
    return p.causal ? launch_attention_fwd_sm80<kQKDim, kVDim, T, true, kMode>(p, stream)
                    : launch_attention_fwd_sm80<kQKDim, kVDim, T, false, kMode>(p, stream);
  };
  if (p.head_dim != kQKDim || p.head_dim_v != kVDim || p.window_left >= 0 || p.softcap > 0.f)
    return run(std::integral_constant<Sm80Mode, Sm80Mode::kGeneral>{});
  if (p.cu_seqlens_q != nullptr) return run(std::integral_constant<Sm80Mode, Sm80Mode::kVarlen>{});
  return run(std::integral_constant<Sm80Mode, Sm80Mode::kFixed>{});
}

}  // namespace kh_attention::sm80
