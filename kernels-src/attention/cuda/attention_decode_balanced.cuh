// attention_decode_balanced.cuh: the wide staged decode CTA on a length-balanced grid. Every
// sequence used to be cut into the same number of parts (from the table's width: no host read
// of seq_lens), so in a batch of mixed lengths the longest sequence's CTAs set the time (H200,
// b16 with lengths 2k-32k: 1.22x the time of the same keys in equal lengths). Here a grid of one
// wide CTA an SM reads seq_lens itself, lays the sequences' 16-key tiles end to end and gives
// each working group of heads_kv CTAs an equal share (../src/attention_decode_balance.hpp with
// units = sequences, checked against brute force on the host); CTA h of a group takes kv head h
// of the share's keys. A share runs sequence by sequence through staged_tile. Whole sequences are
// written out directly; a sequence cut by share boundaries leaves its parts in workspace slots
// 0..k-1, and the group holding part 0 leaves a record (the sequence, k) for the combine kernel
// below, which merges only those: one CTA a record, at most one record a share. Equal sequences
// that fill the grid stay whole: uniform batches run as before.
//  - Why groups of heads: the heads_kv rows of a cache row sit side by side (NHD), so the group's
//    CTAs, moving through the same keys at the same pace, read each cache block's lines together,
//    as the plain grid's CTAs of one sequence do. Shares over (sequence, head) units instead
//    (tried first) put CTAs on different keys of a block at different times: 5.5% slower at
//    b64 x 8k and b128 x 4k, where equal units are cut (H200; cuda/NOTES.md "Decode").
// Included by attention_decode.cuh after attention_decode_staged.cuh.
#pragma once

#include <climits>

#include "attention_decode_balance.hpp"

namespace kh_attention {
namespace decode {

// The partition's tables live in shared memory after the ring (and its TMA mbarriers):
// first_tile[batch + 1] (the tiles of the sequences before b; the host keeps the total below
// 2^31) and the clamped lengths[batch], as int32. The batch is capped so that the CTA's
// shared memory stays within 195 KiB (of 200,704 bytes: H100-class parts carve out 196 KiB or
// 228 KiB, and 1 KiB a CTA is reserved), the plain wide CTA's carveout, leaving L1 its 60 KiB.
// A larger batch has the 3 slots a row the grid needs only if heads_kv <= 3 (batch x heads_kv <
// 1366); such calls take the plain grid.
constexpr int kBalancedMaxBatch = 350;

// A working CTA's walk over its share, kept in shared memory (before the tables) rather than in
// registers across staged_tile. With the state in registers the kernel took 159-164 registers
// (the plain one 143) and equal batches ran ~3% slower than on the plain grid; with this and the
// loop-free one-sequence share below, 128 registers and 1-3% (cuda/NOTES.md "Decode").
struct BalancedWalk {
  long long total, groups, s0, s1;  // the partition and this share's tiles [s0, s1)
  int cut_seq, cut_parts;           // the record: the cut sequence whose part 0 is here
};

template <int DP, int ROWS, int WARPS, bool TMA>
__host__ __device__ constexpr size_t balanced_table_offset() {
  return (decode_staged_smem_bytes<DP, ROWS, WARPS, TMA>() + 15) / 16 * 16 + sizeof(BalancedWalk);
}

template <int DP, int ROWS, int WARPS, bool TMA>
__host__ __device__ constexpr size_t decode_balanced_smem_bytes(int batch) {
  return balanced_table_offset<DP, ROWS, WARPS, TMA>() + sizeof(int32_t) * (2 * static_cast<size_t>(batch) + 1);
}
static_assert(decode_balanced_smem_bytes<128, 8, kWideWarps, true>(kBalancedMaxBatch) <= 195 * 1024,
              "the balanced CTA keeps the plain wide CTA's shared-memory carveout");

// Per-warp partial results of the prologue's scan, in warp 0's second ring stage (the first
// stages take the guessed first tiles' copies, FirstTileGuess, while the scan runs).
template <int WARPS>
struct BalanceScratch {
  int tiles[WARPS], n_max[WARPS], n_min[WARPS], seqs[WARPS];
};
template <int DP, int WARPS>
__host__ __device__ constexpr size_t balance_scratch_offset() {
  constexpr size_t kStageBytes = 2 * StagedRing<DP, WARPS>::kTileChunks * 16;  // a stage's K and V tiles
  static_assert(StagedRing<DP, WARPS>::kStages >= 2 && sizeof(BalanceScratch<WARPS>) <= kStageBytes,
                "the scan's scratch fits warp 0's second stage");
  return kStageBytes;
}

// Each warp's first tile, guessed before the partition is known so that its copies are in flight
// while the CTA finds its share (the partition, the share's sequence and its bounds took ~2.5 us
// before the first copy, on a call of ~480 us: cuda/NOTES.md "Decode"). The guess is the
// partition of equal lengths, the batch the grid must not slow down: share gi starts at sequence
// gi x batch / groups, at its first key, wherever groups divides gi x batch (no window: the keys
// start at 0). The tile's cache block is read at the kernel's entry, beside seq_lens; its copies
// go into the warp's stage 0 after the scan. Once the share is known, a right guess is the first
// tile staged_tile takes (first_in_flight); a wrong one's copies are waited for and the ring
// moves on a stage.
struct FirstTileGuess {
  int b = -1;         // the sequence guessed, -1 for none
  int32_t block = 0;  // the cache block of this warp's first tile of it
};

__device__ __forceinline__ FirstTileGuess guess_first_tile(const DecodeParams& p, int groups) {
  FirstTileGuess guess;
  const int gi = static_cast<int>(blockIdx.x) / p.heads_kv, key = static_cast<int>(threadIdx.x) / 32 * 16;
  const int64_t at = static_cast<int64_t>(gi) * p.batch;
  if (gi >= groups || p.window_left >= 0 || at % groups != 0 || key >= (p.max_blocks_per_seq << p.block_shift))
    return guess;
  guess.b = static_cast<int>(at / groups);
  guess.block = p.block_table[static_cast<int64_t>(guess.b) * p.bt_batch_stride + (key >> p.block_shift)];
  return guess;
}

struct BalancedGrid {
  int64_t total = 0;   // tiles of all sequences (a head's)
  int64_t groups = 0;  // working groups of heads_kv CTAs (decode_balance_ctas)
};

// Every CTA scans seq_lens the same way, so all agree on the partition over `groups` groups.
// Thread t takes a run of consecutive sequences, their tiles are prefix-summed over the CTA, and
// the run writes its entries of first_tile and lengths.
template <int WARPS>
__device__ BalancedGrid balanced_prologue(const DecodeParams& p, int32_t* first_tile, int32_t* lengths,
                                          BalanceScratch<WARPS>& scratch, int groups, int max_parts) {
  constexpr unsigned kAll = 0xffffffffu;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int per = (p.batch + WARPS * 32 - 1) / (WARPS * 32);
  const int b0 = min(tid * per, p.batch), b1 = min(b0 + per, p.batch);
  int tiles = 0, n_max = 0, n_min = INT_MAX, seqs = 0;
  for (int b = b0; b < b1; ++b) {
    const int len = clamped_len(p, b);
    const int n = static_cast<int>(decode_unit_tiles(len, p.q_len, p.window_left));
    lengths[b] = len;
    first_tile[b + 1] = n;
    tiles += n;
    if (n > 0) {
      n_max = max(n_max, n);
      n_min = min(n_min, n);
      ++seqs;
    }
  }
  int incl = tiles;  // inclusive prefix of the tiles over the warp's lanes
  for (int off = 1; off < 32; off *= 2) {
    const int v = __shfl_up_sync(kAll, incl, off);
    if (lane >= off) incl += v;
  }
  int wmax = n_max, wmin = n_min, wseqs = seqs;
  for (int off = 16; off >= 1; off /= 2) {
    wmax = max(wmax, __shfl_xor_sync(kAll, wmax, off));
    wmin = min(wmin, __shfl_xor_sync(kAll, wmin, off));
    wseqs += __shfl_xor_sync(kAll, wseqs, off);
  }
  if (lane == 31) scratch.tiles[warp] = incl;
  if (lane == 0) {
    scratch.n_max[warp] = wmax;
    scratch.n_min[warp] = wmin;
    scratch.seqs[warp] = wseqs;
  }
  __syncthreads();
  int before = 0, all_tiles = 0, all_max = 0, all_min = INT_MAX, all_seqs = 0;
  for (int w = 0; w < WARPS; ++w) {
    if (w < warp) before += scratch.tiles[w];
    all_tiles += scratch.tiles[w];
    all_max = max(all_max, scratch.n_max[w]);
    all_min = min(all_min, scratch.n_min[w]);
    all_seqs += scratch.seqs[w];
  }
  int run = before + incl - tiles;  // this run's first sequence's prefix
  for (int b = b0; b < b1; ++b) {
    run += first_tile[b + 1];
    first_tile[b + 1] = run;
  }
  if (tid == 0) first_tile[0] = 0;
  tma_fence_generic_writes();  // the scratch's bytes are the ring's, which TMA may write next
  __syncthreads();             // the tables are complete; the scratch may be overwritten
  BalancedGrid grid;
  grid.total = all_tiles;
  grid.groups = decode_balance_ctas(grid.total, all_max, all_seqs > 0 ? all_min : 0, all_seqs, groups, max_parts);
  return grid;
}

// Units without a key are nobody's share: CTA u mod grid writes their rows (out 0, lse -inf).
template <int WARPS>
__device__ void balanced_empty_units(const DecodeParams& p, const int32_t* first_tile) {
  const int group = p.heads_q / p.heads_kv, rows = p.q_len * group, chunks = p.head_dim / 8;
  for (int u = blockIdx.x; u < p.batch * p.heads_kv; u += gridDim.x) {
    const int b = u / p.heads_kv, h = u - b * p.heads_kv;
    if (first_tile[b + 1] != first_tile[b]) continue;
    for (int idx = threadIdx.x; idx < rows * chunks; idx += WARPS * 32) {
      const int r = idx / chunks, ce = (idx - r * chunks) * 8, i = r / group, hq = h * group + (r - i * group);
      uint16_t* orow = static_cast<uint16_t*>(p.out) + static_cast<int64_t>(b) * p.o_batch_stride +
                       static_cast<int64_t>(i) * p.o_row_stride + static_cast<int64_t>(hq) * p.o_head_stride;
      *reinterpret_cast<uint4*>(orow + ce) = make_uint4(0u, 0u, 0u, 0u);
      if (ce == 0 && p.lse != nullptr) p.lse[(static_cast<int64_t>(b) * p.heads_q + hq) * p.q_len + i] = -INFINITY;
    }
  }
}

// The record of share c, two int32 (the sequence cut with its part 0 in share c, its part count;
// -1 and 0 when none), in the last workspace slot's O area of the rows, head_dim / 2 records a
// row (the host keeps rows x head_dim / 2 >= the groups). Parts take slots 0..slots - 2 only.
__device__ __forceinline__ int32_t* balanced_record(const DecodeParams& p, int slots, int c) {
  const int per_row = p.head_dim / 2;
  const int64_t row = c / per_row, at = c - row * per_row;
  return reinterpret_cast<int32_t*>(p.workspace + (row * slots + slots - 1) * p.head_dim) + 2 * at;
}

// slots: the workspace's slots a row (max_splits >= 3); a sequence is cut into at most slots - 1
// parts. Launched with one CTA an SM (gridDim.x of them): gridDim.x / heads_kv groups, the CTAs
// past the last group idle; CTA 0 of each group writes its record.
template <typename Tag, int DP, int ROWS, int WARPS, bool TMA>
__global__ void __launch_bounds__(WARPS * 32, 1)
    decode_balanced_kernel(const DecodeParams p, const int slots, const __grid_constant__ DecodeTma tma) {
  extern __shared__ __align__(1024) unsigned char dec_smem[];  // 128-byte swizzled TMA boxes
  KH_DEC_PROBE_MARK(p, 0);
  int32_t* first_tile = reinterpret_cast<int32_t*>(dec_smem + balanced_table_offset<DP, ROWS, WARPS, TMA>());
  int32_t* lengths = first_tile + p.batch + 1;
  const int groups = static_cast<int>(gridDim.x) / p.heads_kv;
  const int warp = threadIdx.x / 32;
  FirstTileGuess guess;
  if constexpr (TMA) {
    staged_init_tma_bars<DP, ROWS, WARPS>(dec_smem);
    guess = guess_first_tile(p, groups);
  }
  int tiles_done = 0;
  // A wrong guess's copies (or any guess's, in a CTA that takes no share) land before the ring
  // moves on or the CTA exits.
  auto drop_guess = [&] {
    if (guess.b >= 0) {
      cuda_common::mbar_wait(staged_stage_bar<DP, ROWS, WARPS>(dec_smem, warp, 0), 0);
      tiles_done = 1;
      guess.b = -1;
    }
  };
  {
    const BalancedGrid grid = balanced_prologue<WARPS>(
        p, first_tile, lengths,
        *reinterpret_cast<BalanceScratch<WARPS>*>(dec_smem + balance_scratch_offset<DP, WARPS>()), groups, slots - 1);
    if constexpr (TMA) {
      if (guess.b >= 0 && threadIdx.x % 32 == 0)
        staged_tma_issue<DP, ROWS, WARPS>(dec_smem, warp, 0, tma, static_cast<int>(blockIdx.x) % p.heads_kv,
                                          (warp * 16) & (p.block_size - 1), guess.block, p.num_blocks,
                                          kv_stream_policy(true));
    }
    KH_DEC_PROBE_MARK(p, 4);
    balanced_empty_units<WARPS>(p, first_tile);
    KH_DEC_PROBE_MARK(p, 5);
    const int gi = static_cast<int>(blockIdx.x) / p.heads_kv, h = static_cast<int>(blockIdx.x) - gi * p.heads_kv;
    if (gi >= groups) return;  // no guess either (guess_first_tile)
    if (gi >= grid.groups) {
      int32_t* record = balanced_record(p, slots, gi);
      if (h == 0 && threadIdx.x == 0) record[0] = -1, record[1] = 0;
      drop_guess();
      return;
    }
    if (threadIdx.x == 0) {
      BalancedWalk* w = reinterpret_cast<BalancedWalk*>(first_tile) - 1;
      w->total = grid.total;
      w->groups = grid.groups;
      w->s0 = decode_share_start(gi, grid.total, grid.groups);
      w->s1 = decode_share_start(gi + 1, grid.total, grid.groups);
      w->cut_seq = -1;
      w->cut_parts = 0;
    }
  }
  __syncthreads();  // the walk's state is in shared memory
  KH_DEC_PROBE_MARK(p, 6);

  // Read afresh for each sequence (volatile): see BalancedWalk.
  volatile BalancedWalk* walk = reinterpret_cast<BalancedWalk*>(first_tile) - 1;
  for (int64_t pos = walk->s0; pos < walk->s1;) {
    const int64_t s0 = walk->s0, s1 = walk->s1, total = walk->total, n_groups = walk->groups;
    const int gi = static_cast<int>(blockIdx.x) / p.heads_kv, h = static_cast<int>(blockIdx.x) - gi * p.heads_kv;
    // The sequence holding tile pos, and the part of it this share takes: its tiles [lo_t, hi_t).
    const int b = static_cast<int>(decode_seq_of_tile(first_tile, p.batch, pos));
    const int64_t start = first_tile[b], end = first_tile[b + 1];
    const int64_t lo_t = (s0 > start ? s0 : start) - start, hi_t = (s1 < end ? s1 : end) - start;
    const int64_t g0 = decode_cta_of_tile(start, total, n_groups);
    Tile t;
    t.b = b;
    t.kv_head = h;
    t.r0 = 0;
    t.group = p.heads_q / p.heads_kv;
    t.nrows = p.q_len * t.group;
    t.len = lengths[b];
    // As make_tile for a row tile of all q_len tokens: keys up to the length, down to the
    // window's start for the oldest token; tiles counted from that start rounded down to 16.
    int lo = 0;
    if (p.window_left >= 0) lo = max(0, t.len - p.q_len - p.window_left);
    const int lo_al = lo & ~15;
    t.tile_beg = lo_al + 16 * static_cast<int>(lo_t);
    t.key_beg = max(t.tile_beg, lo);
    t.key_end = min(lo_al + 16 * static_cast<int>(hi_t), t.len);
    t.split = static_cast<int>(gi - g0);
    const int parts = static_cast<int>(decode_cta_of_tile(end - 1, total, n_groups) - g0 + 1);
    t.slots = slots;
    t.whole = parts == 1;
    if (t.split == 0 && parts > 1 && threadIdx.x == 0) walk->cut_seq = b, walk->cut_parts = parts;
    // The share's first tile of this warp, when it is the guess's: its copies are in stage 0.
    const bool guessed = guess.b == b && t.tile_beg == 0 && 16 * warp < t.key_end;
    if (!guessed) drop_guess();
    guess.b = -1;
    KH_DEC_PROBE_MARK(p, 7);
    if (pos == s0 && end >= s1) {
      // The share is this one sequence (part or whole): the common case of a uniform batch, run
      // outside the loop (see BalancedWalk).
      staged_tile<Tag, DP, ROWS, WARPS, TMA>(p, t, true, tma, dec_smem, tiles_done, guessed,
                                             !decode_block_ok(guess.block, p.num_blocks));
      break;
    }
    if (pos != s0) {
      // The last sequence's merge read and wrote the ring's bytes (generic proxy); TMA writes them next.
      tma_fence_generic_writes();
      __syncthreads();
    }
    staged_tile<Tag, DP, ROWS, WARPS, TMA>(p, t, true, tma, dec_smem, tiles_done, guessed,
                                           !decode_block_ok(guess.block, p.num_blocks));
    pos = end;
  }
  drop_guess();  // none left unless the share was empty
  if (threadIdx.x == 0 && static_cast<int>(blockIdx.x) % p.heads_kv == 0) {
    int32_t* record = balanced_record(p, slots, static_cast<int>(blockIdx.x) / p.heads_kv);
    record[0] = walk->cut_seq, record[1] = walk->cut_parts;
  }
}

// The balanced grid's combine: CTAs (c, y) merge the parts of the sequence in share c's record
// (none: they return at once), a warp a row of the sequence's q_len x heads_q rows, rows y x
// kCombineWarps + warp and on by gridDim.y x kCombineWarps. (One CTA a record, walking the rows
// 4 at a time, cost b1 x 8k 20 us: a row's loads wait on the last's; H200, cuda/NOTES.md
// "Decode".) A lane takes 4 dims of the row, summing its parts' normalised partials weighted by
// 2^(lse - max) / sum, as decode_combine_kernel does.
template <typename Tag>
__global__ void __launch_bounds__(kCombineThreads) decode_balanced_combine_kernel(const DecodeParams p, const int slots) {
  // A programmatic dependent of the split kernel (sm90): nothing it wrote is read before this.
  KH_DEC_WAIT_PRIOR_GRID();
  const int32_t* record = balanced_record(p, slots, blockIdx.x);
  const int b = record[0], parts = record[1];
  if (b < 0 || b >= p.batch || parts < 2 || parts > slots - 1) return;
  const int d = p.head_dim;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t total_rows = static_cast<int64_t>(p.batch) * p.q_len * p.heads_q;
  for (int r = static_cast<int>(blockIdx.y) * kCombineWarps + warp; r < p.q_len * p.heads_q;
       r += static_cast<int>(gridDim.y) * kCombineWarps) {
    const int i = r / p.heads_q, hq = r - i * p.heads_q;
    const int64_t row = (static_cast<int64_t>(b) * p.q_len + i) * p.heads_q + hq;
    const float* part = p.workspace + row * slots * d;
    const float* part_lse = p.workspace + total_rows * slots * d + row * slots;
    const float la = lane < parts ? part_lse[lane] : -INFINITY;
    const float lb = lane + 32 < parts ? part_lse[lane + 32] : -INFINITY;
    float mx = fmaxf(la, lb);
    for (int off = 16; off >= 1; off /= 2) mx = fmaxf(mx, kh_dec_shfl_xor(mx, off));
    float sum = mx == -INFINITY ? 0.f : kh_dec_exp2(la - mx) + kh_dec_exp2(lb - mx);
    for (int off = 16; off >= 1; off /= 2) sum += kh_dec_shfl_xor(sum, off);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    uint16_t* orow = static_cast<uint16_t*>(p.out) + static_cast<int64_t>(b) * p.o_batch_stride +
                     static_cast<int64_t>(i) * p.o_row_stride + static_cast<int64_t>(hq) * p.o_head_stride;
    // Lane s's weights of parts s and s + 32, handed to every lane by shuffles.
    const float wa = la == -INFINITY ? 0.f : kh_dec_exp2(la - mx) * inv;
    const float wb = lb == -INFINITY ? 0.f : kh_dec_exp2(lb - mx) * inv;
    // Every lane takes every step (the shuffles need the whole warp); lanes past the head dim
    // load and store nothing.
    for (int e0 = 0; e0 < d; e0 += 4 * 32) {
      const int e = e0 + 4 * lane;
      const bool in = e < d;
      float o[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
      for (int s = 0; s < parts; ++s) {
        const float wk = __shfl_sync(0xffffffffu, s < 32 ? wa : wb, s & 31);
        const float4 v = in ? *reinterpret_cast<const float4*>(part + static_cast<int64_t>(s) * d + e)
                            : make_float4(0.f, 0.f, 0.f, 0.f);
        o[0] = fmaf(wk, v.x, o[0]);
        o[1] = fmaf(wk, v.y, o[1]);
        o[2] = fmaf(wk, v.z, o[2]);
        o[3] = fmaf(wk, v.w, o[3]);
      }
      if (in)
        *reinterpret_cast<uint2*>(orow + e) = make_uint2(to_bits(o[0], Tag{}) | (to_bits(o[1], Tag{}) << 16),
                                                         to_bits(o[2], Tag{}) | (to_bits(o[3], Tag{}) << 16));
    }
    if (lane == 0 && p.lse != nullptr)
      p.lse[(static_cast<int64_t>(b) * p.heads_q + hq) * p.q_len + i] = sum > 0.f ? (mx + log2f(sum)) * kLn2 : -INFINITY;
  }
}

}  // namespace decode
}  // namespace kh_attention
