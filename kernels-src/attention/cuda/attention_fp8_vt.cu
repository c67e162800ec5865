// attention_fp8_vt.cu: the FP8 prefill's pre-pass (sm90a build): V transposed into the caller's
// workspace in the layout of attention_fp8_vt.hpp, so that the prefill kernel's TMA loads each
// key block as P V reads it and its producer warps transpose nothing (cuda/NOTES.md, FP8
// prefill: the transposer's instructions and shared-memory traffic share the SM with the
// consumers). Two launches on the caller's stream before the prefill kernel: the sequences'
// first columns (one CTA), then the transpose (a CTA per 64 columns x 64 head-dim rows of a KV
// head). Neither allocates or synchronizes with the host; both are graph-capturable, and a replay
// reads cu_seqlens as they are then.
#include <cuda_runtime.h>

#include <cstdint>

#include "attention_fp8_vt.hpp"
#include "attention_fwd_sm90.hpp"
#include "attention_visibility.hpp"

namespace kh_attention::sm90 {
namespace {

static_assert(Sm90TileConfig<64, 64, 1>::kBlockN == vt_key_block(64) &&
                  Sm90TileConfig<128, 128, 1>::kBlockN == vt_key_block(128) &&
                  Sm90TileConfig<256, 256, 1>::kBlockN == vt_key_block(256),
              "attention_fp8_vt.hpp's key blocks are not the FP8 kernel's");

constexpr int kScanThreads = 1024;
constexpr int kTileCols = kVtTileColumns, kTileRows = 64, kTileThreads = 128;

// col0[b] = the padded key lengths of sequences 0..b-1, col0[batch] their sum; a sum past
// vt_columns is written as vt_columns + 1 (and int32 holds it: the host keeps vt_columns below
// INT32_MAX), which tells the prefill kernel to transpose in shared memory instead.
__global__ void __launch_bounds__(kScanThreads) vt_columns_kernel(const __grid_constant__ FwdLaunchParams p) {
  __shared__ int64_t warp_sums[kScanThreads / 32];
  __shared__ int64_t carry;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  if (tid == 0) carry = 0;
  __syncthreads();
  const int64_t cap = p.vt_columns + 1;
  const int64_t block = vt_key_block(p.head_dim_v);
  for (int base = 0; base < p.batch; base += kScanThreads) {
    const int b = base + tid;
    const int64_t len = b < p.batch ? vt_round_up(launch_seq_bounds<true>(p, b).len_k, block) : 0;
    int64_t x = len;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int64_t y = __shfl_up_sync(0xffffffffu, x, o);
      if (lane >= o) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
      int64_t w = warp_sums[lane];
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int64_t y = __shfl_up_sync(0xffffffffu, w, o);
        if (lane >= o) w += y;
      }
      warp_sums[lane] = w;  // inclusive over warps
    }
    __syncthreads();
    const int64_t inclusive = carry + x + (warp > 0 ? warp_sums[warp - 1] : 0);
    if (b < p.batch) p.vt_col0[b] = static_cast<int32_t>(inclusive - len < cap ? inclusive - len : cap);
    __syncthreads();
    if (tid == kScanThreads - 1) carry = inclusive;
    __syncthreads();
  }
  if (tid == 0) p.vt_col0[p.batch] = static_cast<int32_t>(carry < cap ? carry : cap);
}

// One tile: kTileCols columns x kTileRows head-dim rows of KV head blockIdx.y, 128 threads. Each
// column's key (or none: a sequence's padding) is found first; the keys' 64-byte row pieces come
// into shared memory (4 threads a row, 8 rows a warp instruction); then each thread turns a 16
// column x 4 row block around with byte permutes (16 word loads, 4 x 4 blocks) and writes its 4
// rows' 16 bytes (a warp instruction: 16 rows x 32 contiguous bytes): 32 us for b2 s8k's 33 MB of
// V on the H100 (the copy floor ~23). The first version gathered single bytes and wrote 16 bytes of
// 32 rows a warp instruction: 43 us (cuda/NOTES.md, "The second pre-pass").
__global__ void __launch_bounds__(kTileThreads) vt_transpose_kernel(const __grid_constant__ FwdLaunchParams p) {
  // A column's row piece: kTileRows bytes + 4, so that the 16 columns a thread reads (its rows'
  // words, kPitch bytes apart) fall in banks apart from the other column group of its warp.
  constexpr int kPitch = kTileRows + 4;
  __shared__ int64_t src_row[kTileCols];
  __shared__ __align__(16) uint32_t tile[kTileCols * kPitch / 4];
  const int64_t used = p.vt_col0[p.batch];
  const int64_t c_tile = static_cast<int64_t>(blockIdx.x) * kTileCols;
  if (used > p.vt_columns || c_tile >= used) return;  // the kernel transposes itself, or no key here
  const int tid = static_cast<int>(threadIdx.x);
  const int head = static_cast<int>(blockIdx.y), d0 = static_cast<int>(blockIdx.z) * kTileRows;
  for (int col = tid; col < kTileCols; col += kTileThreads) {
    const int64_t c = c_tile + col;
    int64_t row = -1;
    if (c < used) {
      const int b = vt_sequence_of(p.vt_col0, p.batch, c);
      const SeqBounds s = launch_seq_bounds<true>(p, b);
      const int64_t key = vt_key_of_column(c - p.vt_col0[b], s.len_k);
      if (key >= 0) row = s.k_start + key;
    }
    src_row[col] = row;
  }
  __syncthreads();
  for (int col = tid / 4; col < kTileCols; col += kTileThreads / 4) {
    const int chunk = tid % 4, d = d0 + 16 * chunk;
    uint4 x = make_uint4(0, 0, 0, 0);
    const int64_t row = src_row[col];
    if (row >= 0 && d < p.head_dim_v)
      x = __ldg(reinterpret_cast<const uint4*>(static_cast<const unsigned char*>(p.v) + row * p.v_row_stride +
                                               head * p.v_head_stride + d));
    uint32_t* const t = tile + (col * kPitch + 16 * chunk) / 4;
    t[0] = x.x, t[1] = x.y, t[2] = x.z, t[3] = x.w;
  }
  __syncthreads();
  // Thread: rows 4 rq .. 4 rq + 3 of the tile, columns 16 cc .. 16 cc + 15.
  const int rq = tid % (kTileRows / 4), cc = tid / (kTileRows / 4);
  for (int cg = cc; cg < kTileCols / 16; cg += kTileThreads / (kTileRows / 4)) {
    uint32_t w[16];  // w[j]: rows 4 rq .. + 3 of column 16 cg + j, a byte each
#pragma unroll
    for (int j = 0; j < 16; ++j) w[j] = tile[((16 * cg + j) * kPitch) / 4 + rq];
    uint32_t out[4][4];  // out[i][q]: row 4 rq + i, columns 16 cg + 4 q .. + 3
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      // Two rounds of byte permutes turn 4 columns x 4 rows around.
      const uint32_t a = __byte_perm(w[4 * q], w[4 * q + 1], 0x5140), b = __byte_perm(w[4 * q], w[4 * q + 1], 0x7362);
      const uint32_t c = __byte_perm(w[4 * q + 2], w[4 * q + 3], 0x5140), e = __byte_perm(w[4 * q + 2], w[4 * q + 3], 0x7362);
      out[0][q] = __byte_perm(a, c, 0x5410), out[1][q] = __byte_perm(a, c, 0x7632);
      out[2][q] = __byte_perm(b, e, 0x5410), out[3][q] = __byte_perm(b, e, 0x7632);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = 4 * rq + i;
      if (d0 + r >= p.head_dim_v) break;
      unsigned char* const dst = static_cast<unsigned char*>(p.vt) +
                                 (static_cast<int64_t>(head) * p.head_dim_v + d0 + r) * p.vt_columns + c_tile + 16 * cg;
      *reinterpret_cast<uint4*>(dst) = make_uint4(out[i][0], out[i][1], out[i][2], out[i][3]);
    }
  }
}

}  // namespace

cudaError_t launch_fp8_vt_prepass(const FwdLaunchParams& p, cudaStream_t stream) {
  vt_columns_kernel<<<1, kScanThreads, 0, stream>>>(p);
  const dim3 grid(static_cast<unsigned>(p.vt_columns / kTileCols), static_cast<unsigned>(p.heads_kv),
                  static_cast<unsigned>((p.head_dim_v + kTileRows - 1) / kTileRows));
  vt_transpose_kernel<<<grid, kTileThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace kh_attention::sm90
