// attention_causal_schedule.hpp: the static tile schedule of attention_fwd's persistent grid for
// causal calls without a window (host and device code; checked in
// tests/kernels/test_attention_tiles.cpp).
//
// A causal tile's cost is its key blocks, which grow linearly with its query block m, so tiles m
// and M - 1 - m of one (batch, head) together cost about the same for every m: a pair. The
// schedule has two phases:
//  - pairs: R rounds in which CTA b takes pair r * grid + b (its long tile, then its short one).
//    Pairs are numbered head-major (pair j of head h is h * M / 2 + j), so the CTAs running side
//    by side work on a few heads and read their K and V from L2. Ordering all tiles by cost
//    instead (longest first across every head) puts every head in flight at once, and the K/V
//    of them all do not fit in L2: on the H200 at b4 s4k h16 d192 that read 2.1 GB from DRAM
//    where full attention over the same data read 0.3 GB (cuda/NOTES.md).
//  - tail: the tiles of the remaining pairs (between one and two rounds' worth), and the middle
//    tile of each head when M is odd, by cost descending (query block descending, then pair
//    order), dealt in rounds whose direction alternates (CTA b takes position b of even rounds
//    and grid - 1 - b of odd ones): the longest-processing-time order that balances the end of
//    the grid, as equal pairs cannot when the pairs do not divide into whole rounds.
// R = max(0, pairs / grid - 1), so the tail is never less than a round of pairs unless every
// tile is in it (fewer pairs than two rounds: the plain longest-first order of every tile).
//
// A CTA's k-th tile is a position (causal_pair_position), and a position is a tile
// (causal_pair_tile): positions [0, 2 R grid) are the pairs' tiles (2 p for pair p's long one,
// 2 p + 1 for its short one), then the tail's in order. Positions past the last: no tile.
#pragma once

#include <cstdint>

#include "attention_visibility.hpp"

namespace kh_attention {

struct CausalPairPlan {
  int32_t m_blocks = 0;     // query blocks of a (batch, head): M
  int32_t heads = 0;        // batch x heads_q
  int32_t grid = 1;         // CTAs of the persistent grid
  int32_t pair_rounds = 0;  // R
  int32_t tail_tiles = 0;   // tiles of the tail phase
  KH_ATTN_HD int32_t pairs_per_head() const { return m_blocks / 2; }
  KH_ATTN_HD int32_t pair_positions() const { return 2 * pair_rounds * grid; }
  KH_ATTN_HD int32_t positions() const { return pair_positions() + tail_tiles; }  // = m_blocks x heads
};

// The launch bounds m_blocks x heads to int32 (every tile is a position).
KH_ATTN_HD CausalPairPlan causal_pair_plan(int32_t m_blocks, int32_t heads, int32_t grid) {
  CausalPairPlan p;
  p.m_blocks = m_blocks;
  p.heads = heads;
  p.grid = grid > 0 ? grid : 1;
  const int32_t pairs = heads * p.pairs_per_head();
  const int32_t rounds = pairs / p.grid - 1;
  p.pair_rounds = rounds > 0 ? rounds : 0;
  p.tail_tiles = m_blocks * heads - p.pair_positions();
  return p;
}

// The position of CTA b's k-th tile; positions() when it has no k-th tile.
KH_ATTN_HD int32_t causal_pair_position(const CausalPairPlan& p, int32_t k, int32_t b) {
  if (k < 2 * p.pair_rounds) return 2 * ((k / 2) * p.grid + b) + (k & 1);
  const int32_t round = k - 2 * p.pair_rounds;
  const int32_t q = round * p.grid + ((round & 1) ? p.grid - 1 - b : b);
  return q < p.tail_tiles ? p.pair_positions() + q : p.positions();
}

struct CausalTile {
  int32_t m_block = 0, head = 0;  // head: of the schedule's heads (batch x heads_q)
};

// The tile at position t < positions(), in O(1). The tail's pairs are those from
// pair_rounds x grid on: pairs j >= j0 of head h0 and every pair of the heads after it. So,
// query block m descending, a block has heads - h0 - 1 tail tiles while its pair is below j0
// (the j0 blocks at either end), heads - h0 from there to the middle, and the middle block of an
// odd m_blocks has every head's.
KH_ATTN_HD CausalTile causal_pair_tile(const CausalPairPlan& p, int32_t t) {
  const int32_t per_head = p.pairs_per_head();
  CausalTile tile;
  if (t < p.pair_positions()) {
    const int32_t pair = t / 2, j = pair % per_head;
    tile.head = pair / per_head;
    tile.m_block = (t & 1) ? j : p.m_blocks - 1 - j;
    return tile;
  }
  int32_t q = t - p.pair_positions();
  const int32_t tail_pair0 = p.pair_rounds * p.grid;
  const int32_t h0 = per_head > 0 ? tail_pair0 / per_head : 0, j0 = per_head > 0 ? tail_pair0 % per_head : 0;
  const int32_t outer = p.heads - h0 - 1, inner = p.heads - h0;  // tail tiles a block
  const int32_t M = p.m_blocks, mid = (M - 1) / 2;
  // A run of blocks from `top` down, each with `count` tiles, its first at head `head0`: takes
  // position q if it is in the run, else skips the run.
  auto run = [&](int32_t top, int32_t blocks, int32_t count, int32_t head0) {
    if (count <= 0) return false;
    if (q >= blocks * count) {
      q -= blocks * count;
      return false;
    }
    tile.m_block = top - q / count;
    tile.head = head0 + q % count;
    return true;
  };
  const bool odd = (M & 1) != 0;
  if (run(M - 1, j0, outer, h0 + 1)) return tile;                                   // pairs below j0, long ends
  if (run(M - 1 - j0, M / 2 - j0, inner, h0)) return tile;                           // pairs from j0, long ends
  if (odd && run(mid, 1, p.heads, 0)) return tile;                                    // the middle block
  if (run(M / 2 - 1, M / 2 - j0, inner, h0)) return tile;                              // pairs from j0, short ends
  run(j0 - 1, j0, outer, h0 + 1);                                                      // pairs below j0, short ends
  return tile;
}

}  // namespace kh_attention
