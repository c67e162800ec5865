// attention_decode_staged.cuh: the CUDA decode split kernel whose K and V tiles go through shared
// memory (head dims up to 128): cp.async copies whole 128-byte lines into a per-warp ring,
// ldmatrix turns them into mma fragments, and both products run on the tensor cores
// (mma.sync m16n8k16: S^T = K Q^T, then O^T += V^T P^T). Included by attention_decode.cuh after
// attention_decode_mma.cuh (mma_16816, tile_probabilities, movmatrix_trans, pack_pair, key_row,
// the cp.async helpers), sharing Tile, MergeSmem, decode_epilogue and the combine kernel.
//
// Why (cuda/NOTES.md "Decode", run 7): the register kernels load K (and, with P V on the tensor
// cores, V) straight into fragments, where each warp instruction reads 64 bytes of 16 rows. Nsight
// Compute showed the L2 fabric 92% busy at 3.8 TB/s with 2.7 sectors a request, where cuDNN's
// kernel moves the same sectors at 4.6 TB/s with 4 a request (95% busy). Here 32 lanes copy two
// whole 256-byte rows (d 128) an instruction, and fragments come out of shared memory.
//  - Each warp walks its own 16-key tiles (as in the register kernels) through a 2-stage ring:
//    tile i + 1's copies are in flight while tile i is computed.
//  - Rows are XOR-swizzled in 16-byte chunks so that ldmatrix's 8 rows hit 8 bank groups.
//  - q sits in B fragments in the standard order (dims 16 kb + 2c, + 8), loaded once.
//  - Accumulator: lane (g, c) holds rows 2c, 2c + 1 of dims 16 mb + g and 16 mb + g + 8.
#pragma once

namespace kh_attention {
namespace decode {

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// One warp's ring: kStages x (K tile, V tile), each tile 16 keys x TPR chunks of 16 bytes, and
// (bulk) one mbarrier a stage. kBulk: the rows come by cp.async.bulk (sm90a: one TMA-unit copy a
// row, completion counted on the stage's mbarrier) into rows padded by 16 bytes, so that
// ldmatrix's 8 rows still hit 8 bank groups; else by cp.async, 16 bytes a lane, into XOR-swizzled
// rows.
template <int TPR, bool kBulk = false>
struct StagedRing {
  static_assert(TPR >= 4 && TPR <= 16, "the staged kernel takes head dims up to 128");
  static constexpr int kStages = 2;
  static constexpr int kTileChunks = 16 * TPR;
  static constexpr int kRowBytes = kBulk ? 16 * TPR + 16 : 16 * TPR;
  static constexpr int kTileBytes = 16 * kRowBytes;
  static constexpr int kStageBytes = 2 * kTileBytes;  // K, then V
  static constexpr size_t kRingBytes = static_cast<size_t>(kThreads / 32) * kStages * kStageBytes;
  static constexpr size_t kBarrierBytes = kBulk ? static_cast<size_t>(kThreads / 32) * kStages * 8 : 0;
  // Where chunk `chunk` of key `key` sits in its tile (bytes): swizzled, the 8 rows one ldmatrix
  // reads land in 8 different 16-byte bank groups (rows of 4 chunks pair up, hence the shift);
  // padded, a row starts 16 bytes past the last one's bank group.
  static __device__ __forceinline__ int swz(int key, int chunk) {
    return TPR >= 8 ? chunk ^ (key & 7) : chunk ^ ((key >> 1) & 3);
  }
  static __device__ __forceinline__ int offset(int key, int chunk) {
    return kBulk ? key * kRowBytes + chunk * 16 : (key * TPR + swz(key, chunk)) * 16;
  }
};

// Dynamic shared memory of decode_staged_kernel: the ring, which the merge buffer reuses after the
// key loop, then (bulk) the mbarriers, past both (never overwritten while they may be in use).
template <int TPR, int ROWS, bool kBulk = false>
__host__ __device__ constexpr size_t decode_staged_barrier_offset() {
  constexpr size_t ring = StagedRing<TPR, kBulk>::kRingBytes, merge = sizeof(MergeSmem<32, ROWS>);
  return ((ring > merge ? ring : merge) + 15) / 16 * 16;
}
template <int TPR, int ROWS, bool kBulk = false>
constexpr size_t decode_staged_smem_bytes() {
  return decode_staged_barrier_offset<TPR, ROWS, kBulk>() + StagedRing<TPR, kBulk>::kBarrierBytes;
}

// mbarrier and bulk-copy helpers of the bulk ring (sm90a; the compute_80 PTX leaves them out, and
// the host never picks the bulk kernel there).
__device__ __forceinline__ void bulk_mbar_init(uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar));
#endif
}
__device__ __forceinline__ void bulk_mbar_expect(uint32_t bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void bulk_mbar_wait(uint32_t bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}
__device__ __forceinline__ void bulk_copy_row(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
#else
  (void)dst, (void)src, (void)bytes, (void)bar;
  __trap();
#endif
}

template <typename Tag, int TPR, int ROWS, bool kBulk>
__global__ void __launch_bounds__(kThreads, 3) decode_staged_kernel(const DecodeParams p, const int row_tiles,
                                                                    const int num_splits) {
  static_assert(ROWS <= 8, "the query rows are the mma's n = 8");
  using Ring = StagedRing<TPR, kBulk>;
  constexpr int kWarps = kThreads / 32;
  constexpr int kStages = Ring::kStages;
  constexpr int kBlocks = TPR / 2;  // 16-dim blocks of a row (the products' k and m steps)
  constexpr int kTileStride = kWarps * 16;
  extern __shared__ __align__(16) unsigned char dec_smem[];

  const Tile t = make_tile(p, ROWS, row_tiles, num_splits);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;
  const int nch = p.head_dim / 8;
  const int nblk = (nch + 1) / 2;  // 16-dim blocks that hold a dim of the head
  const bool softcap = p.softcap > 0.f;
  const float s_scale = softcap ? p.scale : p.scale * kLog2e;
  const float cap_log2 = p.softcap * kLog2e, inv_cap = softcap ? 1.f / p.softcap : 0.f;

  // q of row g as B fragments: block kb holds dims 16 kb + 2c, + 1 and 16 kb + 8 + 2c, + 1.
  uint32_t qf[kBlocks][2];
  {
    const bool row_on = g < t.nrows;
    const uint16_t* qrow = tile_q_row(p, t, g);
#pragma unroll
    for (int kb = 0; kb < kBlocks; ++kb)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int dim = 16 * kb + 8 * hf + 2 * c;
        qf[kb][hf] = row_on && dim < p.head_dim ? *reinterpret_cast<const uint32_t*>(qrow + dim) : 0u;
      }
  }
  int pos[2], low[2];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int r = 2 * c + k;
    if (r < t.nrows) {
      const int i = (t.r0 + r) / t.group;
      pos[k] = t.len - p.q_len + i;
      low[k] = p.window_left >= 0 ? pos[k] - p.window_left : 0;
    } else {
      pos[k] = -1;
      low[k] = 0;
    }
    if (low[k] < t.key_beg) low[k] = t.key_beg;
  }
  const int key_end = t.key_end;

  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  float ot[kBlocks][4];
#pragma unroll
  for (int mb = 0; mb < kBlocks; ++mb)
#pragma unroll
    for (int w = 0; w < 4; ++w) ot[mb][w] = 0.f;

  const int32_t* table = p.block_table + static_cast<int64_t>(t.b) * p.bt_batch_stride;
  const uint16_t* kbase = static_cast<const uint16_t*>(p.k) + static_cast<int64_t>(t.kv_head) * p.k_head_stride;
  const uint16_t* vbase = static_cast<const uint16_t*>(p.v) + static_cast<int64_t>(t.kv_head) * p.v_head_stride;
  const int shift = p.block_shift, bmask = p.block_size - 1;
  const bool whole_tiles = shift >= 4;

  unsigned char* const ring = dec_smem + static_cast<size_t>(warp) * kStages * Ring::kStageBytes;
  const uint32_t ring_addr = static_cast<uint32_t>(__cvta_generic_to_shared(ring));
  constexpr size_t kBarOffset = decode_staged_barrier_offset<TPR, ROWS, kBulk>();
  const uint32_t bars = static_cast<uint32_t>(__cvta_generic_to_shared(dec_smem + kBarOffset)) + warp * kStages * 8;
  if constexpr (kBulk) {
    // The chunks past the head dim that ldmatrix reads (an odd chunk count's last block) are
    // never copied: zero them once, in every row of every stage.
    if (nch & 1)
      for (int row = lane; row < kStages * 32; row += 32)
        *reinterpret_cast<uint4*>(ring + row * Ring::kRowBytes + nch * 16) = make_uint4(0u, 0u, 0u, 0u);
    if (lane < kStages) bulk_mbar_init(bars + 8 * lane);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    __syncwarp();
  }
  // The cache block of tile tl when tiles are whole blocks or parts of one (block size >= 16):
  // read one iteration before the tile's copies are issued, so that the table's load latency
  // (an L2 round trip on the busy fabric) is not on each iteration's path.
  auto block_of = [&](int tl) -> int32_t { return whole_tiles && tl < key_end ? table[tl >> shift] : 0; };
  // Where key kk of tile tl sits in the K and V caches (element offsets).
  auto key_rows = [&](int tl, int32_t blk, int kk, int64_t& rk, int64_t& rv) {
    if (whole_tiles) {
      const int64_t in_block = static_cast<int64_t>((tl & bmask) + kk);
      rk = blk * p.k_block_stride + in_block * p.k_row_stride;
      rv = blk * p.v_block_stride + in_block * p.v_row_stride;
    } else {
      rk = key_row(table, tl + kk, shift, bmask, p.k_block_stride, p.k_row_stride);
      rv = key_row(table, tl + kk, shift, bmask, p.v_block_stride, p.v_row_stride);
    }
  };
  // Tile tl's K and V rows into stage st, zero outside the split's keys (and, cp.async, past
  // the head dim). cp.async: consecutive lanes copy consecutive 16-byte chunks of a row (whole
  // lines). Bulk: lane kk < 16 copies K row kk, lane 16 + kk V row kk, one copy each, after lane 0
  // has told the stage's mbarrier how many bytes are coming.
  auto issue = [&](int tl, int st, int32_t blk) {
    unsigned char* const kdst = ring + st * Ring::kStageBytes;
    unsigned char* const vdst = kdst + Ring::kTileBytes;
    if constexpr (kBulk) {
      const int kk = lane & 15, key = tl + kk;
      const bool on = key < key_end && key >= t.key_beg;
      const uint32_t keys_on = __popc(__ballot_sync(0xffffffffu, on) & 0xffffu);
      const uint32_t row_bytes = static_cast<uint32_t>(nch * 16);
      if (lane == 0) bulk_mbar_expect(bars + 8 * st, 2 * keys_on * row_bytes);
      __syncwarp();
      unsigned char* const dst = (lane < 16 ? kdst : vdst) + kk * Ring::kRowBytes;
      if (on) {
        int64_t rk, rv;
        key_rows(tl, blk, kk, rk, rv);
        const uint16_t* src = lane < 16 ? kbase + rk : vbase + rv;
        bulk_copy_row(static_cast<uint32_t>(__cvta_generic_to_shared(dst)), src, row_bytes, bars + 8 * st);
      } else {
        for (int ch = 0; ch < nch; ++ch) *reinterpret_cast<uint4*>(dst + ch * 16) = make_uint4(0u, 0u, 0u, 0u);
      }
    } else {
      int64_t tk = 0, tv = 0;
      if (whole_tiles) {
        tk = blk * p.k_block_stride + static_cast<int64_t>(tl & bmask) * p.k_row_stride;
        tv = blk * p.v_block_stride + static_cast<int64_t>(tl & bmask) * p.v_row_stride;
      }
#pragma unroll
      for (int n = 0; n < Ring::kTileChunks / 32; ++n) {
        const int idx = lane + 32 * n, kk = idx / TPR, ch = idx - kk * TPR, key = tl + kk;
        const bool on = ch < nch && key < key_end && key >= t.key_beg;
        int64_t rk = 0, rv = 0;
        if (on) {
          if (whole_tiles) {
            rk = tk + static_cast<int64_t>(kk) * p.k_row_stride;
            rv = tv + static_cast<int64_t>(kk) * p.v_row_stride;
          } else {
            rk = key_row(table, key, shift, bmask, p.k_block_stride, p.k_row_stride);
            rv = key_row(table, key, shift, bmask, p.v_block_stride, p.v_row_stride);
          }
        }
        const int off = Ring::offset(kk, ch);
        cp_async16(kdst + off, on ? kbase + rk + ch * 8 : kbase, on ? 16 : 0);
        cp_async16(vdst + off, on ? vbase + rv + ch * 8 : vbase, on ? 16 : 0);
      }
    }
  };
  // ldmatrix row addresses of this lane: matrix q = lane / 8, row lane % 8. For K (A of S^T):
  // matrices (keys 0-7 | 8-15) x (first | second 8 dims of a block) in the order a0 a1 a2 a3 =
  // (0-7, lo) (8-15, lo) (0-7, hi) (8-15, hi); for V (A of O^T, transposed): (0-7, lo) (0-7, hi)
  // (8-15, lo) (8-15, hi).
  const int mq = lane / 8, mr = lane % 8;
  const int k_key = mr + 8 * (mq & 1), k_half = mq >> 1;
  const int v_key = mr + 8 * (mq >> 1), v_half = mq & 1;

  const int first = t.tile_beg + warp * 16;
  if (first < key_end) issue(first, 0, block_of(first));
  if constexpr (!kBulk) cp_async_commit();
  int32_t next_blk = block_of(first + kTileStride);
  int it = 0;
  for (int tile = first; tile < key_end; tile += kTileStride, ++it) {
    __syncwarp();  // every lane is done with the stage refilled now (read in iteration it - 1)
    const int next = tile + kTileStride;
    if (next < key_end) issue(next, (it + 1) % kStages, next_blk);
    next_blk = block_of(next + kTileStride);
    if constexpr (kBulk) {
      bulk_mbar_wait(bars + 8 * (it % kStages), (it / kStages) & 1);  // tile `it`'s copies have landed
      __syncwarp();  // ... and every lane's zero rows are written
    } else {
      cp_async_commit();
      cp_async_wait<kStages - 1>();  // this lane's copies of tile `it` have landed
      __syncwarp();                  // ... and every lane's
    }
    const uint32_t kst = ring_addr + static_cast<uint32_t>((it % kStages) * Ring::kStageBytes);
    const uint32_t vst = kst + static_cast<uint32_t>(Ring::kTileBytes);

    float sc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int kb = 0; kb < kBlocks; ++kb) {
      if (kb < nblk) {
        uint32_t a[4];
        ldmatrix_x4(a, kst + static_cast<uint32_t>(Ring::offset(k_key, 2 * kb + k_half)));
        mma_16816<Tag>(sc, a[0], a[1], a[2], a[3], qf[kb][0], qf[kb][1]);
      }
    }
    float corr[2];
    tile_probabilities(sc, m, l, corr, tile + g, key_end, pos, low, softcap, s_scale, cap_log2, inv_cap);
#pragma unroll
    for (int mb = 0; mb < kBlocks; ++mb)
#pragma unroll
      for (int w = 0; w < 4; ++w) ot[mb][w] *= corr[w & 1];
    const uint32_t pb[2] = {movmatrix_trans(pack_pair<Tag>(sc[0], sc[1])), movmatrix_trans(pack_pair<Tag>(sc[2], sc[3]))};
#pragma unroll
    for (int mb = 0; mb < kBlocks; ++mb) {
      if (mb < nblk) {
        uint32_t a[4];
        ldmatrix_x4_trans(a, vst + static_cast<uint32_t>(Ring::offset(v_key, 2 * mb + v_half)));
        mma_16816<Tag>(ot[mb], a[0], a[1], a[2], a[3], pb[0], pb[1]);
      }
    }
  }
  if constexpr (!kBulk) cp_async_wait<0>();  // (bulk: every copy issued was waited for)
  __syncthreads();  // the merge buffer below reuses the ring

  sum_rows_over_column(l);
  MergeSmem<32, ROWS>& sm = *reinterpret_cast<MergeSmem<32, ROWS>*>(dec_smem);
#pragma unroll
  for (int mb = 0; mb < kBlocks; ++mb) {
    if (mb < nblk) {
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const int r = 2 * c + (w & 1);
        if (r < ROWS) sm.acc[warp][r][16 * mb + g + 8 * (w >> 1)] = ot[mb][w];
      }
    }
  }
  finish_split_tile<Tag, ROWS>(p, t, sm, warp, g, c, m, l, num_splits);
}

}  // namespace decode
}  // namespace kh_attention
