// attention_decode_fp8.cuh: the CUDA split kernel of attention_decode_paged_fp8 (1.2.0), and of
// attention_varlen_fwd_fp8 with a bf16/fp16 q (its packed mode): K and V are e4m3 bytes, q and out
// bf16/fp16. Included by attention_decode_fp8_<dtype>_d<bucket>.cu (one translation unit per dtype
// and head-dim bucket 64, 128, 256); the bf16/fp16 kernels are untouched (attention_decode.cuh).
//
// Design (the staged kernel's, attention_decode_staged.cuh, on half the bytes):
//  - one CTA of 4 warps per (split, kv head x row tile of 8 query rows, sequence), or of
//    kDecodeFp8WideWarps (16; the 128 bucket) where one unsplit wave of those fills the device;
//    each warp walks its own 16-key tiles through a per-warp ring of kStages stages in shared
//    memory, filled by cp.async with whole 16-byte chunks of e4m3 rows (a row of d bytes is d / 16
//    chunks), or, in the sm90a build at head dim 128 with cache blocks of >= 16 rows (TMA), by two
//    tensor copies a tile (K's and V's 16 rows, one 128-byte box each; attention_decode_tma.cuh)
//    that one mbarrier a stage counts;
//  - S^T = K Q^T and O^T += V^T P^T on the tensor cores (mma.sync m16n8k16 in q's dtype); the
//    fragments come out of the ring by ldmatrix and are dequantized in registers: an e4m3 byte's
//    bits shifted into a bf16 (fp16) word give its value times 2^-120 (2^-8), subnormals included,
//    and one fma.rn.bf16x2 (f16x2) by 2^120 (2^8) makes it exact. No NaN test (a NaN byte reads as
//    +-480: the op's docs). k_scale is folded into the score scale, v_scale into the float32 sum.
//  - The fragment layouts come from ldmatrix of 8-bit data read as 16-bit pairs, so the head dims
//    are permuted consistently: for K (non-transposed ldmatrix), lane (g, c) gets bytes 4c..4c+3 of
//    a 16-byte chunk of key g (and g + 8); bytes (0, 2) are the A fragment's k = 2c, 2c + 1 and
//    (1, 3) its k = 2c + 8, 2c + 9, and q's B fragment is loaded in that same order. For V
//    (transposed ldmatrix), lane (g, c) gets dims 2g, 2g + 1 of keys 2c, 2c + 1: dim 2g is the A
//    fragment's row g and dim 2g + 1 its row g + 8, so the accumulator's row g of 16-dim block mb
//    is dim 16 mb + 2g, row g + 8 dim 16 mb + 2g + 1 (undone when the merge stores it).
//  - Split-KV, the merge and the combine are the bf16 kernels' (Tile, MergeSmem, decode_epilogue,
//    decode_combine_kernel): the partials in the workspace are float32 whatever the cache holds.
// The packed mode (varlen): key j of sequence b is row cu_seqlens_k[b] + j of k and v, query row i
// is row cu_seqlens_q[b] + i of q and out, lengths per sequence (clamped as the op documents);
// causal or not, bottom-right aligned; never split (no workspace).
#pragma once

#include "attention_decode.cuh"
#include "attention_decode_fp8_launch.hpp"
#include "attention_fp8.hpp"

namespace kh_attention {
namespace decode {

// Stages of a warp's ring: 3 (two tiles in flight while one is computed) at the 128 bucket, where 4
// CTAs of 4 warps still fit an SM's shared memory (48 KiB a CTA); 2 at 256. The wide CTA (WARPS =
// kDecodeFp8WideWarps, the 128 bucket) keeps kDecodeFp8WideStages (3: 16 warps x 12 KiB).
template <int DP, int WARPS>
struct Fp8Ring {
  static_assert(DP == 128 || DP == 256, "the FP8 kernel's buckets: 128, 256");
  static constexpr int kStages = WARPS > kDecodeFp8Warps ? kDecodeFp8WideStages : DP <= 128 ? 3 : 2;
  static constexpr int kChunks = DP / 16;            // 16-byte chunks of an e4m3 row
  static constexpr int kTileChunks = 16 * kChunks;   // a 16-key tile's chunks
  static constexpr int kCopies = kTileChunks / 32;   // copies a lane issues per tile, per K and V
  static constexpr size_t kWarpBytes = static_cast<size_t>(kStages) * 2 * kTileChunks * 16;
  // XOR swizzle in 16-byte chunks so that the 8 rows one ldmatrix reads hit 8 bank groups (rows of
  // 4 chunks pair up, hence the shift).
  static __device__ __forceinline__ int slot(int key, int chunk) {
    return key * kChunks + (kChunks >= 8 ? chunk ^ (key & 7) : chunk ^ ((key >> 1) & 3));
  }
};

constexpr int kFp8Rows = kDecodeFp8RowsPerCta;  // query rows a CTA (the mma's n)
// The merge buffer's rows padded by 4 floats (1040 bytes): a lane's float2 stores of dims 2g,
// 2g + 1 to rows 2c and 2c + 1 then fall in distinct banks for each half-warp (bank 8c + 2g +
// {0, 1}), where unpadded rows put the 4 lanes of a g in one bank (dev/attention/fp8_merge_banks.py).
template <int WARPS>
using Fp8Merge = MergeSmem<32, kFp8Rows, WARPS * 32, 4>;

// The rings (or the merge buffer that reuses them), then with TMA one mbarrier a warp and stage.
template <int DP, int WARPS>
__host__ __device__ constexpr size_t decode_fp8_bars_offset() {
  using Merge = Fp8Merge<WARPS>;
  constexpr size_t ring = WARPS * Fp8Ring<DP, WARPS>::kWarpBytes;
  return ((ring > sizeof(Merge) ? ring : sizeof(Merge)) + 7) / 8 * 8;
}
template <int DP, int WARPS, bool TMA>
__host__ __device__ constexpr size_t decode_fp8_smem_bytes() {
  return decode_fp8_bars_offset<DP, WARPS>() + (TMA ? WARPS * Fp8Ring<DP, WARPS>::kStages * 8 : 0);
}

// Four e4m3 bytes (b0..b3, low first) as two pairs of q's dtype: {b0, b2} and {b1, b3}, exact.
__device__ __forceinline__ void e4m3x4_to_pairs(uint32_t w, uint32_t& lo, uint32_t& hi, Bf16Tag) {
  uint32_t x = ((w << 4) & 0x07f007f0u) | ((w << 8) & 0x80008000u);  // value * 2^-120
  uint32_t y = ((w >> 4) & 0x07f007f0u) | (w & 0x80008000u);
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(lo) : "r"(x), "r"(0x7b807b80u), "r"(0x80008000u));  // * 2^120 - 0
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(hi) : "r"(y), "r"(0x7b807b80u), "r"(0x80008000u));
}
__device__ __forceinline__ void e4m3x4_to_pairs(uint32_t w, uint32_t& lo, uint32_t& hi, F16Tag) {
  uint32_t x = ((w << 7) & 0x3f803f80u) | ((w << 8) & 0x80008000u);  // value * 2^-8
  uint32_t y = ((w >> 1) & 0x3f803f80u) | (w & 0x80008000u);
  asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(lo) : "r"(x), "r"(0x5c005c00u), "r"(0x80008000u));  // * 2^8 - 0
  asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(hi) : "r"(y), "r"(0x5c005c00u), "r"(0x80008000u));
}

// The packed (varlen) mode's tile: sequence b's bounds from cu_seqlens (clamped as the CPU build
// and the bf16 kernels clamp them), this CTA's rows and the keys they see. nrows 0: nothing to do.
struct Fp8Seq {
  int q_start = 0, len_q = 0, k_start = 0, len_k = 0;
};

__device__ __forceinline__ Fp8Seq fp8_varlen_seq(const Fp8VarlenArgs& va, int b) {
  auto clampi = [](long long x, long long lo, long long hi) { return static_cast<int>(x < lo ? lo : x > hi ? hi : x); };
  Fp8Seq s;
  const int64_t qb = static_cast<int64_t>(b) * va.cu_q_stride, kb = static_cast<int64_t>(b) * va.cu_k_stride;
  s.q_start = clampi(va.cu_q[qb], 0, va.total_q);
  const int q_end = clampi(va.cu_q[qb + va.cu_q_stride], s.q_start, va.total_q);
  s.len_q = q_end - s.q_start < va.max_q ? q_end - s.q_start : va.max_q;
  s.k_start = clampi(va.cu_k[kb], 0, va.total_k);
  const int k_end = clampi(va.cu_k[kb + va.cu_k_stride], s.k_start, va.total_k);
  s.len_k = k_end - s.k_start < va.max_k ? k_end - s.k_start : va.max_k;
  return s;
}

__device__ __forceinline__ Tile fp8_varlen_tile(const DecodeParams& p, const Fp8VarlenArgs& va, const Fp8Seq& s,
                                                int row_tiles) {
  Tile t;
  t.b = blockIdx.z;
  t.split = 0;
  t.kv_head = blockIdx.y / row_tiles;
  const int rt = blockIdx.y - t.kv_head * row_tiles;
  t.group = p.heads_q / p.heads_kv;
  const int total_rows = s.len_q * t.group;
  t.r0 = rt * kFp8Rows;
  t.nrows = t.r0 < total_rows ? min(kFp8Rows, total_rows - t.r0) : 0;
  t.len = s.len_k;
  const int i_first = t.r0 / t.group, i_last = (t.r0 + (t.nrows > 0 ? t.nrows : 1) - 1) / t.group;
  const int shift = s.len_k - s.len_q;  // row i sits at key position i + shift
  int hi = va.causal ? min(s.len_k, i_last + shift + 1) : s.len_k;
  hi = hi < 0 ? 0 : hi;
  int lo = 0;
  if (p.window_left >= 0) {
    const long long w = static_cast<long long>(i_first) + shift - p.window_left;
    lo = w < 0 ? 0 : static_cast<int>(w);
  }
  t.tile_beg = lo & ~15;
  t.key_beg = lo;
  t.key_end = hi > lo ? hi : lo;
  t.slots = 1;
  t.whole = true;
  return t;
}

// WARPS: kDecodeFp8Warps (4, several CTAs an SM) or kDecodeFp8WideWarps (the wide CTA, one an SM).
// TMA: the rings are filled through tma's maps (the paged mode only, the 128 bucket, cache blocks
// of >= 16 rows: the host's plan, launch_decode_fp8), else by cp.async.
template <typename Tag, int DP, int WARPS, bool TMA>
__global__ void __launch_bounds__(WARPS * 32, WARPS > kDecodeFp8Warps ? 1 : DP <= 128 ? 4 : 2)
    decode_fp8_kernel(const DecodeParams p, const Fp8VarlenArgs va, const int row_tiles, const int num_splits,
                      const __grid_constant__ DecodeTma tma) {
  using Ring = Fp8Ring<DP, WARPS>;
  static_assert(!TMA || DP == kTmaFp8BoxCols, "a TMA tile's rows are one 128-byte box");
  constexpr int kThreadsCta = WARPS * 32;
  constexpr int kStages = Ring::kStages;
  constexpr int kChunks = Ring::kChunks;
  constexpr int kTileStride = WARPS * 16;
  // 1024-byte aligned for TMA: each stage's K and V tiles then start where the 128-byte swizzle's
  // pattern does (its rows' chunk order is Ring::slot's).
  extern __shared__ __align__(1024) unsigned char fp8_smem[];
  const bool packed = !TMA && va.cu_q != nullptr;
  // Probe builds only: the staged kernel's timer marks (KH_DECODE_PROBE_TIMES), in the workspace
  // of an unsplit paged call (the packed mode has none).
  if (!packed) KH_DEC_PROBE_MARK(p, 0);
  Fp8Seq seq;
  Tile t;
  if (packed) {
    seq = fp8_varlen_seq(va, static_cast<int>(blockIdx.z));
    t = fp8_varlen_tile(p, va, seq, row_tiles);
    if (t.nrows == 0) return;  // rows past this sequence's (the grid is sized for the longest)
  } else {
    t = make_tile(p, kFp8Rows, row_tiles, num_splits);
  }

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;
  const int nch = p.head_dim / 16;  // chunks of a row that hold dims (the rest: zeros)
  const int npair = (nch + 1) / 2;  // ldmatrix x4 steps: two chunks each
  const int key_end = t.key_end;

  const int32_t* table = packed ? nullptr : p.block_table + static_cast<int64_t>(t.b) * p.bt_batch_stride;
  const uint8_t* kbase = static_cast<const uint8_t*>(p.k) + static_cast<int64_t>(t.kv_head) * p.k_head_stride;
  const uint8_t* vbase = static_cast<const uint8_t*>(p.v) + static_cast<int64_t>(t.kv_head) * p.v_head_stride;
  const int shift = p.block_shift, bmask = p.block_size - 1;
  const bool whole_tiles = TMA || packed || shift >= 4;  // a tile's keys lie in one block (or are contiguous)
  const uint64_t policy = kv_stream_policy(row_tiles == 1);

  unsigned char* ring = fp8_smem + static_cast<size_t>(warp) * Ring::kWarpBytes;
  const uint32_t ring_addr = static_cast<uint32_t>(__cvta_generic_to_shared(ring));
  // With TMA: this warp's mbarriers, one a stage (after the rings), set up by its lane 0.
  const uint32_t bars = static_cast<uint32_t>(__cvta_generic_to_shared(fp8_smem)) +
                        static_cast<uint32_t>(decode_fp8_bars_offset<DP, WARPS>() + 8 * warp * kStages);
  if constexpr (TMA) {
    if (lane == 0)
      for (int st = 0; st < kStages; ++st) tma_bar_init(bars + 8 * st);
    __syncwarp();
  }
  // A whole tile's block id, read one step before its copies are issued (the table's latency off
  // each step's path); 0 in the packed mode and for tiles of several blocks.
  auto block_of = [&](int tl) -> int32_t { return !packed && whole_tiles && tl < key_end ? table[tl >> shift] : 0; };
  // Element offsets (bytes) of key `key`'s K and V rows: packed rows, or through the table.
  auto k_row = [&](int32_t blk, int key) -> int64_t {
    return packed ? static_cast<int64_t>(seq.k_start + key) * p.k_row_stride
                  : static_cast<int64_t>(blk) * p.k_block_stride + static_cast<int64_t>(key & bmask) * p.k_row_stride;
  };
  auto v_row = [&](int32_t blk, int key) -> int64_t {
    return packed ? static_cast<int64_t>(seq.k_start + key) * p.v_row_stride
                  : static_cast<int64_t>(blk) * p.v_block_stride + static_cast<int64_t>(key & bmask) * p.v_row_stride;
  };
  unsigned bad_stages = 0;  // bit st: stage st holds a whole tile of a bad block id (zeros; keys left out)
  // Tile tl's K and V chunks into stage st: consecutive lanes copy consecutive chunks of a row;
  // zeros past the head dim, outside the split's keys, or for a bad block id (decode_block_ok).
  // With TMA, lane 0 copies the tile's whole 16 cache rows: rows outside the keys' range hold other
  // keys or stale bytes, all finite as this kernel reads e4m3 (a NaN byte reads as +-480), and
  // their probabilities are 0 (tile_probabilities masks by key), so nothing needs zeroing; a bad
  // block id is copied as block num_blocks, a box wholly outside the map that TMA fills with zeros.
  auto issue = [&](int tl, int st, int32_t blk) {
    int copy_end = key_end;
    if (whole_tiles && !packed) {
      const bool bad = !decode_block_ok(blk, p.num_blocks);
      bad_stages = bad ? bad_stages | (1u << st) : bad_stages & ~(1u << st);
      if (bad) copy_end = tl, blk = TMA ? p.num_blocks : 0;
    }
    if constexpr (TMA) {
      const uint32_t kdst = ring_addr + static_cast<uint32_t>(st * 2 * Ring::kTileChunks * 16);
      if (lane == 0)
        tma_load_kv_tile<1>(kdst, kdst + Ring::kTileChunks * 16, tma, bars + 8 * st, t.kv_head, tl & bmask, blk, policy);
      return;
    }
    unsigned char* kdst = ring + static_cast<size_t>(st) * 2 * Ring::kTileChunks * 16;
    unsigned char* vdst = kdst + Ring::kTileChunks * 16;
#pragma unroll
    for (int n = 0; n < Ring::kCopies; ++n) {
      const int idx = lane + 32 * n, kk = idx / kChunks, ch = idx - kk * kChunks, key = tl + kk;
      bool on = ch < nch && key < copy_end && key >= t.key_beg;
      int32_t kblk = blk;
      if (!whole_tiles && on) {
        kblk = table[key >> shift];
        on = decode_block_ok(kblk, p.num_blocks);
      }
      const int slot = Ring::slot(kk, ch) * 16;
      cp_async16(kdst + slot, on ? kbase + k_row(kblk, key) + ch * 16 : kbase, on ? 16 : 0, policy);
      cp_async16(vdst + slot, on ? vbase + v_row(kblk, key) + ch * 16 : vbase, on ? 16 : 0, policy);
    }
  };
  // ldmatrix row addresses of this lane (matrix mq = lane / 8, its row mr = lane % 8). K: matrices
  // (keys 0-7 | 8-15) x (chunk 2j | 2j + 1) in the order (0-7, 2j) (8-15, 2j) (0-7, 2j+1)
  // (8-15, 2j+1); V (transposed): (0-7, 2j) (0-7, 2j+1) (8-15, 2j) (8-15, 2j+1).
  const int mq = lane / 8, mr = lane % 8;
  const int k_key = mr + 8 * (mq & 1), k_half = mq >> 1;
  const int v_key = mr + 8 * (mq >> 1), v_half = mq & 1;

  // The first tiles' copies go out before q, the scales and the rows' bounds are loaded: their
  // latency then overlaps the copies' (a one-wave call's first copies went out 2 us after entry).
  // H100, A/B in one run, outputs bit-identical: b16 x 4k 59.3 -> 56.6 us, b16 x 32k 384.5 ->
  // 357.8, b64 x 8k 401.8 -> 377.7, b128 x 4k 401.5 -> 381.6 (more than the 2 us: cuda/NOTES.md).
  const int first = t.tile_beg + warp * 16;
  int it = 0;
  if (!packed) KH_DEC_PROBE_MARK(p, 1);
#pragma unroll
  for (int st = 0; st + 1 < kStages; ++st) {
    const int tl = first + st * kTileStride;
    if (tl < key_end) issue(tl, st, block_of(tl));
    if constexpr (!TMA) cp_async_commit();
  }
  int32_t next_blk = block_of(first + (kStages - 1) * kTileStride);

  const bool softcap = p.softcap > 0.f;
  const float k_descale = fp8_scale_at(p.k_scale, p.k_scale_stride, t.kv_head);
  const float v_descale = fp8_scale_at(p.v_scale, p.v_scale_stride, t.kv_head);
  const float qk = p.scale * k_descale;
  const float s_scale = softcap ? qk : qk * kLog2e;
  const float cap_log2 = p.softcap * kLog2e, inv_cap = softcap ? 1.f / p.softcap : 0.f;

  // q of row g as B fragments in the permuted order: block kb holds dims 16 kb + 4c + {0, 2} and
  // 16 kb + 4c + {1, 3}.
  uint32_t qf[DP / 16][2];
  {
    const bool row_on = g < t.nrows;
    const int idx = t.r0 + (row_on ? g : 0);
    const int i = idx / t.group, h = t.kv_head * t.group + (idx - i * t.group);
    const uint16_t* qrow =
        static_cast<const uint16_t*>(p.q) + (packed ? static_cast<int64_t>(seq.q_start + i) * p.q_row_stride
                                                    : static_cast<int64_t>(t.b) * p.q_batch_stride +
                                                          static_cast<int64_t>(i) * p.q_row_stride) +
        static_cast<int64_t>(h) * p.q_head_stride;
#pragma unroll
    for (int kb = 0; kb < DP / 16; ++kb) {
      uint2 v = make_uint2(0u, 0u);
      if (row_on && kb < nch) v = *reinterpret_cast<const uint2*>(qrow + 16 * kb + 4 * c);
      qf[kb][0] = __byte_perm(v.x, v.y, 0x5410);
      qf[kb][1] = __byte_perm(v.x, v.y, 0x7632);
    }
  }
  // Rows 2c, 2c + 1 of the tile (this lane's columns of the score fragment): the keys they see.
  int pos[2], low[2];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int r = 2 * c + k;
    if (r < t.nrows) {
      const int i = (t.r0 + r) / t.group;
      const int at = packed ? i + seq.len_k - seq.len_q : t.len - p.q_len + i;  // the row's key position
      pos[k] = packed && !va.causal ? seq.len_k - 1 : at;
      low[k] = p.window_left >= 0 ? at - p.window_left : 0;
    } else {
      pos[k] = -1;
      low[k] = 0;
    }
    if (low[k] < t.key_beg) low[k] = t.key_beg;
  }

  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  float ot[DP / 16][4];
#pragma unroll
  for (int mb = 0; mb < DP / 16; ++mb)
#pragma unroll
    for (int w = 0; w < 4; ++w) ot[mb][w] = 0.f;

  for (int tile = first; tile < key_end; tile += kTileStride, ++it) {
    __syncwarp();  // every lane is done with the stage refilled now (read in the step before)
    const int ahead = tile + (kStages - 1) * kTileStride;
    if (ahead < key_end) issue(ahead, (it + kStages - 1) % kStages, next_blk);
    next_blk = block_of(ahead + kTileStride);
    if constexpr (TMA) {
      cuda_common::mbar_wait(bars + 8 * (it % kStages), (it / kStages) & 1);  // tile `it`'s boxes have landed
    } else {
      cp_async_commit();
      cp_async_wait<kStages - 1>();  // this lane's copies of tile `it` have landed ...
      __syncwarp();                  // ... and every lane's
    }
    const int st = it % kStages;
    const uint32_t kst = ring_addr + static_cast<uint32_t>(st * 2 * Ring::kTileChunks * 16);
    const uint32_t vst = kst + static_cast<uint32_t>(Ring::kTileChunks * 16);

    float sc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < DP / 32; ++j) {
      if (j < npair) {
        uint32_t a[4];
        ldmatrix_x4(a, kst + static_cast<uint32_t>(Ring::slot(k_key, 2 * j + k_half) * 16));
        uint32_t x0, y0, x1, y1;
        e4m3x4_to_pairs(a[0], x0, y0, Tag{});  // key g, chunk 2j
        e4m3x4_to_pairs(a[1], x1, y1, Tag{});  // key g + 8, chunk 2j
        mma_16816<Tag>(sc, x0, x1, y0, y1, qf[2 * j][0], qf[2 * j][1]);
        e4m3x4_to_pairs(a[2], x0, y0, Tag{});  // key g, chunk 2j + 1
        e4m3x4_to_pairs(a[3], x1, y1, Tag{});
        mma_16816<Tag>(sc, x0, x1, y0, y1, qf[2 * j + 1][0], qf[2 * j + 1][1]);
      }
    }
    int key_a = tile + g, key_b = tile + g + 8, tile_end = key_end;
    if (whole_tiles) {
      if ((bad_stages >> st) & 1u) tile_end = tile;
    } else {
      if (key_a < key_end && !decode_block_ok(table[key_a >> shift], p.num_blocks)) key_a = kLeftOutKey;
      if (key_b < key_end && !decode_block_ok(table[key_b >> shift], p.num_blocks)) key_b = kLeftOutKey;
    }
    float corr[2];
    tile_probabilities(sc, m, l, corr, key_a, key_b, tile_end, pos, low, softcap, s_scale, cap_log2, inv_cap);
#pragma unroll
    for (int mb = 0; mb < DP / 16; ++mb)
#pragma unroll
      for (int w = 0; w < 4; ++w) ot[mb][w] *= corr[w & 1];
    const uint32_t pb[2] = {movmatrix_trans(pack_pair<Tag>(sc[0], sc[1])), movmatrix_trans(pack_pair<Tag>(sc[2], sc[3]))};
#pragma unroll
    for (int j = 0; j < DP / 32; ++j) {
      if (j < npair) {
        uint32_t a[4];
        ldmatrix_x4_trans(a, vst + static_cast<uint32_t>(Ring::slot(v_key, 2 * j + v_half) * 16));
        uint32_t x0, y0, x1, y1;
        e4m3x4_to_pairs(a[0], x0, y0, Tag{});  // keys 2c, 2c + 1 of chunk 2j: dims 2g (x), 2g + 1 (y)
        e4m3x4_to_pairs(a[2], x1, y1, Tag{});  // keys 2c + 8, 2c + 9
        mma_16816<Tag>(ot[2 * j], x0, y0, x1, y1, pb[0], pb[1]);
        e4m3x4_to_pairs(a[1], x0, y0, Tag{});  // chunk 2j + 1
        e4m3x4_to_pairs(a[3], x1, y1, Tag{});
        mma_16816<Tag>(ot[2 * j + 1], x0, y0, x1, y1, pb[0], pb[1]);
      }
    }
  }
  if constexpr (!TMA) cp_async_wait<0>();  // (every box issued was waited for in the loop)
  if (!packed && warp < 15) KH_DEC_PROBE_WARP_MARK(p, warp);  // slot 15: the barrier's
  __syncthreads();  // the merge buffer below reuses the rings
  if (!packed && warp == 0) KH_DEC_PROBE_WARP_MARK(p, 15);
  if (!packed) KH_DEC_PROBE_MARK(p, 2);

  sum_rows_over_column(l);
  using Merge = Fp8Merge<WARPS>;
  Merge& sm = *reinterpret_cast<Merge*>(fp8_smem);
  // Accumulator w of block mb is row 2c + (w & 1), dim 16 mb + 2g + (w >> 1): w = 0 and 2 (1 and
  // 3) are adjacent dims of one row, stored as a float2.
#pragma unroll
  for (int mb = 0; mb < DP / 16; ++mb) {
    if (mb < nch) {
      const int d = 16 * mb + 2 * g;
      const float2 even = make_float2(ot[mb][0] * v_descale, ot[mb][2] * v_descale);
      const float2 odd = make_float2(ot[mb][1] * v_descale, ot[mb][3] * v_descale);
      *reinterpret_cast<float2*>(&sm.acc[warp][2 * c][d]) = even;      // row 2c
      *reinterpret_cast<float2*>(&sm.acc[warp][2 * c + 1][d]) = odd;   // row 2c + 1
    }
  }
  if (!packed) {
    finish_split_tile<Tag, kFp8Rows, kThreadsCta>(p, t, sm, warp, g, c, m, l);
    KH_DEC_PROBE_MARK(p, 3);
    return;
  }
  // The packed mode writes its rows itself (never split): out through the epilogue with the
  // sequence's first row as the origin, then lse (heads_q, total_q) from the merge's lse2.
  DecodeParams pv = p;
  pv.out = static_cast<uint16_t*>(p.out) + static_cast<int64_t>(seq.q_start) * p.o_row_stride;
  pv.o_batch_stride = 0;
  pv.lse = nullptr;
  pv.q_len = seq.len_q;
  t.b = 0;
  finish_split_tile<Tag, kFp8Rows, kThreadsCta>(pv, t, sm, warp, g, c, m, l);
  if (va.lse != nullptr && static_cast<int>(threadIdx.x) < t.nrows) {
    const int idx = t.r0 + static_cast<int>(threadIdx.x);
    const int i = idx / t.group, h = t.kv_head * t.group + (idx - i * t.group);
    const float l2 = sm.lse2[threadIdx.x];
    va.lse[static_cast<int64_t>(h) * va.total_q + seq.q_start + i] = l2 == -INFINITY ? -INFINITY : l2 * kLn2;
  }
}

template <typename Tag, int DP, int WARPS, bool TMA>
cudaError_t run_decode_fp8_split(const DecodeParams& p, const Fp8VarlenArgs& va, int row_tiles, int num_splits,
                                 const DecodeTma& tma, cudaStream_t stream) {
  constexpr size_t bytes = decode_fp8_smem_bytes<DP, WARPS, TMA>();
  static const cudaError_t ready = allow_smem(decode_fp8_kernel<Tag, DP, WARPS, TMA>, bytes);
  if (ready != cudaSuccess) return ready;
  const dim3 grid(static_cast<unsigned>(num_splits), static_cast<unsigned>(p.heads_kv * row_tiles),
                  static_cast<unsigned>(p.batch));
  decode_fp8_kernel<Tag, DP, WARPS, TMA><<<grid, WARPS * 32, bytes, stream>>>(p, va, row_tiles, num_splits, tma);
  return cudaGetLastError();
}

// The cp.async kernel's: the plan sizes both rings' grids with it (the TMA kernel's mbarriers add
// 8 bytes a warp and stage, which keep the same CTAs an SM).
template <typename Tag, int DP, int WARPS>
int decode_fp8_occupancy() {
  return occupancy_of(decode_fp8_kernel<Tag, DP, WARPS, false>, decode_fp8_smem_bytes<DP, WARPS, false>(), WARPS * 32);
}

#define KH_DECODE_FP8_INSTANTIATE(Tag, DP, WARPS)                                                                    \
  template cudaError_t run_decode_fp8_split<Tag, DP, WARPS, false>(const DecodeParams&, const Fp8VarlenArgs&, int, \
                                                                   int, const DecodeTma&, cudaStream_t);           \
  template int decode_fp8_occupancy<Tag, DP, WARPS>();
// The TMA kernel of the same shape (sm90a builds, the 128 bucket).
#define KH_DECODE_FP8_INSTANTIATE_TMA(Tag, DP, WARPS)                                                               \
  template cudaError_t run_decode_fp8_split<Tag, DP, WARPS, true>(const DecodeParams&, const Fp8VarlenArgs&, int, \
                                                                  int, const DecodeTma&, cudaStream_t);

}  // namespace decode
}  // namespace kh_attention
