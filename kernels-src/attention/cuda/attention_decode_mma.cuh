// attention_decode_mma.cuh: the tensor-core building blocks of the CUDA decode split kernels
// (mma.sync m16n8k16, movmatrix, cp.async: valid on sm80 and sm90a), and the register split
// kernel that serves head dims above 128 (and KH_ATTENTION_DECODE_VARIANT=tcpv). Included by
// attention_decode.cuh after the shared kernel bodies (Tile, MergeSmem, decode_epilogue); the
// default kernel for head dims up to 128 is attention_decode_staged.cuh.
//
// The register kernel: each warp takes 16 keys at a time, and both products run on the tensor
// cores, with K and V loaded straight from global memory into fragments:
//  - S^T = K Q^T: K is the A operand (16 keys x 16 dims), the tile's query rows (up to 8) the B
//    operand (n = 8). The contraction runs over head dims in any order both operands agree on,
//    so each lane loads whole 16-byte chunks (8 dims of key g and of key g + 8, g = lane / 4):
//    chunk c + 4j (c = lane % 4) feeds mma 2j (words 0, 1) and 2j + 1 (words 2, 3), and q sits in
//    the B registers in the same permuted order (loaded once).
//  - softmax on the accumulator fragment: lane (g, c) holds keys g, g + 8 x rows 2c, 2c + 1;
//    row maxima reduce over the 8 lanes of a column (3 shuffles), exp2 once per score.
//  - O^T += V^T P^T (tile_pv_tensor below): V loaded as K is, transposed into A fragments by
//    movmatrix; P^T out of the score accumulator the same way.
// Why not the default below 128 dims: a warp instruction reads 64 bytes of each of 16 rows, half
// a line, and the L2 fabric saturates at ~3.9 TB/s (cuda/NOTES.md "Decode", runs 6-8); the
// staged kernel copies whole lines. Above 128 dims its shared-memory ring would not fit 3 CTAs.
// Tiles are aligned to multiples of 16 keys, so with block_size >= 16 one block-table entry
// serves a whole tile; smaller blocks look up each key.
#pragma once

#include <type_traits>

namespace kh_attention {
namespace decode {

// The q row that lane row g of the tile reads (a row past the tile's rows reads its first one,
// so every lane loads valid memory; its scores are never used).
KH_DEC_DEV const uint16_t* tile_q_row(const DecodeParams& p, const Tile& t, int g) {
  const int idx = t.r0 + (g < t.nrows ? g : 0);
  const int i = idx / t.group, h = t.kv_head * t.group + (idx - i * t.group);
  return static_cast<const uint16_t*>(p.q) + static_cast<int64_t>(t.b) * p.q_batch_stride +
         static_cast<int64_t>(i) * p.q_row_stride + static_cast<int64_t>(h) * p.q_head_stride;
}

// The end of a tensor-core split kernel, after its key loop: each row's sum over the 8 lanes of
// its column (lane (g, c) holds rows 2c, 2c + 1), then this lane's row statistics into the merge
// buffer (the partial outputs are already there), and the merge of the CTA's warps.
KH_DEC_DEV void sum_rows_over_column(float (&l)[2]) {
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    l[k] += __shfl_xor_sync(0xffffffffu, l[k], 4);
    l[k] += __shfl_xor_sync(0xffffffffu, l[k], 8);
    l[k] += __shfl_xor_sync(0xffffffffu, l[k], 16);
  }
}

template <typename Tag, int ROWS, int THREADS = kThreads, int PAD = 0>
KH_DEC_DEV void finish_split_tile(const DecodeParams& p, const Tile& t, MergeSmem<32, ROWS, THREADS, PAD>& sm, int warp,
                                  int g, int c, const float (&m)[2], const float (&l)[2]) {
  if (g == 0) {
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int r = 2 * c + k;
      if (r < ROWS) {
        sm.m[warp][r] = m[k];
        sm.l[warp][r] = l[k];
      }
    }
  }
  __syncthreads();
  decode_epilogue<Tag, 32, ROWS, THREADS>(p, t, sm);
}

template <typename Tag>
__device__ __forceinline__ void mma_16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                          uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<Tag, Bf16Tag>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

// Where key `key` of the CTA's sequence lives (element offset of its head's row in the cache).
__device__ __forceinline__ int64_t key_row(const int32_t* table, int key, int shift, int mask, int64_t block_stride,
                                           int64_t row_stride) {
  return static_cast<int64_t>(table[key >> shift]) * block_stride + static_cast<int64_t>(key & mask) * row_stride;
}

// cp.async helpers (sm80+): 16 bytes global -> shared, zero-filled when src_bytes is 0, under
// an L2 eviction policy (createpolicy; kv_stream_policy below).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes, uint64_t policy) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(gmem),
               "r"(src_bytes), "l"(policy));
}
// The same copy to shared address dst, or 16 zeros where skip; skip is cp.async's ignore-src
// predicate, so src is not read then and no select of address or size is needed a copy.
__device__ __forceinline__ void cp_async16_or_zeros(uint32_t dst, const void* src, bool skip, uint64_t policy) {
  asm volatile(
      "{\n .reg .pred s;\n setp.ne.b32 s, %2, 0;\n"
      " cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, s, %3;\n}\n" ::"r"(dst),
      "l"(src), "r"(static_cast<int>(skip)), "l"(policy));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// L2 policies for K/V: evict_first where each byte is read by one CTA (a kv head's rows in one
// row tile: H200, b1 x 32k -4%, the long shapes -0-0.7%), evict_unchanged where the row tiles
// of a kv head re-read them.
__device__ __forceinline__ uint64_t kv_stream_policy(bool read_once) {
  uint64_t policy;
  if (read_once)
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  else
    asm volatile("createpolicy.fractional.L2::evict_unchanged.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// One 16-key tile's scores to probabilities, in place (sc[0], sc[1]: key first_key, rows 2c and
// 2c + 1; sc[2], sc[3]: key first_key + 8): scale (base 2), soft-cap and masks, then each row's
// online softmax (the max over the tile's 16 keys is over the 8 lanes of column c) and running
// sum; corr gets each of the two rows' factor for what was accumulated before. Both split
// kernels (this file's and the staged one) share it. key_a, key_b: the keys of sc[0..1] and
// sc[2..3] (the lane's tile + g and tile + g + 8), or kLeftOutKey for a key whose block id is bad
// (decode_block_ok): past every key_end, so masked as keys past the end are, at no cost a score.
constexpr int kLeftOutKey = INT_MAX;
__device__ __forceinline__ void tile_probabilities(float (&sc)[4], float (&m)[2], float (&l)[2], float (&corr)[2],
                                                   int key_a, int key_b, int key_end, const int (&pos)[2],
                                                   const int (&low)[2], bool softcap, float s_scale, float cap_log2,
                                                   float inv_cap) {
#pragma unroll
  for (int v = 0; v < 4; ++v) {
    const int key = v >= 2 ? key_b : key_a, k = v & 1;
    float x = sc[v];
    if (softcap) x = cap_log2 * tanhf(x * s_scale * inv_cap);
    else x *= s_scale;
    const bool seen = key < key_end && key <= pos[k] && key >= low[k];
    sc[v] = seen ? x : -INFINITY;
  }
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    float mx = fmaxf(sc[k], sc[k + 2]);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
    mx = fmaxf(mx, m[k]);
    corr[k] = mx == -INFINITY ? 1.f : kh_dec_exp2(m[k] - mx);
    const float mref = mx == -INFINITY ? 0.f : mx;
    m[k] = mx;
    sc[k] = kh_dec_exp2(sc[k] - mref);
    sc[k + 2] = kh_dec_exp2(sc[k + 2] - mref);
    l[k] = l[k] * corr[k] + sc[k] + sc[k + 2];
  }
}

// --- P V on the tensor cores ---------------------------------------------------------------------
// O^T (head dims x rows) += V^T (dims x 16 keys) P^T (16 keys x rows) with mma m16n8k16: the
// keys are the contraction, so each A / B register must hold two keys of one dim / one row.
// V is loaded as K is (lane (g, c): 16-byte chunks c + 4j of keys g and g + 8), and word t of
// chunk j across the warp is an 8 x 8 matrix (keys x a permuted set of 8 dims) that movmatrix
// transposes into A fragments: lane (g, c) then holds keys 2c, 2c + 1 of dim
// pv_dim(j, t, g) = 8 (g / 2 + 4 j) + 2 t + g % 2. P comes out of the score accumulator the same
// way (keys x rows -> rows x keys). The accumulator lane (g, c) keeps is rows 2c, 2c + 1 (its
// own softmax rows: the rescale needs no shuffle) of dims pv_dim(j, 2p, g), pv_dim(j, 2p + 1, g).
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t a) {
  uint32_t d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(d) : "r"(a));
  return d;
}

__device__ __forceinline__ int pv_dim(int j, int t, int g) { return 8 * (g / 2 + 4 * j) + 2 * t + (g & 1); }

template <typename Tag>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<Tag, Bf16Tag>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// One 16-key tile's O^T += V^T P^T for the chunks j0 .. j0 + NB - 1: va / vb hold V chunks
// c + 4j of keys g and g + 8 (as the kernel's load_rows loads them), pb the P^T B fragment.
template <typename Tag, int NJ, int NB>
__device__ __forceinline__ void tile_pv_tensor(float (&ot)[NJ][2][4], const uint4 (&va)[NB], const uint4 (&vb)[NB],
                                               const uint32_t (&pb)[2], int jmax, int j0) {
#pragma unroll
  for (int jj = 0; jj < NB; ++jj) {
    if (j0 + jj < jmax) {
      const uint32_t a[4] = {va[jj].x, va[jj].y, va[jj].z, va[jj].w};
      const uint32_t b[4] = {vb[jj].x, vb[jj].y, vb[jj].z, vb[jj].w};
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const uint32_t x0 = movmatrix_trans(a[2 * q]), x1 = movmatrix_trans(a[2 * q + 1]);
        const uint32_t y0 = movmatrix_trans(b[2 * q]), y1 = movmatrix_trans(b[2 * q + 1]);
        mma_16816<Tag>(ot[j0 + jj][q], x0, x1, y0, y1, pb[0], pb[1]);
      }
    }
  }
}

// Dynamic shared memory of decode_mma_kernel: the merge buffer, one state a warp (a warp holds
// one accumulator; MergeSmem<32, ...> has one group a warp, 256 dims a row).
template <int ROWS>
constexpr size_t decode_mma_smem_bytes() {
  return sizeof(MergeSmem<32, ROWS>);
}

// The register split kernel (head dims above 128; KH_ATTENTION_DECODE_VARIANT=tcpv below): K
// and V loaded into registers with 16-byte loads, the next tile's K during this tile's P V.
// 3 CTAs an SM up to head dim 128 (168 registers), 2 above (the 64 accumulators and 32 q
// registers of 256 dims spill 312 bytes under 168).
template <typename Tag, int TPR, int ROWS>
__global__ void __launch_bounds__(kThreads, TPR >= 32 ? 2 : 3) decode_mma_kernel(const DecodeParams p, const int row_tiles,
                                                                 const int num_splits) {
  static_assert(ROWS <= 8, "the query rows are the mma's n = 8");
  constexpr int kWarps = kThreads / 32;
  constexpr int kChunksPerLane = TPR / 4 > 0 ? TPR / 4 : 1;  // chunks of 8 dims a lane loads of a key
  constexpr int kKBatch = kChunksPerLane < 4 ? kChunksPerLane : 4;
  extern __shared__ __align__(16) unsigned char dec_smem[];
  MergeSmem<32, ROWS>& sm = *reinterpret_cast<MergeSmem<32, ROWS>*>(dec_smem);

  const Tile t = make_tile(p, ROWS, row_tiles, num_splits);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;  // mma fragment coordinates
  const int nch = p.head_dim / 8;        // 16-byte chunks of a row
  const int jmax = (nch + 3) / 4;        // chunks a lane loads of a key (4 lanes a key)
  const bool softcap = p.softcap > 0.f;
  const float s_scale = softcap ? p.scale : p.scale * kLog2e;
  const float cap_log2 = p.softcap * kLog2e, inv_cap = softcap ? 1.f / p.softcap : 0.f;

  // q of row g (the mma's column n = g) in the permuted order: chunk c + 4j, as bf16/fp16 pairs.
  uint32_t qf[kChunksPerLane][4];
  {
    const bool row_on = g < t.nrows;
    const uint16_t* qrow = tile_q_row(p, t, g);
#pragma unroll
    for (int j = 0; j < kChunksPerLane; ++j) {
      const int ch = c + 4 * j;
      uint4 v = make_uint4(0u, 0u, 0u, 0u);
      if (j < jmax && row_on && ch < nch) v = *reinterpret_cast<const uint4*>(qrow + ch * 8);
      qf[j][0] = v.x, qf[j][1] = v.y, qf[j][2] = v.z, qf[j][3] = v.w;
    }
  }
  // This lane's two score rows (2c, 2c + 1): their key limits.
  int pos[2], low[2];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int r = 2 * c + k;
    if (r < t.nrows) {
      const int i = (t.r0 + r) / t.group;
      pos[k] = t.len - p.q_len + i;
      low[k] = p.window_left >= 0 ? pos[k] - p.window_left : 0;
    } else {
      pos[k] = -1;  // a padding row: sees nothing
      low[k] = 0;
    }
    if (low[k] < t.key_beg) low[k] = t.key_beg;  // keys of the tile below the split are not ours
  }
  const int key_end = t.key_end;

  float m[2] = {-INFINITY, -INFINITY};  // running max of rows 2c, 2c + 1 (the same on the 8 lanes of c)
  float l[2] = {0.f, 0.f};              // this lane's share of their sums
  float ot[kChunksPerLane][2][4];       // rows 2c, 2c + 1 x dims pv_dim(j, 2q + w / 2, g)
#pragma unroll
  for (int j = 0; j < kChunksPerLane; ++j)
#pragma unroll
    for (int q = 0; q < 2; ++q)
#pragma unroll
      for (int w = 0; w < 4; ++w) ot[j][q][w] = 0.f;

  const int32_t* table = p.block_table + static_cast<int64_t>(t.b) * p.bt_batch_stride;
  const uint16_t* kbase = static_cast<const uint16_t*>(p.k) + static_cast<int64_t>(t.kv_head) * p.k_head_stride;
  const uint16_t* vbase = static_cast<const uint16_t*>(p.v) + static_cast<int64_t>(t.kv_head) * p.v_head_stride;
  const int shift = p.block_shift, bmask = p.block_size - 1;
  const bool whole_tiles = shift >= 4;  // a 16-key tile lies in one block

  // Rows of keys tl + g and tl + g + 8 of one cache (K or V), chunks c + 4j of batch kbatch, zero
  // past the head dim or the split's keys or where the key's block id is bad. Loads go out in
  // batches of at most 4 chunks to bound registers (head dims above 128 take two). Sets key_a
  // and key_b to the two keys as tile_probabilities takes them (kLeftOutKey for a bad block's).
  auto load_rows = [&](const uint16_t* base, int64_t block_stride, int64_t row_stride, int tl, int kbatch,
                       uint4 (&ra)[kKBatch], uint4 (&rb)[kKBatch], int& key_a, int& key_b) {
    const int k0 = tl + g, k1 = tl + g + 8;
    bool on0 = k0 < key_end && k0 >= t.key_beg, on1 = k1 < key_end && k1 >= t.key_beg;
    int64_t r0 = 0, r1 = 0;
    bool ok0 = true, ok1 = true;
    if (whole_tiles) {
      const int32_t blk = table[tl >> shift];
      ok0 = ok1 = decode_block_ok(blk, p.num_blocks);
      r0 = static_cast<int64_t>(blk) * block_stride + static_cast<int64_t>((tl & bmask) + g) * row_stride;
      r1 = r0 + 8 * row_stride;
    } else {
      const int32_t b0 = on0 ? table[k0 >> shift] : 0, b1 = on1 ? table[k1 >> shift] : 0;
      ok0 = decode_block_ok(b0, p.num_blocks);
      ok1 = decode_block_ok(b1, p.num_blocks);
      r0 = static_cast<int64_t>(b0) * block_stride + static_cast<int64_t>(k0 & bmask) * row_stride;
      r1 = static_cast<int64_t>(b1) * block_stride + static_cast<int64_t>(k1 & bmask) * row_stride;
    }
    on0 = on0 && ok0;
    on1 = on1 && ok1;
    key_a = ok0 ? k0 : kLeftOutKey;
    key_b = ok1 ? k1 : kLeftOutKey;
#pragma unroll
    for (int jj = 0; jj < kKBatch; ++jj) {
      const int j = kbatch * kKBatch + jj, ch = c + 4 * j;
      ra[jj] = make_uint4(0u, 0u, 0u, 0u);
      rb[jj] = make_uint4(0u, 0u, 0u, 0u);
      if (j < jmax && ch < nch) {
        if (on0) ra[jj] = kh_dec_ld16(base + r0 + ch * 8);
        if (on1) rb[jj] = kh_dec_ld16(base + r1 + ch * 8);
      }
    }
  };
  auto load_k = [&](int tl, int kbatch, uint4 (&ka)[kKBatch], uint4 (&kb)[kKBatch]) {
    int unused_a, unused_b;  // the V load of the same tile sets the keys' masks
    load_rows(kbase, p.k_block_stride, p.k_row_stride, tl, kbatch, ka, kb, unused_a, unused_b);
  };
  // With one K batch (head dims <= 128) the next tile's K is loaded as soon as this tile's
  // scores are issued, so a warp always has loads in flight (K during P V, V during S).
  constexpr bool kPipeK = kChunksPerLane == kKBatch;
  constexpr int kTileStride = kWarps * 16;
  uint4 ka[kKBatch], kb[kKBatch];
  if (kPipeK && t.tile_beg + warp * 16 < key_end) load_k(t.tile_beg + warp * 16, 0, ka, kb);

  for (int tile = t.tile_beg + warp * 16; tile < key_end; tile += kTileStride) {
    uint4 va[kKBatch], vb[kKBatch];  // V of keys g, g + 8, chunks c + 4j (as K)
    int key_a, key_b;
    load_rows(vbase, p.v_block_stride, p.v_row_stride, tile, 0, va, vb, key_a, key_b);

    // S^T (16 keys x 8 rows) on the tensor cores.
    float sc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int kbatch = 0; kbatch < kChunksPerLane / kKBatch; ++kbatch) {
      if (!kPipeK) load_k(tile, kbatch, ka, kb);
#pragma unroll
      for (int jj = 0; jj < kKBatch; ++jj) {
        const int j = kbatch * kKBatch + jj;
        if (j < jmax) {
          mma_16816<Tag>(sc, ka[jj].x, kb[jj].x, ka[jj].y, kb[jj].y, qf[j][0], qf[j][1]);
          mma_16816<Tag>(sc, ka[jj].z, kb[jj].z, ka[jj].w, kb[jj].w, qf[j][2], qf[j][3]);
        }
      }
    }
    if (kPipeK && tile + kTileStride < key_end) load_k(tile + kTileStride, 0, ka, kb);
    float corr[2];
    tile_probabilities(sc, m, l, corr, key_a, key_b, key_end, pos, low, softcap, s_scale, cap_log2, inv_cap);
#pragma unroll
    for (int j = 0; j < kChunksPerLane; ++j)
#pragma unroll
      for (int q = 0; q < 2; ++q)
#pragma unroll
        for (int w = 0; w < 4; ++w) ot[j][q][w] *= corr[w & 1];
    // P^T as the B fragment: keys 2c, 2c + 1 (and + 8) of row g.
    const uint32_t pb[2] = {movmatrix_trans(pack_pair<Tag>(sc[0], sc[1])), movmatrix_trans(pack_pair<Tag>(sc[2], sc[3]))};
#pragma unroll
    for (int vbatch = 0; vbatch < kChunksPerLane / kKBatch; ++vbatch) {
      if (vbatch > 0) load_rows(vbase, p.v_block_stride, p.v_row_stride, tile, vbatch, va, vb, key_a, key_b);
      tile_pv_tensor<Tag>(ot, va, vb, pb, jmax, vbatch * kKBatch);
    }
  }

  // Row sums over the 8 lanes of each column, then one state a warp to shared memory: this
  // lane's rows 2c, 2c + 1 (those below ROWS) of its dims.
  sum_rows_over_column(l);
#pragma unroll
  for (int j = 0; j < kChunksPerLane; ++j) {
    if (j < jmax) {
#pragma unroll
      for (int q = 0; q < 2; ++q)
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          const int r = 2 * c + (w & 1);
          if (r < ROWS) sm.acc[warp][r][pv_dim(j, 2 * q + (w >> 1), g)] = ot[j][q][w];
        }
    }
  }
  finish_split_tile<Tag, ROWS>(p, t, sm, warp, g, c, m, l);
}

}  // namespace decode
}  // namespace kh_attention
