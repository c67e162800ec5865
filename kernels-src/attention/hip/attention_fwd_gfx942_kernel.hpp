// attention_fwd_gfx942_kernel.hpp: FlashAttention-2 style forward kernel for AMD CDNA3
// (gfx942, MI300) on MFMA matrix cores, the kernel of attention_fwd and attention_varlen_fwd on
// the rocm-gfx942 build.
//
// Computes out = softmax(s) v per (sequence, head), s = scale q k^T (then softcap tanh(s /
// softcap)) over the keys each row sees (../src/attention_visibility.hpp: bottom-right aligned
// causal, a window to the left), and when asked lse = log(sum(exp(s))) per query row, in one
// pass over K/V. The algorithm is the CUDA sm80 kernel's (../cuda/attention_fwd_sm80.cuh);
// what differs is how the work maps onto a 64-lane wavefront and v_mfma_f32_16x16x16{bf16_1k,f16}:
//  - one workgroup (4 wavefronts) per (q tile of kBlockM rows, head, sequence); each wavefront
//    owns kBlockM / 4 whole query rows (one or two 16-row tiles); Q stays in registers;
//    varlen: a sequence's rows start at its cu_seqlens offset, tiles past its length exit;
//  - everything is computed transposed: S^T = K Q^T and O^T += V^T P^T. In an MFMA result a
//    lane holds one column (lane % 16) and four rows, so with queries as the columns a lane
//    holds one query's scores, and those are exactly the B operand (P^T) the P V MFMA wants:
//    P never leaves registers, and all softmax state of a lane belongs to one query (row max
//    and sum reduce over the 4 lanes lane % 16 shares: xor 16 and xor 32);
//  - the contraction index of an MFMA may map to keys / head dims in any order A and B agree
//    on: here lane (c = lane % 16, g = lane / 16) covers 8 consecutive dims (keys) over two
//    MFMAs, so every LDS operand read is one 16-byte ds_read_b128, and the MFMA rows are
//    permuted so a lane's 8 results are 8 consecutive keys (and, for O, 8 consecutive head
//    dims: the epilogue stores 16 bytes per lane);
//  - K and V tiles of kBlockN keys are loaded from global memory into registers half a tile
//    ahead (V while S = K Q^T and the softmax run, the next K while O += V^T P^T runs), then
//    written to LDS: K as [key][dim], V transposed as [dim][key] (the P V contraction runs
//    over keys), two workgroup barriers per tile; whole rows of the bucket's width are loaded,
//    zeros past the call's head dim and past the sequence; 16-byte chunks are XOR-swizzled by
//    row so the 8 rows a ds_read_b128 phase touches hit 8 different bank groups;
//  - online softmax in fp32 with exp2 (v_exp_f32) and the log2(e)-folded scale; O stays in
//    registers (MFMA accumulators);
//  - only the key blocks some row of the tile sees are visited; a row that sees no key writes
//    out = 0 and lse = -inf.
// Not run on a GPU yet (no AMD GPU is reachable from the build machines): see hip/NOTES.md.
// Included by the generated attention_fwd_gfx942_qk<Q>_v<V>_<dtype>.hip translation units only.
#pragma once

#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "../src/attention_visibility.hpp"
#include "attention_fwd_gfx942.hpp"

namespace kh_attention::gfx942 {

// Tile shapes per bucket (kQKDim, kVDim: the head dims S^T = K Q^T and O^T = V^T P^T run over,
// multiples of 32: two 16-deep MFMA k-steps per 32-dim group). Chosen so that a wavefront's
// state fits 256 VGPRs+AGPRs without spilling, which lets two workgroups share a CU (two
// wavefronts per SIMD, one hiding the other's barriers):
//   d <= 128: 128 query rows (4 wavefronts x 32) by 64 keys; d=128: O 64 + S 32 fp32, P 16,
//             Q 32, the next K or V tile 16 VGPRs (clang-19 -O3: 228-256); d=64 half the O/Q.
//             (d=64 with 128 keys per tile, FlashAttention-2's sm80 choice, spilled 9-12 VGPRs.)
//   d 192, 256, 192/128: 64 rows (4 x 16) by 32 keys: O <= 64, Q <= 32, S 8, P 4 (a second
//             q tile would double O and Q past the budget, 64 keys would double the LDS).
// LDS rows are 64, 128 or 256 elements (K, V^T of kBlockN keys), per workgroup: d <= 64 16 KB,
// d 96/128 32 KB, the wide buckets 32 KB (192/128: 24 KB), of 64 KB per CU.
// Untuned: no measurement on an MI300 yet.
template <int kQKDim, int kVDim>
struct TileConfig {
  static_assert(kQKDim % 32 == 0 && kVDim % 32 == 0 && kVDim <= kQKDim, "bad bucket");
  static constexpr bool kWide = kQKDim > 128;
  static constexpr int kBlockM = kWide ? 64 : 128;
  static constexpr int kBlockN = kWide ? 32 : 64;
  static constexpr int kWaves = 4;
  static constexpr int kQKWidth = kQKDim <= 64 ? 64 : kQKDim <= 128 ? 128 : 256;  // LDS row of K
  static constexpr int kVWidth = kVDim <= 64 ? 64 : kVDim <= 128 ? 128 : 256;     // LDS rows of V^T
};
// Wavefronts per SIMD the register allocation must allow (HIP's second __launch_bounds__
// argument, amdgpu_waves_per_eu; not CUDA's blocks per SM): 2 caps a lane at 256 VGPRs+AGPRs.
constexpr int kMinWavesPerSimd = 2;

// Which code a call needs beyond the bucket's own head dims at full attention (the CUDA
// kernels' modes, for the same reason: registers): kFixed attention_fwd; kVarlen
// attention_varlen_fwd (cu_seqlens); kGeneral head dims below the bucket's, a window, a
// soft-cap, either op.
enum class Gfx942Mode { kFixed, kVarlen, kGeneral };

// The mode a call runs in bucket (qk, v) (the launcher's rule; the host emulator's too).
inline Gfx942Mode gfx942_mode(const FwdParams& p, int qk, int v) {
  if (p.head_dim != qk || p.head_dim_v != v || p.window_left >= 0 || p.softcap > 0.f) return Gfx942Mode::kGeneral;
  return p.cu_seqlens_q != nullptr ? Gfx942Mode::kVarlen : Gfx942Mode::kFixed;
}

namespace detail {

constexpr int kWave = 64;

typedef uint32_t U32x2 __attribute__((ext_vector_type(2)));
typedef uint32_t U32x4 __attribute__((ext_vector_type(4)));
typedef float F32x4 __attribute__((ext_vector_type(4)));
typedef short I16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 F16x4 __attribute__((ext_vector_type(4)));

// D(16x16, fp32) += A(16x16) * B(16x16) on 16-bit inputs, four per lane in each of a and b:
//   a: lane l holds A[l % 16][4 * (l / 16) + 0..3]
//   b: lane l holds B[4 * (l / 16) + 0..3][l % 16]
//   d: lane l holds D[4 * (l / 16) + 0..3][l % 16]
template <ElementType kType>
__device__ __forceinline__ F32x4 mfma_16x16x16(U32x2 a, U32x2 b, F32x4 d) {
  if constexpr (kType == ElementType::kBF16) {
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(I16x4, a), __builtin_bit_cast(I16x4, b), d,
                                                     0, 0, 0);
  } else {
    return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(F16x4, a), __builtin_bit_cast(F16x4, b), d, 0,
                                                 0, 0);
  }
}

// One float to 16 bits: fp16 by v_cvt_f16_f32 (round to nearest even); bf16 by hand (gfx942
// has no conversion instruction), round to nearest even, NaN kept quiet.
template <ElementType kType>
__device__ __forceinline__ uint32_t to_bits16(float x) {
  if constexpr (kType == ElementType::kF16) {
    return __builtin_bit_cast(uint16_t, static_cast<_Float16>(x));
  } else {
    const uint32_t u = __builtin_bit_cast(uint32_t, x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  }
}
template <ElementType kType>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  return to_bits16<kType>(lo) | (to_bits16<kType>(hi) << 16);
}
template <ElementType kType>
__device__ __forceinline__ U32x2 pack4(F32x4 v) {
  return U32x2{pack2<kType>(v[0], v[1]), pack2<kType>(v[2], v[3])};
}

__device__ __forceinline__ float fast_exp2(float x) {
#if __has_builtin(__builtin_amdgcn_exp2f)
  return __builtin_amdgcn_exp2f(x);  // v_exp_f32; exp2(-inf) = 0
#else
  return exp2f(x);
#endif
}

// tanh(x) = 1 - 2 / (1 + e^(2x)) from v_exp_f32 and a division: absolute error ~1e-7, what
// the softmax of a soft-capped score (a logit) cares about; saturates to +-1.
__device__ __forceinline__ float fast_tanh(float x) {
  constexpr float kTwoLog2e = 2.8853900817779268f;
  return 1.f - __fdividef(2.f, 1.f + fast_exp2(x * kTwoLog2e));
}

__device__ __forceinline__ float wave_xor(float v, int mask) { return __shfl_xor(v, mask, kWave); }

// LDS tiles are rows of 16-byte chunks (8 elements); chunk `chunk` of row `row` sits at chunk
// position chunk ^ swizzle(row). The rows the MFMA operand reads of 8 consecutive lanes touch
// are {0, 1, 2, 3, 8, 9, 10, 11} (+4, +16, ...), which this maps to 8 different positions
// (rows of 4 chunks, the wide buckets' V^T: 4 positions).
__device__ __forceinline__ int swizzle(int row) { return (row & 3) | ((row >> 1) & 4); }
template <int kRowElems>
__device__ __forceinline__ int lds_offset(int row, int chunk) {
  static_assert(kRowElems % 64 == 0 || kRowElems == 32, "the swizzle needs 8 (or 4) chunks per row");
  constexpr int kMask = kRowElems >= 64 ? 7 : 3;
  return row * kRowElems + ((chunk ^ (swizzle(row) & kMask)) << 3);
}

__device__ __forceinline__ U32x4 load16(const uint16_t* p) { return *reinterpret_cast<const U32x4*>(p); }
__device__ __forceinline__ void store16(uint16_t* p, U32x4 v) { *reinterpret_cast<U32x4*>(p) = v; }

// The next K tile in registers: thread t holds chunk t % (W / 8) of rows t / (W / 8) + i *
// kRowsPerPass; rows at or past key_end and chunks at or past valid_chunks are zeros.
template <int kWidth, int kBlockN, int kThreads>
struct KTileRegs {
  static constexpr int kChunksPerRow = kWidth / 8;
  static constexpr int kRowsPerPass = kThreads / kChunksPerRow;
  static constexpr int kPasses = kBlockN / kRowsPerPass;
  static_assert(kThreads % kChunksPerRow == 0 && kBlockN % kRowsPerPass == 0, "K tile must divide among threads");
  U32x4 r[kPasses];

  __device__ __forceinline__ void load(const uint16_t* k, int64_t row_stride, int key0, int key_end, int valid_chunks,
                                       int tid) {
    const int c = tid % kChunksPerRow;
    const bool chunk_in = c < valid_chunks;
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int key = key0 + tid / kChunksPerRow + i * kRowsPerPass;
      r[i] = chunk_in && key < key_end ? load16(k + static_cast<int64_t>(key) * row_stride + c * 8)
                                       : U32x4{0, 0, 0, 0};
    }
  }
  __device__ __forceinline__ void store(uint16_t* sK, int tid) const {
    const int c = tid % kChunksPerRow;
#pragma unroll
    for (int i = 0; i < kPasses; ++i) store16(sK + lds_offset<kWidth>(tid / kChunksPerRow + i * kRowsPerPass, c), r[i]);
  }
};

// The next V tile in registers: thread t holds kKeys (2 or 4) consecutive keys
// (kKeys * (t % kKeyGroups) + 0..kKeys-1) of 8 consecutive dims (chunk t / kKeyGroups), and
// stores them transposed: 8 rows of V^T, kKeys keys (2 kKeys bytes) each.
template <int kWidth, int kBlockN, int kThreads>
struct VTileRegs {
  static constexpr int kKeys = kBlockN * (kWidth / 8) / kThreads;
  static constexpr int kKeyGroups = kBlockN / kKeys;
  static_assert((kKeys == 2 || kKeys == 4) && kKeyGroups * (kWidth / 8) == kThreads,
                "one 2- or 4-key x 8-dim block of V per thread");
  U32x4 r[kKeys];

  __device__ __forceinline__ void load(const uint16_t* v, int64_t row_stride, int key0, int key_end, int valid_chunks,
                                       int tid) {
    const int group = tid % kKeyGroups, chunk = tid / kKeyGroups;
    const bool chunk_in = chunk < valid_chunks;
#pragma unroll
    for (int j = 0; j < kKeys; ++j) {
      const int key = key0 + kKeys * group + j;
      r[j] = chunk_in && key < key_end ? load16(v + static_cast<int64_t>(key) * row_stride + chunk * 8)
                                       : U32x4{0, 0, 0, 0};
    }
  }
  // Dim e (0..7) of keys j0 and j1 as one register: the low (even e) or high (odd e) half of
  // word e / 2 of each.
  __device__ __forceinline__ uint32_t dim_pair(int e, int j0, int j1) const {
    const int w = e >> 1;
    return (e & 1) ? (r[j0][w] >> 16) | (r[j1][w] & 0xffff0000u) : (r[j0][w] & 0xffffu) | (r[j1][w] << 16);
  }
  __device__ __forceinline__ void store_transposed(uint16_t* sVt, int tid) const {
    const int group = tid % kKeyGroups, chunk = tid / kKeyGroups;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int d = chunk * 8 + e;
      if constexpr (kKeys == 4) {
        *reinterpret_cast<U32x2*>(sVt + lds_offset<kBlockN>(d, group >> 1) + ((group & 1) << 2)) =
            U32x2{dim_pair(e, 0, 1), dim_pair(e, 2, 3)};
      } else {
        *reinterpret_cast<uint32_t*>(sVt + lds_offset<kBlockN>(d, group >> 2) + ((group & 3) << 1)) = dim_pair(e, 0, 1);
      }
    }
  }
};

}  // namespace detail

template <int kQKDim, int kVDim, ElementType kType, bool kCausal, Gfx942Mode kMode>
__global__ void __launch_bounds__((TileConfig<kQKDim, kVDim>::kWaves * 64), kMinWavesPerSimd)
    attention_fwd_gfx942_kernel(const FwdParams p) {
  using namespace detail;
  using Cfg = TileConfig<kQKDim, kVDim>;
  constexpr int kBlockM = Cfg::kBlockM;
  constexpr int kBlockN = Cfg::kBlockN;
  constexpr int kThreads = Cfg::kWaves * kWave;
  constexpr int kQTiles = kBlockM / (16 * Cfg::kWaves);  // 16-query tiles per wavefront
  constexpr int kQKGroups = kQKDim / 32;                 // 32-dim groups of S^T: two MFMA k-steps each
  constexpr int kVGroups = kVDim / 32;                   // 32-dim groups of O^T
  constexpr int kKeyPairs = kBlockN / 32;                // 32-key groups: two 16-key MFMA tiles each
  constexpr bool kGeneral = kMode == Gfx942Mode::kGeneral;
  constexpr float kLog2e = 1.4426950408889634f;
  constexpr float kLn2 = 0.6931471805599453f;
  static_assert(kQTiles >= 1 && kBlockM == kQTiles * 16 * Cfg::kWaves, "bad tile config");
  static_assert(kBlockN % 32 == 0, "bad tile config");

  __shared__ __attribute__((aligned(16))) uint16_t sK[kBlockN * Cfg::kQKWidth];  // [key][dim]
  __shared__ __attribute__((aligned(16))) uint16_t sVt[Cfg::kVWidth * kBlockN];  // [dim][key]

  const int tid = threadIdx.x;
  const int lane = tid % kWave;
  const int wave = tid / kWave;
  const int c = lane & 15;  // the query (column) of an MFMA result this lane holds
  const int g = lane >> 4;  // which 4 rows of it / which 8-element chunk of an operand row

  // Causal tiles at the end of the sequence do the most work: launch them first.
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const int head = blockIdx.y;
  const int batch = blockIdx.z;
  const SeqBounds seq = launch_seq_bounds<kMode != Gfx942Mode::kFixed>(p, batch);
  const int seqlen_q = static_cast<int>(seq.len_q);
  const int seqlen_k = static_cast<int>(seq.len_k);
  const int m0 = m_block * kBlockM;
  if (m0 >= seqlen_q) return;  // varlen: a sequence shorter than max_seqlen_q
  const int kv_head = head / (p.heads_q / p.heads_kv);
  const int wave_q0 = m0 + wave * 16 * kQTiles;
  const int window_left = kGeneral ? p.window_left : -1;
  const int qk_chunks = kGeneral ? p.head_dim / 8 : kQKDim / 8;
  const int v_chunks = kGeneral ? p.head_dim_v / 8 : kVDim / 8;

  const uint16_t* q = static_cast<const uint16_t*>(p.q) + batch * p.q_batch_stride + seq.q_start * p.q_row_stride +
                      head * p.q_head_stride;
  const uint16_t* k = static_cast<const uint16_t*>(p.k) + batch * p.k_batch_stride + seq.k_start * p.k_row_stride +
                      kv_head * p.k_head_stride;
  const uint16_t* v = static_cast<const uint16_t*>(p.v) + batch * p.v_batch_stride + seq.k_start * p.v_row_stride +
                      kv_head * p.v_head_stride;
  uint16_t* out = static_cast<uint16_t*>(p.out) + batch * p.o_batch_stride + seq.q_start * p.o_row_stride +
                  head * p.o_head_stride;

  const TileVisibility<int> vis = tile_visibility<int>(m0, kBlockM, seqlen_q, seqlen_k, kCausal, window_left, kBlockN);

  // O^T accumulators: acc_o[qt][m][h][r] = O[query wave_q0 + 16 qt + c][dim 32 m + 8 g + 4 h + r].
  F32x4 acc_o[kQTiles][kVGroups][2];
  float row_max[kQTiles];  // running max of the log2-domain scores of this lane's query
  float row_sum[kQTiles];  // this lane's partial running sum (reduced over g at the end)
#pragma unroll
  for (int qt = 0; qt < kQTiles; ++qt) {
#pragma unroll
    for (int m = 0; m < kVGroups; ++m) acc_o[qt][m][0] = acc_o[qt][m][1] = F32x4{0.f, 0.f, 0.f, 0.f};
    row_max[qt] = -INFINITY;
    row_sum[qt] = 0.f;
  }

  if (vis.blocks() > 0) {
    const float scale_log2 = p.scale * kLog2e;

    // Q as the B operand of S^T = K Q^T, for the whole kernel: q_frag[qt][s] holds dims
    // 32 s + 8 g + 0..7 of query wave_q0 + 16 qt + c (zeros past seqlen_q and the head dim).
    U32x4 q_frag[kQTiles][kQKGroups];
#pragma unroll
    for (int qt = 0; qt < kQTiles; ++qt) {
      const int row = wave_q0 + qt * 16 + c;
#pragma unroll
      for (int s = 0; s < kQKGroups; ++s)
        q_frag[qt][s] = row < seqlen_q && 4 * s + g < qk_chunks
                            ? load16(q + static_cast<int64_t>(row) * p.q_row_stride + s * 32 + g * 8)
                            : U32x4{0, 0, 0, 0};
    }

    // Key tiles from last to first: the tiles that need masking come first. Per tile, two
    // barriers and one tile in registers at a time:
    //   store K (loaded during the last P V) | barrier | load V; S = K Q^T; softmax |
    //   store V^T | barrier | load the next K; O += V^T P^T
    // Storing K needs no barrier before it: every wavefront has passed the previous tile's
    // second barrier, so it is done reading sK; likewise all have passed this tile's first
    // barrier, so they are done reading sVt, before anyone stores V^T.
    int n_block = vis.n_hi - 1;
    KTileRegs<Cfg::kQKWidth, kBlockN, kThreads> k_next;
    VTileRegs<Cfg::kVWidth, kBlockN, kThreads> v_next;
    k_next.load(k, p.k_row_stride, n_block * kBlockN, seqlen_k, qk_chunks, tid);

    for (; n_block >= vis.n_lo; --n_block) {
      k_next.store(sK, tid);
      __syncthreads();
      v_next.load(v, p.v_row_stride, n_block * kBlockN, seqlen_k, v_chunks, tid);  // lands during S and softmax

      // S^T = K Q^T: acc_s[qt][kp][h][r] = S[query wave_q0 + 16 qt + c][key 32 kp + 8 g + 4 h + r]
      // (relative to the tile). MFMA row i of half h is key 32 kp + 8 (i / 4) + 4 h + i % 4,
      // read by lane c = i; its 16 bytes are dims 32 s + 8 g + 0..7, the first 4 for one
      // k-step, the last 4 for the next, matching q_frag.
      F32x4 acc_s[kQTiles][kKeyPairs][2];
#pragma unroll
      for (int qt = 0; qt < kQTiles; ++qt)
#pragma unroll
        for (int kp = 0; kp < kKeyPairs; ++kp) acc_s[qt][kp][0] = acc_s[qt][kp][1] = F32x4{0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int s = 0; s < kQKGroups; ++s) {
#pragma unroll
        for (int kp = 0; kp < kKeyPairs; ++kp) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int key_row = 32 * kp + 8 * (c >> 2) + 4 * h + (c & 3);
            const U32x4 a = load16(sK + lds_offset<Cfg::kQKWidth>(key_row, 4 * s + g));
#pragma unroll
            for (int qt = 0; qt < kQTiles; ++qt) {
              acc_s[qt][kp][h] = mfma_16x16x16<kType>(a.xy, q_frag[qt][s].xy, acc_s[qt][kp][h]);
              acc_s[qt][kp][h] = mfma_16x16x16<kType>(a.zw, q_frag[qt][s].zw, acc_s[qt][kp][h]);
            }
          }
        }
      }

      // Online softmax. Masking is needed only where some row of the tile sees the block in
      // part (its end, the causal diagonal, the window's left edge).
      const int key0 = n_block * kBlockN;
      const bool need_mask = vis.needs_mask(n_block, kBlockN);
      U32x2 p_frag[kQTiles][kKeyPairs][2];  // P^T as the B operand of O^T += V^T P^T
#pragma unroll
      for (int qt = 0; qt < kQTiles; ++qt) {
#pragma unroll
        for (int kp = 0; kp < kKeyPairs; ++kp)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            if (kGeneral && p.softcap > 0.f) {
#pragma unroll
              for (int r = 0; r < 4; ++r)
                acc_s[qt][kp][h][r] = p.softcap_log2 * fast_tanh(acc_s[qt][kp][h][r] * p.scale_over_softcap);
            } else {
              acc_s[qt][kp][h] *= scale_log2;
            }
          }
        if (need_mask) {
          const int row = wave_q0 + qt * 16 + c;
          const KeyRange<int> seen = visible_keys<int>(row, seqlen_q, seqlen_k, kCausal, window_left);
#pragma unroll
          for (int kp = 0; kp < kKeyPairs; ++kp)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
              for (int r = 0; r < 4; ++r) {
                const int key = key0 + 32 * kp + 8 * g + 4 * h + r;
                // Without a window no key falls off the left end of a row's range.
                if ((kGeneral && key < seen.lo) || key >= seen.end) acc_s[qt][kp][h][r] = -INFINITY;
              }
        }
        float mx = row_max[qt];
#pragma unroll
        for (int kp = 0; kp < kKeyPairs; ++kp)
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int r = 0; r < 4; ++r) mx = fmaxf(mx, acc_s[qt][kp][h][r]);
        mx = fmaxf(mx, wave_xor(mx, 16));
        mx = fmaxf(mx, wave_xor(mx, 32));
        // A row that has seen only masked keys keeps max -inf; subtract 0 then so that
        // exp2(-inf - max) is 0, not NaN.
        const float base = mx == -INFINITY ? 0.f : mx;
        const float correction = fast_exp2(row_max[qt] - base);
        row_max[qt] = mx;
        float sum = 0.f;
#pragma unroll
        for (int kp = 0; kp < kKeyPairs; ++kp) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            F32x4 pv;
#pragma unroll
            for (int r = 0; r < 4; ++r) {
              pv[r] = fast_exp2(acc_s[qt][kp][h][r] - base);
              sum += pv[r];
            }
            p_frag[qt][kp][h] = pack4<kType>(pv);
          }
        }
        row_sum[qt] = row_sum[qt] * correction + sum;
#pragma unroll
        for (int m = 0; m < kVGroups; ++m) {
          acc_o[qt][m][0] *= correction;
          acc_o[qt][m][1] *= correction;
        }
      }

      v_next.store_transposed(sVt, tid);
      __syncthreads();
      if (n_block > vis.n_lo)
        k_next.load(k, p.k_row_stride, (n_block - 1) * kBlockN, seqlen_k, qk_chunks, tid);  // lands during P V

      // O^T += V^T P^T. MFMA row i of half h is dim 32 m + 8 (i / 4) + 4 h + i % 4, read by
      // lane c = i; its 16 bytes are keys 32 kp + 8 g + 0..7: the first 4 pair with
      // p_frag[..][kp][0], the last 4 with p_frag[..][kp][1].
#pragma unroll
      for (int m = 0; m < kVGroups; ++m) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int dim_row = 32 * m + 8 * (c >> 2) + 4 * h + (c & 3);
#pragma unroll
          for (int kp = 0; kp < kKeyPairs; ++kp) {
            const U32x4 a = load16(sVt + lds_offset<kBlockN>(dim_row, 4 * kp + g));
#pragma unroll
            for (int qt = 0; qt < kQTiles; ++qt) {
              acc_o[qt][m][h] = mfma_16x16x16<kType>(a.xy, p_frag[qt][kp][0], acc_o[qt][m][h]);
              acc_o[qt][m][h] = mfma_16x16x16<kType>(a.zw, p_frag[qt][kp][1], acc_o[qt][m][h]);
            }
          }
        }
      }
    }
  }

  // Epilogue: normalize, write lse, store O: each lane writes dims 32 m + 8 g + 0..7 of its
  // query as one 16-byte store per m (those within the call's v head dim).
#pragma unroll
  for (int qt = 0; qt < kQTiles; ++qt) {
    float sum = row_sum[qt];
    sum += wave_xor(sum, 16);
    sum += wave_xor(sum, 32);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const int row = wave_q0 + qt * 16 + c;
    if (row >= seqlen_q) continue;
    if (p.lse != nullptr && g == 0) {
      const float lse = sum > 0.f ? (row_max[qt] + log2f(sum)) * kLn2 : -INFINITY;
      p.lse[batch * p.lse_batch_stride + head * p.lse_head_stride + (seq.q_start + row) * p.lse_row_stride] = lse;
    }
    uint16_t* orow = out + static_cast<int64_t>(row) * p.o_row_stride;
#pragma unroll
    for (int m = 0; m < kVGroups; ++m) {
      if (4 * m + g >= v_chunks) continue;
      const F32x4 lo = acc_o[qt][m][0] * inv, hi = acc_o[qt][m][1] * inv;
      store16(orow + 32 * m + 8 * g, U32x4{pack2<kType>(lo[0], lo[1]), pack2<kType>(lo[2], lo[3]),
                                           pack2<kType>(hi[0], hi[1]), pack2<kType>(hi[2], hi[3])});
    }
  }
}

// The launchers. tests/hip/emulate/ compiles the kernel above alone, on the host, with a SIMT
// emulator in place of the HIP headers (KH_GFX942_EMULATION), and checks it against a float64
// reference: there is no AMD GPU to run it on.
#if !defined(KH_GFX942_EMULATION)
template <int kQKDim, int kVDim, ElementType kType, bool kCausal, Gfx942Mode kMode>
hipError_t launch_attention_fwd_gfx942(const FwdParams& p, hipStream_t stream) {
  using Cfg = TileConfig<kQKDim, kVDim>;
  const dim3 grid((p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM, p.heads_q, p.batch);
  attention_fwd_gfx942_kernel<kQKDim, kVDim, kType, kCausal, kMode><<<grid, Cfg::kWaves * 64, 0, stream>>>(p);
  return hipGetLastError();
}

template <int kQKDim, int kVDim, ElementType kType>
hipError_t run_attention_fwd_gfx942_instance(const FwdParams& p, hipStream_t stream) {
  auto run = [&](auto mode) {
    constexpr Gfx942Mode kMode = decltype(mode)::value;
    return p.causal ? launch_attention_fwd_gfx942<kQKDim, kVDim, kType, true, kMode>(p, stream)
                    : launch_attention_fwd_gfx942<kQKDim, kVDim, kType, false, kMode>(p, stream);
  };
  switch (gfx942_mode(p, kQKDim, kVDim)) {
    case Gfx942Mode::kGeneral: return run(std::integral_constant<Gfx942Mode, Gfx942Mode::kGeneral>{});
    case Gfx942Mode::kVarlen: return run(std::integral_constant<Gfx942Mode, Gfx942Mode::kVarlen>{});
    default: return run(std::integral_constant<Gfx942Mode, Gfx942Mode::kFixed>{});
  }
}
#endif  // !KH_GFX942_EMULATION

}  // namespace kh_attention::gfx942
