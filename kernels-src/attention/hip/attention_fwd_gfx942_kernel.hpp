// attention_fwd_gfx942_kernel.hpp: FlashAttention-2 style forward kernel for AMD CDNA3
// (gfx942, MI300) on MFMA matrix cores.
//
// Computes out = softmax(scale * q k^T [+ causal mask]) v per (batch, head) and, when asked,
// lse = log(sum(exp(scale * q k^T))) per query row, in one pass over K/V. The algorithm is
// the verified CUDA sm80 kernel's (../cuda/attention_fwd_sm80.cuh); what differs is how the
// work maps onto a 64-lane wavefront and v_mfma_f32_16x16x16{bf16_1k,f16}:
//  - one workgroup (4 wavefronts) per (q tile of kBlockM = 128 rows, head, batch); each
//    wavefront owns 32 whole query rows (two 16-row tiles); Q stays in registers;
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
//    over keys), two workgroup barriers per tile; 16-byte
//    chunks are XOR-swizzled by row so the 8 rows a ds_read_b128 phase touches hit 8
//    different bank groups;
//  - online softmax in fp32 with exp2 (v_exp_f32) and the log2(e)-folded scale; O stays in
//    registers (MFMA accumulators);
//  - causal is aligned bottom-right (query i sees keys j <= i + seqlen_k - seqlen_q); a row
//    that sees no key writes out = 0 and lse = -inf.
// Not run on a GPU yet (no AMD GPU is reachable from the build machines): see hip/NOTES.md.
// Included by the attention_fwd_gfx942_hd<D>_<dtype>.hip translation units only.
#pragma once

#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdint>

#include "attention_fwd_gfx942.hpp"

namespace kh_attention::gfx942 {

// Tile shapes per head dim: 128 query rows (4 wavefronts x 32) by 64 keys. Chosen so that a
// wavefront's state fits 256 VGPRs+AGPRs without spilling (clang-19 -O3: d=128 228-256,
// d=64 150-173), which lets
// two workgroups share a CU (two wavefronts per SIMD, one hiding the other's barriers):
//   d=128: O 64 + S 32 fp32, P 16, Q 32; the next K or V tile 16 VGPRs;
//   d=64:  O 32 + S 32 fp32, P 16, Q 16; the next K (8) or V (8) tile.
// (d=64 with 128 keys per tile, FlashAttention-2's sm80 choice, spilled 9-12 VGPRs at that
// cap.) LDS: K + V^T = 16 KB (d=128: 32 KB) per workgroup, of 64 KB per CU.
// Untuned: no measurement on an MI300 yet.
template <int kHeadDim>
struct TileConfig;
template <>
struct TileConfig<64> {
  static constexpr int kBlockM = 128, kBlockN = 64, kWaves = 4;
};
template <>
struct TileConfig<128> {
  static constexpr int kBlockM = 128, kBlockN = 64, kWaves = 4;
};
// Wavefronts per SIMD the register allocation must allow (HIP's second __launch_bounds__
// argument, amdgpu_waves_per_eu; not CUDA's blocks per SM): 2 caps a lane at 256 VGPRs+AGPRs.
constexpr int kMinWavesPerSimd = 2;

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

__device__ __forceinline__ float wave_xor(float v, int mask) { return __shfl_xor(v, mask, kWave); }

// LDS tiles are rows of 16-byte chunks (8 elements); chunk `chunk` of row `row` sits at chunk
// position chunk ^ swizzle(row). The rows the MFMA operand reads of 8 consecutive lanes touch
// are {0, 1, 2, 3, 8, 9, 10, 11} (+4, +16, ...), which this maps to 8 different positions.
__device__ __forceinline__ int swizzle(int row) { return (row & 3) | ((row >> 1) & 4); }
template <int kRowElems>
__device__ __forceinline__ int lds_offset(int row, int chunk) {
  static_assert(kRowElems >= 64, "the swizzle needs 8 chunks per row");
  return row * kRowElems + ((chunk ^ swizzle(row)) << 3);
}

__device__ __forceinline__ U32x4 load16(const uint16_t* p) { return *reinterpret_cast<const U32x4*>(p); }
__device__ __forceinline__ void store16(uint16_t* p, U32x4 v) { *reinterpret_cast<U32x4*>(p) = v; }

// The next K tile in registers: thread t holds chunk t % (D / 8) of rows t / (D / 8) + i *
// kRowsPerPass; rows at or past seqlen_k are zeros.
template <int kHeadDim, int kBlockN, int kThreads>
struct KTileRegs {
  static constexpr int kChunksPerRow = kHeadDim / 8;
  static constexpr int kRowsPerPass = kThreads / kChunksPerRow;
  static constexpr int kPasses = kBlockN / kRowsPerPass;
  static_assert(kThreads % kChunksPerRow == 0 && kBlockN % kRowsPerPass == 0, "K tile must divide among threads");
  U32x4 r[kPasses];

  __device__ __forceinline__ void load(const uint16_t* k, int64_t row_stride, int key0, int seqlen_k, int tid) {
    const int c = tid % kChunksPerRow;
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int key = key0 + tid / kChunksPerRow + i * kRowsPerPass;
      r[i] = key < seqlen_k ? load16(k + static_cast<int64_t>(key) * row_stride + c * 8) : U32x4{0, 0, 0, 0};
    }
  }
  __device__ __forceinline__ void store(uint16_t* sK, int tid) const {
    const int c = tid % kChunksPerRow;
#pragma unroll
    for (int i = 0; i < kPasses; ++i) store16(sK + lds_offset<kHeadDim>(tid / kChunksPerRow + i * kRowsPerPass, c), r[i]);
  }
};

// The next V tile in registers: thread t holds kKeys (2 or 4) consecutive keys
// (kKeys * (t % kKeyGroups) + 0..kKeys-1) of 8 consecutive dims (chunk t / kKeyGroups), and
// stores them transposed: 8 rows of V^T, kKeys keys (2 kKeys bytes) each.
template <int kHeadDim, int kBlockN, int kThreads>
struct VTileRegs {
  static constexpr int kKeys = kBlockN * (kHeadDim / 8) / kThreads;
  static constexpr int kKeyGroups = kBlockN / kKeys;
  static_assert((kKeys == 2 || kKeys == 4) && kKeyGroups * (kHeadDim / 8) == kThreads,
                "one 2- or 4-key x 8-dim block of V per thread");
  U32x4 r[kKeys];

  __device__ __forceinline__ void load(const uint16_t* v, int64_t row_stride, int key0, int seqlen_k, int tid) {
    const int group = tid % kKeyGroups, chunk = tid / kKeyGroups;
#pragma unroll
    for (int j = 0; j < kKeys; ++j) {
      const int key = key0 + kKeys * group + j;
      r[j] = key < seqlen_k ? load16(v + static_cast<int64_t>(key) * row_stride + chunk * 8) : U32x4{0, 0, 0, 0};
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

template <int kHeadDim, ElementType kType, bool kCausal>
__global__ void __launch_bounds__(TileConfig<kHeadDim>::kWaves * 64, kMinWavesPerSimd)
    attention_fwd_gfx942_kernel(const FwdParams p) {
  using namespace detail;
  using Cfg = TileConfig<kHeadDim>;
  constexpr int kBlockM = Cfg::kBlockM;
  constexpr int kBlockN = Cfg::kBlockN;
  constexpr int kThreads = Cfg::kWaves * kWave;
  constexpr int kQTiles = kBlockM / (16 * Cfg::kWaves);  // 16-query tiles per wavefront
  constexpr int kDimGroups = kHeadDim / 32;              // 32-dim groups: two MFMA k-steps each
  constexpr int kKeyPairs = kBlockN / 32;                // 32-key groups: two 16-key MFMA tiles each
  constexpr float kLog2e = 1.4426950408889634f;
  constexpr float kLn2 = 0.6931471805599453f;
  static_assert(kQTiles >= 1 && kBlockM == kQTiles * 16 * Cfg::kWaves, "bad tile config");
  static_assert(kHeadDim % 32 == 0 && kBlockN % 32 == 0, "bad tile config");

  __shared__ __attribute__((aligned(16))) uint16_t sK[kBlockN * kHeadDim];   // [key][dim]
  __shared__ __attribute__((aligned(16))) uint16_t sVt[kHeadDim * kBlockN];  // [dim][key]

  const int tid = threadIdx.x;
  const int lane = tid % kWave;
  const int wave = tid / kWave;
  const int c = lane & 15;  // the query (column) of an MFMA result this lane holds
  const int g = lane >> 4;  // which 4 rows of it / which 8-element chunk of an operand row

  // Causal tiles at the end of the sequence do the most work: launch them first.
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const int head = blockIdx.y;
  const int batch = blockIdx.z;
  const int kv_head = head / (p.heads_q / p.heads_kv);
  const int m0 = m_block * kBlockM;
  const int wave_q0 = m0 + wave * 16 * kQTiles;
  const int seqlen_q = p.seqlen_q;
  const int seqlen_k = p.seqlen_k;
  const int causal_shift = seqlen_k - seqlen_q;  // query i sees keys j <= i + causal_shift

  const uint16_t* q = static_cast<const uint16_t*>(p.q) + batch * p.q_batch_stride + head * p.q_head_stride;
  const uint16_t* k = static_cast<const uint16_t*>(p.k) + batch * p.k_batch_stride + kv_head * p.k_head_stride;
  const uint16_t* v = static_cast<const uint16_t*>(p.v) + batch * p.v_batch_stride + kv_head * p.v_head_stride;
  uint16_t* out = static_cast<uint16_t*>(p.out) + batch * p.o_batch_stride + head * p.o_head_stride;

  int n_blocks = (seqlen_k + kBlockN - 1) / kBlockN;
  if constexpr (kCausal) {
    const int last_key = m0 + kBlockM - 1 + causal_shift;  // last key any row of the tile sees
    n_blocks = last_key < 0 ? 0 : min(n_blocks, last_key / kBlockN + 1);
  }

  // O^T accumulators: acc_o[qt][m][h][r] = O[query wave_q0 + 16 qt + c][dim 32 m + 8 g + 4 h + r].
  F32x4 acc_o[kQTiles][kDimGroups][2];
  float row_max[kQTiles];  // running max of scale*log2(e)*s of this lane's query
  float row_sum[kQTiles];  // this lane's partial running sum (reduced over g at the end)
#pragma unroll
  for (int qt = 0; qt < kQTiles; ++qt) {
#pragma unroll
    for (int m = 0; m < kDimGroups; ++m) acc_o[qt][m][0] = acc_o[qt][m][1] = F32x4{0.f, 0.f, 0.f, 0.f};
    row_max[qt] = -INFINITY;
    row_sum[qt] = 0.f;
  }

  if (n_blocks > 0) {
    const float scale_log2 = p.scale * kLog2e;

    // Q as the B operand of S^T = K Q^T, for the whole kernel: q_frag[qt][s] holds dims
    // 32 s + 8 g + 0..7 of query wave_q0 + 16 qt + c (zeros past seqlen_q).
    U32x4 q_frag[kQTiles][kDimGroups];
#pragma unroll
    for (int qt = 0; qt < kQTiles; ++qt) {
      const int row = wave_q0 + qt * 16 + c;
#pragma unroll
      for (int s = 0; s < kDimGroups; ++s)
        q_frag[qt][s] = row < seqlen_q ? load16(q + static_cast<int64_t>(row) * p.q_row_stride + s * 32 + g * 8)
                                       : U32x4{0, 0, 0, 0};
    }

    // Key tiles from last to first: the tiles that need masking come first. Per tile, two
    // barriers and one tile in registers at a time:
    //   store K (loaded during the last P V) | barrier | load V; S = K Q^T; softmax |
    //   store V^T | barrier | load the next K; O += V^T P^T
    // Storing K needs no barrier before it: every wavefront has passed the previous tile's
    // second barrier, so it is done reading sK; likewise all have passed this tile's first
    // barrier, so they are done reading sVt, before anyone stores V^T.
    int n_block = n_blocks - 1;
    KTileRegs<kHeadDim, kBlockN, kThreads> k_next;
    VTileRegs<kHeadDim, kBlockN, kThreads> v_next;
    k_next.load(k, p.k_row_stride, n_block * kBlockN, seqlen_k, tid);

    for (; n_block >= 0; --n_block) {
      k_next.store(sK, tid);
      __syncthreads();
      v_next.load(v, p.v_row_stride, n_block * kBlockN, seqlen_k, tid);  // lands during S and softmax

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
      for (int s = 0; s < kDimGroups; ++s) {
#pragma unroll
        for (int kp = 0; kp < kKeyPairs; ++kp) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int key_row = 32 * kp + 8 * (c >> 2) + 4 * h + (c & 3);
            const U32x4 a = load16(sK + lds_offset<kHeadDim>(key_row, 4 * s + g));
#pragma unroll
            for (int qt = 0; qt < kQTiles; ++qt) {
              acc_s[qt][kp][h] = mfma_16x16x16<kType>(a.xy, q_frag[qt][s].xy, acc_s[qt][kp][h]);
              acc_s[qt][kp][h] = mfma_16x16x16<kType>(a.zw, q_frag[qt][s].zw, acc_s[qt][kp][h]);
            }
          }
        }
      }

      // Online softmax. Masking is needed only where the tile crosses seqlen_k or the causal
      // diagonal of the workgroup's first row.
      const int key0 = n_block * kBlockN;
      bool need_mask = key0 + kBlockN > seqlen_k;
      if constexpr (kCausal) need_mask = need_mask || key0 + kBlockN - 1 > m0 + causal_shift;
      U32x2 p_frag[kQTiles][kKeyPairs][2];  // P^T as the B operand of O^T += V^T P^T
#pragma unroll
      for (int qt = 0; qt < kQTiles; ++qt) {
#pragma unroll
        for (int kp = 0; kp < kKeyPairs; ++kp) {
          acc_s[qt][kp][0] *= scale_log2;
          acc_s[qt][kp][1] *= scale_log2;
        }
        if (need_mask) {
          const int row = wave_q0 + qt * 16 + c;
          int key_end = seqlen_k;  // first key this row may not see
          if constexpr (kCausal) key_end = min(key_end, row + causal_shift + 1);
#pragma unroll
          for (int kp = 0; kp < kKeyPairs; ++kp)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
              for (int r = 0; r < 4; ++r)
                if (key0 + 32 * kp + 8 * g + 4 * h + r >= key_end) acc_s[qt][kp][h][r] = -INFINITY;
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
        for (int m = 0; m < kDimGroups; ++m) {
          acc_o[qt][m][0] *= correction;
          acc_o[qt][m][1] *= correction;
        }
      }

      v_next.store_transposed(sVt, tid);
      __syncthreads();
      if (n_block > 0) k_next.load(k, p.k_row_stride, (n_block - 1) * kBlockN, seqlen_k, tid);  // lands during P V

      // O^T += V^T P^T. MFMA row i of half h is dim 32 m + 8 (i / 4) + 4 h + i % 4, read by
      // lane c = i; its 16 bytes are keys 32 kp + 8 g + 0..7: the first 4 pair with
      // p_frag[..][kp][0], the last 4 with p_frag[..][kp][1].
#pragma unroll
      for (int m = 0; m < kDimGroups; ++m) {
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
  // query as one 16-byte store per m.
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
      p.lse[batch * p.lse_batch_stride + head * p.lse_head_stride + static_cast<int64_t>(row) * p.lse_row_stride] =
          lse;
    }
    uint16_t* orow = out + static_cast<int64_t>(row) * p.o_row_stride;
#pragma unroll
    for (int m = 0; m < kDimGroups; ++m) {
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
template <int kHeadDim, ElementType kType, bool kCausal>
hipError_t launch_attention_fwd_gfx942(const FwdParams& p, hipStream_t stream) {
  using Cfg = TileConfig<kHeadDim>;
  const dim3 grid((p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM, p.heads_q, p.batch);
  attention_fwd_gfx942_kernel<kHeadDim, kType, kCausal><<<grid, Cfg::kWaves * 64, 0, stream>>>(p);
  return hipGetLastError();
}

template <int kHeadDim, ElementType kType>
hipError_t run_attention_fwd_gfx942_instance(const FwdParams& p, hipStream_t stream) {
  return p.causal ? launch_attention_fwd_gfx942<kHeadDim, kType, true>(p, stream)
                  : launch_attention_fwd_gfx942<kHeadDim, kType, false>(p, stream);
}
#endif  // !KH_GFX942_EMULATION

}  // namespace kh_attention::gfx942
