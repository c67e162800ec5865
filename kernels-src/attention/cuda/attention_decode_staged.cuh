// attention_decode_staged.cuh: the CUDA decode split kernel whose K and V tiles go through shared
// memory (head dims up to 192, in buckets 32, 64, 128, 192): cp.async copies whole 128-byte lines
// into a per-warp ring, ldmatrix turns them into mma fragments, and both products run on the
// tensor cores (mma.sync m16n8k16: S^T = K Q^T, then O^T += V^T P^T). Included by
// attention_decode.cuh after attention_decode_mma.cuh (mma_16816, tile_probabilities,
// movmatrix_trans, pack_pair, key_row, the cp.async helpers), sharing Tile, MergeSmem,
// decode_epilogue and the combine kernel.
//
// Why (cuda/NOTES.md "Decode", run 7): the register kernels load K (and, with P V on the tensor
// cores, V) straight into fragments, where each warp instruction reads 64 bytes of 16 rows. Nsight
// Compute showed the L2 fabric 92% busy at 3.8 TB/s with 2.7 sectors a request, where cuDNN's
// kernel moves the same sectors at 4.6 TB/s with 4 a request (95% busy). Here 32 lanes copy two
// whole 256-byte rows (d 128) an instruction, and fragments come out of shared memory.
//  - Each warp walks its own 16-key tiles (as in the register kernels) through a 2-stage ring:
//    tile i + 1's copies are in flight while tile i is computed.
//  - Rows are XOR-swizzled in 16-byte chunks (or, at 192, padded to an odd pitch) so that
//    ldmatrix's 8 rows hit 8 bank groups.
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

// The rings of a CTA of WARPS warps for head-dim bucket DP (head dims up to DP), one a warp:
// kStages x (K tile, V tile), each tile 16 key rows of DP / 8 chunks of 16 bytes. Two stages:
// tile i + 1 in flight while tile i is computed (three, at 9 warps a wide CTA, were slower:
// cuda/NOTES.md "Decode", wide CTAs). Probe builds may reshape the wide CTA (comparisons of the
// same shared memory spent as more stages for fewer warps): KH_DECODE_WIDE_WARPS and
// KH_DECODE_WIDE_STAGES.
#ifndef KH_DECODE_WIDE_WARPS
#define KH_DECODE_WIDE_WARPS 12
#endif
#ifndef KH_DECODE_WIDE_STAGES
#define KH_DECODE_WIDE_STAGES 2
#endif
template <int DP, int WARPS>
struct StagedRing {
  static_assert(DP % 16 == 0 && DP >= 32 && DP <= 192, "the staged kernel's buckets: 32-192 in steps of 16");
  static constexpr int kStages = WARPS > 4 ? KH_DECODE_WIDE_STAGES : 2;
  static constexpr int kChunks = DP / 8;  // chunks a key row copies
  // Rows of 4, 8 or 16 chunks are XOR-swizzled in place; 192's rows of 24 are padded to a pitch
  // of 25 instead, so that the 8 rows one ldmatrix reads, a pitch apart, still land in 8
  // different 16-byte bank groups.
  static constexpr bool kXor = kChunks == 4 || kChunks == 8 || kChunks == 16;
  static constexpr int kPitch = kXor ? kChunks : (kChunks | 1);
  static constexpr int kTileChunks = 16 * kPitch;  // a tile's slots
  static constexpr int kCopies = 16 * kChunks / 32;  // copy instructions a tile and lane (per K and V)
  static constexpr size_t kBytes = static_cast<size_t>(WARPS) * kStages * 2 * kTileChunks * 16;
  // The slot of chunk `chunk` of key `key` in a tile (rows of 4 chunks pair up, hence the shift).
  static __device__ __forceinline__ int slot(int key, int chunk) {
    if constexpr (!kXor) return key * kPitch + chunk;
    return key * kPitch + (kChunks >= 8 ? chunk ^ (key & 7) : chunk ^ ((key >> 1) & 3));
  }
};

// Whether the staged kernel's cp.async rings issue a step's copies after the tile's scores instead
// of first: in the sm90a build only, where they carry head dims 72-120 (128 takes TMA). Issued
// first, those warps waited on their own tiles (long-scoreboard stalls at the wait: 26% of the d80
// loop's warp samples) and the long calls took longer; issued late (H200, A/B in one run): b64 x 8k
// d80 372 -> 360 us, b16 x 32k d80 387 -> 377, d96 425 -> 402, d64 253 -> 248, but b128 x 4k d80
// 353 -> 363. The sm80 build's ring also carries d128, whose full rows lose 0.5-2.8% issued late
// (b128 x 4k 483 -> 497), so it keeps issuing first; TMA tiles too (+0.3-0.8% late).
// cuda/NOTES.md "Decode", bad block ids, eighteenth session.
#if defined(KH_ATTENTION_SM90A)
constexpr bool kStagedLateIssue = true;
#else
constexpr bool kStagedLateIssue = false;
#endif

// CTA widths: kThreads / 32 = 4 warps (the default), or kWideWarps, a CTA that fills an SM's
// shared memory alone (d <= 128: 12 x 16 KiB) so that a row tile's keys need fewer splits,
// often one: no partials, no combine kernel (cuda/NOTES.md "Decode", wide CTAs).
constexpr int kWideWarps = KH_DECODE_WIDE_WARPS;

// CTAs an SM the kernel is built for, as its ring allows: 2 at 192 (100 KiB a CTA), else 3 (up
// to 64 KiB); 1 for the wide CTA.
constexpr int staged_min_ctas(int dp, int warps) { return warps > 4 ? 1 : dp == 192 ? 2 : 3; }

// The ring (or the merge buffer that reuses it), then with TMA one mbarrier a warp and stage.
template <int DP, int ROWS, int WARPS>
__host__ __device__ constexpr size_t decode_staged_ring_bytes() {
  using Merge = MergeSmem<32, ROWS, WARPS * 32>;
  using Ring = StagedRing<DP, WARPS>;
  return Ring::kBytes > sizeof(Merge) ? Ring::kBytes : (sizeof(Merge) + 7) / 8 * 8;
}

template <int DP, int ROWS, int WARPS, bool TMA>
__host__ __device__ constexpr size_t decode_staged_smem_bytes() {
  return decode_staged_ring_bytes<DP, ROWS, WARPS>() + (TMA ? WARPS * StagedRing<DP, WARPS>::kStages * 8 : 0);
}

// Probe builds only (KH_DECODE_PROBE_TIMES, decode_probe.py --times): thread 0 of each CTA
// writes the global timer at mark m (0 kernel entry, 1 first copy about to issue, 2 key loop
// done, 3 results written; 4-7 the balanced kernel's prologue steps) to the workspace's first
// 8 x 8 bytes a CTA, where no part of an unsplit call goes. It shows where a call's fixed time
// goes, and breaks any call that uses the workspace for partials.
#if defined(KH_DECODE_PROBE_TIMES)
__device__ __forceinline__ void probe_write_time(const DecodeParams& p, unsigned index) {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  reinterpret_cast<unsigned long long*>(p.workspace)[index] = now;
}
__device__ __forceinline__ unsigned probe_cta() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}
__device__ __forceinline__ void probe_time_mark(const DecodeParams& p, int m) {
  if (threadIdx.x == 0) probe_write_time(p, 8 * probe_cta() + m);
}
// Also, past the CTAs' marks (from 64 KiB into the workspace, 16 x 8 bytes a CTA): when each
// warp's key loop ended (slot = warp; the CTA's last staged_tile call) and, in slot 15, when the
// CTA's barrier after the loops let thread 0 through: how far apart a CTA's warps end (grids of
// more than 1024 CTAs write their CTA marks over these).
__device__ __forceinline__ void probe_warp_mark(const DecodeParams& p, int slot) {
  if (threadIdx.x % 32 == 0) probe_write_time(p, 8192 + 16 * probe_cta() + slot);
}
#define KH_DEC_PROBE_MARK(p, m) probe_time_mark(p, m)
#define KH_DEC_PROBE_WARP_MARK(p, slot) probe_warp_mark(p, slot)
#else
#define KH_DEC_PROBE_MARK(p, m) ((void)0)
#define KH_DEC_PROBE_WARP_MARK(p, slot) ((void)0)
#endif

// With TMA: the mbarrier of warp `warp`'s ring stage st (one a warp and stage, after the ring).
template <int DP, int ROWS, int WARPS>
__device__ __forceinline__ uint32_t staged_stage_bar(unsigned char* smem, int warp, int st) {
  constexpr uint32_t kRingBytes = static_cast<uint32_t>(decode_staged_ring_bytes<DP, ROWS, WARPS>());
  return static_cast<uint32_t>(__cvta_generic_to_shared(smem)) + kRingBytes +
         8 * static_cast<uint32_t>(warp * StagedRing<DP, WARPS>::kStages + st);
}

// Lane 0 of warp `warp`: the TMA copies of a tile (16 cache rows from `row` of cache block blk,
// kv head `head`) into the warp's ring stage st, counted by the stage's mbarrier. A bad block id
// (decode_block_ok) is copied as block num_blocks: a box wholly outside the map's bounds, which
// TMA fills with zeros (and counts as landed like any other), so nothing outside the cache is read.
template <int DP, int ROWS, int WARPS>
__device__ __forceinline__ void staged_tma_issue(unsigned char* smem, int warp, int st, const DecodeTma& tma,
                                                 int head, int row, int32_t blk, int num_blocks, uint64_t policy) {
  using Ring = StagedRing<DP, WARPS>;
  const uint32_t kdst = static_cast<uint32_t>(__cvta_generic_to_shared(smem)) +
                        static_cast<uint32_t>((warp * Ring::kStages + st) * 2 * Ring::kTileChunks * 16);
  tma_load_kv_tile<2>(kdst, kdst + Ring::kTileChunks * 16, tma, staged_stage_bar<DP, ROWS, WARPS>(smem, warp, st),
                      head, row, decode_block_ok(blk, num_blocks) ? blk : num_blocks, policy);
}

// The keys [t.key_beg, t.key_end) of tile t's rows through this warp's ring, then the CTA's merge
// and epilogue (every thread of the CTA calls it; smem: the kernel's dynamic shared memory).
// read_once: no other row tile reads these K/V rows (the L2 policy). tiles_done: the tiles this
// warp has taken through its ring before, in this CTA: with TMA its mbarriers' phases continue
// from there (the balanced grid, attention_decode_balanced.cuh, runs several tiles a CTA; the
// barriers are initialised once, by the kernel). first_in_flight (TMA only): this warp's first
// tile, t.tile_beg + 16 x warp, was issued into stage tiles_done % kStages already, by a kernel
// that knew the tile before the bounds in t (the plain grid's early first tile below, the
// balanced grid's guess); first_bad: that tile's block id was bad (decode_block_ok: its copies are
// zeros and its keys are left out).
// How staged_tile's key loop steps: with or without the block id check, over whole tiles (block
// size >= 16: a tile's keys lie in one block) or tiles of several blocks. Each mode is its own
// copy of the loop, so that no step branches (or, once the compiler if-converts, pays) for another.
template <bool CHECK, bool WHOLE>
struct StepMode {
  static constexpr bool kCheck = CHECK;
  static constexpr bool kWhole = WHOLE;
};
using CheckedWhole = StepMode<true, true>;
using CheckedSeveral = StepMode<true, false>;
using UncheckedWhole = StepMode<false, true>;  // the fast path: every id good, read once first

template <typename Tag, int DP, int ROWS, int WARPS, bool TMA>
__device__ __forceinline__ void staged_tile(const DecodeParams& p, const Tile& t, bool read_once,
                                            const DecodeTma& tma, unsigned char* smem, int& tiles_done,
                                            bool first_in_flight = false, bool first_bad = false) {
  static_assert(ROWS <= 8, "the query rows are the mma's n = 8");
  static_assert(!TMA || DP == 2 * kTmaBoxCols, "TMA tiles are two 64-dim boxes");
  using Ring = StagedRing<DP, WARPS>;
  constexpr int kWarps = WARPS;
  constexpr int kStages = Ring::kStages;
  constexpr int kBlocks = DP / 16;  // 16-dim blocks of a row (the products' k and m steps)
  constexpr int kChunks = Ring::kChunks;
  constexpr int kTileStride = kWarps * 16;
  constexpr int kPitchBytes = Ring::kPitch * 16;  // a key row's slots

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
  const bool whole_tiles = TMA || shift >= 4;
  const uint64_t policy = kv_stream_policy(read_once);

  uint4* ring = reinterpret_cast<uint4*>(smem) + static_cast<size_t>(warp) * kStages * 2 * Ring::kTileChunks;
  const uint32_t ring_addr = static_cast<uint32_t>(__cvta_generic_to_shared(ring));
  // With TMA: this warp's mbarriers, one a stage, after the ring.
  const uint32_t bars = staged_stage_bar<DP, ROWS, WARPS>(smem, warp, 0);
  auto slot_of = [](int key, int chunk) { return TMA ? tma_tile_slot(key, chunk) : Ring::slot(key, chunk); };
  // The cache block of tile tl when tiles are whole blocks or parts of one (block size >= 16):
  // read one iteration before the tile's copies are issued, so that the table's load latency
  // (an L2 round trip on the busy fabric) is not on each iteration's path.
  auto block_of = [&](int tl) -> int32_t { return whole_tiles && tl < key_end ? table[tl >> shift] : 0; };
  // Bad block ids (decode_block_ok) are checked where a warp's tiles may hold one: CHECK steps
  // zero-fill a bad block's copies and leave its keys out; with whole tiles, bit st of bad_stages
  // is set while stage st holds such a tile. With TMA or head dims above 128 (kFastPath), a warp
  // whose tiles' ids are all good (read once, before the loop) runs unchecked steps: the check a
  // tile cost those key loops 0.5-2% on the H200 (cuda/NOTES.md "Decode").
  unsigned bad_stages = 0;
  // cp.async whole tiles of rows of 4, 8 or 16 chunks: lane copies chunk lane_ch of rows lane_row,
  // lane_row + kRowStep, ... of every tile, so its offsets within a tile and its ring slots (the
  // swizzle repeats every 8 rows: kSlotKinds of them) are worked out once, here, leaving a copy
  // one address step and the copy (d80 b64 x 8k: 141 -> 117 M instructions, 158 -> 136 registers).
  constexpr bool kLaneFixed = !TMA && 32 % kChunks == 0;
  constexpr int kRowStep = kLaneFixed ? 32 / kChunks : 1;
  constexpr int kSlotKinds = kLaneFixed ? 8 / kRowStep : 1;
  static_assert(!kLaneFixed || (kRowStep * kSlotKinds == 8 && Ring::kCopies % kSlotKinds == 0),
                "a lane's slots repeat every 8 rows");
  const int lane_row = kLaneFixed ? lane / kChunks : 0, lane_ch = kLaneFixed ? lane % kChunks : 0;
  const bool lane_pad = lane_ch >= nch;  // a chunk past the head dim: zeros
  const int64_t k_lane = static_cast<int64_t>(lane_row) * p.k_row_stride + lane_ch * 8;
  const int64_t v_lane = static_cast<int64_t>(lane_row) * p.v_row_stride + lane_ch * 8;
  uint32_t lane_slot[kSlotKinds];
#pragma unroll
  for (int v = 0; v < kSlotKinds; ++v) lane_slot[v] = static_cast<uint32_t>(Ring::slot(lane_row + kRowStep * v, lane_ch) * 16);
  // Tile tl's K and V rows into stage st: consecutive lanes copy consecutive 16-byte chunks of
  // a row (whole lines), zero past the head dim or outside the split's keys, or from a bad block.
  // Whole tiles and tiles of several blocks take separate copy loops (a branch a tile, not a
  // select a copy), and a whole tile's bad block id ends the keys its copies take at the tile's
  // start instead of adding a predicate to every copy, so that the copy loop carries no per-copy
  // check (cuda/NOTES.md "Decode", bad block ids).
  auto issue = [&](auto mode, int tl, int st, int32_t blk) {
    constexpr bool kCheck = decltype(mode)::kCheck, kWhole = decltype(mode)::kWhole;
    int copy_end = key_end;  // the copies take keys [t.key_beg, copy_end), zeros elsewhere
    bool blk_bad = false;
    if constexpr (kCheck && kWhole) {
      blk_bad = !decode_block_ok(blk, p.num_blocks);
      bad_stages = blk_bad ? bad_stages | (1u << st) : bad_stages & ~(1u << st);
      if (blk_bad) copy_end = tl;
    }
    if constexpr (TMA) {
      if (lane == 0)
        staged_tma_issue<DP, ROWS, WARPS>(smem, warp, st, tma, t.kv_head, tl & bmask, blk, p.num_blocks, policy);
    } else {
      uint4* kdst = ring + static_cast<size_t>(st) * 2 * Ring::kTileChunks;
      uint4* vdst = kdst + Ring::kTileChunks;
      if constexpr (kWhole && kLaneFixed) {
        // A bad id's copies are all skipped (copy_end = tl); block 0 keeps their addresses in the cache.
        const int64_t b = blk_bad ? 0 : blk;
        const uint16_t* kp = kbase + b * p.k_block_stride + static_cast<int64_t>(tl & bmask) * p.k_row_stride + k_lane;
        const uint16_t* vp = vbase + b * p.v_block_stride + static_cast<int64_t>(tl & bmask) * p.v_row_stride + v_lane;
        const int64_t k_step = kRowStep * p.k_row_stride, v_step = kRowStep * p.v_row_stride;
        const uint32_t kst = ring_addr + static_cast<uint32_t>(st * 2 * Ring::kTileChunks * 16);
        const uint32_t vst = kst + static_cast<uint32_t>(Ring::kTileChunks * 16);
        // Copy n's ring slot: its kind's, 8 rows (kSlotKinds copies) further per round.
        auto dst = [&](int n) { return lane_slot[n % kSlotKinds] + static_cast<uint32_t>(n / kSlotKinds * 8 * kPitchBytes); };
        if (tl >= t.key_beg && tl + 16 <= copy_end) {
          // Every key of the tile is the split's: the common step, one predicate (the lane's chunk).
#pragma unroll
          for (int n = 0; n < Ring::kCopies; ++n) {
            cp_async16_or_zeros(kst + dst(n), kp + n * k_step, lane_pad, policy);
            cp_async16_or_zeros(vst + dst(n), vp + n * v_step, lane_pad, policy);
          }
        } else {
#pragma unroll
          for (int n = 0; n < Ring::kCopies; ++n) {
            const int key = tl + lane_row + kRowStep * n;
            const bool skip = lane_pad || key >= copy_end || key < t.key_beg;
            cp_async16_or_zeros(kst + dst(n), kp + n * k_step, skip, policy);
            cp_async16_or_zeros(vst + dst(n), vp + n * v_step, skip, policy);
          }
        }
      } else if constexpr (kWhole) {
        const int64_t tk = blk * p.k_block_stride + static_cast<int64_t>(tl & bmask) * p.k_row_stride;
        const int64_t tv = blk * p.v_block_stride + static_cast<int64_t>(tl & bmask) * p.v_row_stride;
#pragma unroll
        for (int n = 0; n < Ring::kCopies; ++n) {
          const int idx = lane + 32 * n, kk = idx / kChunks, ch = idx - kk * kChunks, key = tl + kk;
          const bool on = ch < nch && key < copy_end && key >= t.key_beg;
          const int64_t rk = tk + static_cast<int64_t>(kk) * p.k_row_stride;
          const int64_t rv = tv + static_cast<int64_t>(kk) * p.v_row_stride;
          const int slot = Ring::slot(kk, ch);
          cp_async16(kdst + slot, on ? kbase + rk + ch * 8 : kbase, on ? 16 : 0, policy);
          cp_async16(vdst + slot, on ? vbase + rv + ch * 8 : vbase, on ? 16 : 0, policy);
        }
      } else {
        // Tiles of several blocks (block size < 16): each key's own block id, checked.
        (void)copy_end;  // whole tiles' bound only
#pragma unroll
        for (int n = 0; n < Ring::kCopies; ++n) {
          const int idx = lane + 32 * n, kk = idx / kChunks, ch = idx - kk * kChunks, key = tl + kk;
          bool on = ch < nch && key < key_end && key >= t.key_beg;
          int64_t rk = 0, rv = 0;
          if (on) {
            const int32_t kblk = table[key >> shift];
            on = decode_block_ok(kblk, p.num_blocks);
            rk = static_cast<int64_t>(kblk) * p.k_block_stride + static_cast<int64_t>(key & bmask) * p.k_row_stride;
            rv = static_cast<int64_t>(kblk) * p.v_block_stride + static_cast<int64_t>(key & bmask) * p.v_row_stride;
          }
          const int slot = Ring::slot(kk, ch);
          cp_async16(kdst + slot, on ? kbase + rk + ch * 8 : kbase, on ? 16 : 0, policy);
          cp_async16(vdst + slot, on ? vbase + rv + ch * 8 : vbase, on ? 16 : 0, policy);
        }
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

  // The first kStages - 1 tiles in flight before the loop; each iteration issues the tile
  // kStages - 1 ahead into the stage read in the iteration before. Stages and phases count this
  // warp's tiles from the CTA's first (it starts at tiles_done).
  const int first = t.tile_beg + warp * 16;
  int it = tiles_done;
  if (TMA && first_in_flight && first_bad) bad_stages |= 1u << (it % kStages);  // zero-filled (staged_tma_issue)
  KH_DEC_PROBE_MARK(p, 1);
#pragma unroll
  for (int st = 0; st + 1 < kStages; ++st) {
    const int tl = first + st * kTileStride;
    if (tl < key_end && !(TMA && st == 0 && first_in_flight)) {
      if (whole_tiles) issue(CheckedWhole{}, tl, (it + st) % kStages, block_of(tl));
      else issue(CheckedSeveral{}, tl, (it + st) % kStages, 0);
    }
    if constexpr (!TMA) cp_async_commit();
  }
  // The block ids of this warp's first 32 x kScan tiles (one a lane and slot), read now beside the
  // first copies and looked at after the first tile, so that no step waits on them.
  // Not for cp.async rings of head dims up to 128: there the check is a predicate on copies already
  // predicated, and a second copy of the loop cost 2-10% at head dim 96 (against the 192 bucket's
  // 2% without it: cuda/NOTES.md "Decode").
  constexpr bool kFastPath = TMA || DP > 128;
  constexpr int kScan = kFastPath ? 8 : 0;
  int32_t scan_ids[kScan > 0 ? kScan : 1];
#pragma unroll
  for (int i = 0; i < kScan; ++i) scan_ids[i] = block_of(first + (lane + 32 * i) * kTileStride);
  int32_t next_blk = block_of(first + (kStages - 1) * kTileStride);
  // Where a step issues the copies of the tile kStages - 1 ahead: first, or after this tile's
  // scores (kStagedLateIssue, above).
  constexpr bool kIssueAfterScores = kStagedLateIssue && !TMA;
  // One key tile: issue the tile kStages - 1 ahead, wait for this one, then both products.
  auto step = [&](auto mode, int tile) {
    constexpr bool kCheck = decltype(mode)::kCheck, kWhole = decltype(mode)::kWhole;
    __syncwarp();  // every lane is done with the stage refilled now (read in iteration it - 1)
    const int ahead = tile + (kStages - 1) * kTileStride;
    auto issue_ahead = [&] {
      if (ahead < key_end) issue(mode, ahead, (it + kStages - 1) % kStages, next_blk);
      next_blk = block_of(ahead + kTileStride);
      if constexpr (!TMA) cp_async_commit();
    };
    if constexpr (!kIssueAfterScores) issue_ahead();
    if constexpr (TMA) {
      cuda_common::mbar_wait(bars + 8 * (it % kStages), (it / kStages) & 1);  // tile `it`'s boxes have landed
      if (tile + 16 > key_end) {
        // The boxes brought whole cache rows past the range's last key (past the sequence's
        // length they may hold anything, NaN included): zero those V rows, whose probabilities
        // are 0 (masked scores need no zeroing: they become -inf whatever K holds).
        uint4* vrows = ring + static_cast<size_t>(it % kStages) * 2 * Ring::kTileChunks + Ring::kTileChunks;
#pragma unroll
        for (int n = 0; n < 16 * kChunks / 32; ++n) {
          const int idx = lane + 32 * n, kk = idx / kChunks;
          if (tile + kk >= key_end) vrows[tma_tile_slot(kk, idx - kk * kChunks)] = make_uint4(0u, 0u, 0u, 0u);
        }
        tma_fence_generic_writes();
        __syncwarp();
      }
    } else {
      // This lane's copies of tile `it` have landed (the tiles after it are in flight; with the
      // issue after the scores, the one ahead is not issued yet).
      cp_async_wait<kIssueAfterScores ? kStages - 2 : kStages - 1>();
      __syncwarp();                  // ... and every lane's
    }
    const uint32_t kst = ring_addr + static_cast<uint32_t>((it % kStages) * 2 * Ring::kTileChunks * 16);
    const uint32_t vst = kst + static_cast<uint32_t>(Ring::kTileChunks * 16);

    float sc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int kb = 0; kb < kBlocks; ++kb) {
      if (kb < nblk) {
        uint32_t a[4];
        ldmatrix_x4(a, kst + static_cast<uint32_t>(slot_of(k_key, 2 * kb + k_half) * 16));
        mma_16816<Tag>(sc, a[0], a[1], a[2], a[3], qf[kb][0], qf[kb][1]);
      }
    }
    if constexpr (kIssueAfterScores) issue_ahead();
    // Checked: keys of a bad block id are left out, a whole tile's by ending the tile's keys at its
    // start, else each key's own (kLeftOutKey).
    int key_a = tile + g, key_b = tile + g + 8, tile_end = key_end;
    if constexpr (kCheck && kWhole) {
      if ((bad_stages >> (it % kStages)) & 1u) tile_end = tile;
    } else if constexpr (kCheck) {
      if (key_a < key_end && !decode_block_ok(table[key_a >> shift], p.num_blocks)) key_a = kLeftOutKey;
      if (key_b < key_end && !decode_block_ok(table[key_b >> shift], p.num_blocks)) key_b = kLeftOutKey;
    }
    float corr[2];
    tile_probabilities(sc, m, l, corr, key_a, key_b, tile_end, pos, low, softcap, s_scale, cap_log2, inv_cap);
#pragma unroll
    for (int mb = 0; mb < kBlocks; ++mb)
#pragma unroll
      for (int w = 0; w < 4; ++w) ot[mb][w] *= corr[w & 1];
    const uint32_t pb[2] = {movmatrix_trans(pack_pair<Tag>(sc[0], sc[1])), movmatrix_trans(pack_pair<Tag>(sc[2], sc[3]))};
#pragma unroll
    for (int mb = 0; mb < kBlocks; ++mb) {
      if (mb < nblk) {
        uint32_t a[4];
        ldmatrix_x4_trans(a, vst + static_cast<uint32_t>(slot_of(v_key, 2 * mb + v_half) * 16));
        mma_16816<Tag>(ot[mb], a[0], a[1], a[2], a[3], pb[0], pb[1]);
      }
    }
  };
  int tl = first;
  auto key_loop = [&](auto mode) {
    for (; tl < key_end; tl += kTileStride, ++it) step(mode, tl);
  };
  auto checked_loop = [&] {
    if (whole_tiles) key_loop(CheckedWhole{});
    else key_loop(CheckedSeveral{});
  };
  if constexpr (!kFastPath) {
    checked_loop();
  } else {
    if (tl < key_end) {
      // Whatever the ids: the first tile's was not looked at yet.
      if (whole_tiles) step(CheckedWhole{}, tl);
      else step(CheckedSeveral{}, tl);
      tl += kTileStride, ++it;
    }
    bool any_bad = !whole_tiles;  // tiles of several blocks check each key's own id
#pragma unroll
    for (int i = 0; i < kScan; ++i) any_bad |= !decode_block_ok(scan_ids[i], p.num_blocks);
    for (int later = first + (32 * kScan + lane) * kTileStride; later < key_end; later += 32 * kTileStride)
      any_bad |= !decode_block_ok(block_of(later), p.num_blocks);  // tiles past the first 32 x kScan
    if (__any_sync(0xffffffffu, any_bad)) checked_loop();
    else key_loop(UncheckedWhole{});
  }
  tiles_done = it;
  KH_DEC_PROBE_MARK(p, 2);
  KH_DEC_PROBE_WARP_MARK(p, warp);
  if constexpr (!TMA) cp_async_wait<0>();
  __syncthreads();  // the merge buffer below reuses the ring (every issued tile was waited for)
  if (warp == 0) KH_DEC_PROBE_WARP_MARK(p, 15);

  sum_rows_over_column(l);
  using Merge = MergeSmem<32, ROWS, WARPS * 32>;
  Merge& sm = *reinterpret_cast<Merge*>(smem);
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
  finish_split_tile<Tag, ROWS, WARPS * 32>(p, t, sm, warp, g, c, m, l);
  KH_DEC_PROBE_MARK(p, 3);
}

// With TMA, lane 0 of each warp initialises the warp's mbarriers, one a ring stage, after the
// ring (once a CTA: staged_tile continues their phases).
template <int DP, int ROWS, int WARPS>
__device__ __forceinline__ void staged_init_tma_bars(unsigned char* smem) {
  constexpr int kStages = StagedRing<DP, WARPS>::kStages;
  const uint32_t bars = staged_stage_bar<DP, ROWS, WARPS>(smem, threadIdx.x / 32, 0);
  if (threadIdx.x % 32 == 0)
    for (int st = 0; st < kStages; ++st) tma_bar_init(bars + 8 * st);
  __syncwarp();
}

// TMA: the ring's stages are filled by tensor copies (attention_decode_tma.cuh; sm90a, the 128
// bucket, block size >= 16), else by cp.async.
template <typename Tag, int DP, int ROWS, int WARPS, bool TMA>
__global__ void __launch_bounds__(WARPS * 32, staged_min_ctas(DP, WARPS))
    decode_staged_kernel(const DecodeParams p, const int row_tiles, const int num_splits,
                         const __grid_constant__ DecodeTma tma) {
  extern __shared__ __align__(1024) unsigned char dec_smem[];  // 128-byte swizzled TMA boxes
  KH_DEC_PROBE_MARK(p, 0);
  // With TMA and the whole sequence in this CTA (no split, no window: its keys start at 0), the
  // cache block of this warp's first tile is known before seq_lens is read: its load goes out
  // beside make_tile's, and the tile's copies as soon as the length shows the tile is needed,
  // about an L2 round trip sooner than staged_tile's own order (seq_lens, then the table).
  const int first_key = static_cast<int>(threadIdx.x) / 32 * 16;
  const bool early = TMA && num_splits == 1 && p.window_left < 0 &&
                     first_key < (p.max_blocks_per_seq << p.block_shift);
  int32_t first_block = 0;
  if (early)
    first_block = p.block_table[static_cast<int64_t>(blockIdx.z) * p.bt_batch_stride + (first_key >> p.block_shift)];
  const Tile t = make_tile(p, ROWS, row_tiles, num_splits);
  bool first_in_flight = false;
  if constexpr (TMA) {
    staged_init_tma_bars<DP, ROWS, WARPS>(dec_smem);
    first_in_flight = early && first_key < t.key_end;  // make_tile: t.b = blockIdx.z, t.tile_beg = 0
    if (first_in_flight && threadIdx.x % 32 == 0)
      staged_tma_issue<DP, ROWS, WARPS>(dec_smem, static_cast<int>(threadIdx.x) / 32, 0, tma, t.kv_head,
                                        first_key & (p.block_size - 1), first_block, p.num_blocks,
                                        kv_stream_policy(row_tiles == 1));
  }
  int tiles_done = 0;
  staged_tile<Tag, DP, ROWS, WARPS, TMA>(p, t, row_tiles == 1, tma, dec_smem, tiles_done, first_in_flight,
                                         !decode_block_ok(first_block, p.num_blocks));
}

}  // namespace decode
}  // namespace kh_attention
