// attention_decode_balance.hpp: how a length-balanced decode grid shares a batch's key tiles
// among its CTAs (host and device code; checked against brute force in
// tests/kernels/test_attention_decode_balance.cpp). Cutting every sequence into the same number
// of parts lets the longest one set a mixed batch's time (H200: 1.22x at batch 16, lengths
// 2k-32k, against equal lengths of the same keys); cuda/attention_decode_balanced.cuh runs this
// partition with units = sequences (heads = 1 below), each share taken by a group of heads_kv
// CTAs, one a kv head.
//
// In general a unit is one (sequence b, head h), u = b * heads + h, whose query rows fit one row
// tile. Its keys are 16-key tiles from its range's start rounded down to 16 (decode_unit_tiles),
// n_b of them, the same for every head of the sequence. Laid end to end in unit order, unit u
// covers tiles [P_u, P_u + n_b) of T = heads * sum(n_b), with P_u = heads * C_b + h * n_b and C_b
// the tiles of the sequences before b. Working CTA c of G takes tiles [S_c, S_{c+1}),
// S_c = floor(c T / G), so shares differ by at most one tile. A share boundary inside a unit
// cuts it; its parts, in key order, come from CTAs decode_cta_of_tile(P_u) + 0, 1, ... and go to
// its workspace slots 0, 1, ... for the combine. Units without keys are nobody's share: the
// kernel writes their rows (out 0, lse -inf) from CTA u mod grid, so that an empty batch spreads
// over the grid too.
#pragma once

#include <cstdint>

#include "attention_visibility.hpp"  // KH_ATTN_HD

namespace kh_attention {

// The tiles of a unit of a sequence of len keys (clamped to the table already) with q_len query
// tokens and a window of window_left keys (-1: none): its keys are [lo, len), lo the window's
// start for the oldest token, tiles counted from lo rounded down to 16 (as make_tile does).
KH_ATTN_HD int64_t decode_unit_tiles(int64_t len, int64_t q_len, int64_t window_left) {
  int64_t lo = 0;
  if (window_left >= 0) {
    lo = len - q_len - window_left;
    if (lo < 0) lo = 0;
  }
  const int64_t lo_aligned = lo & ~int64_t{15};
  return len > lo_aligned ? (len - lo_aligned + 15) / 16 : 0;
}

// How many of the grid's CTAs take a share (0 when no unit has a tile), given the total tiles,
// the largest and smallest tile count among units that have tiles, how many units have tiles,
// and the most parts a unit may be cut into (the workspace's slots a row: max_splits); -1 when
// max_parts < 2 (no workspace: the call is not for this grid).
//  - Equal units that the grid holds at once and that fill at least 95% of it stay whole, one a
//    CTA: cutting them only to fill the rest of the SMs would add a combine for nothing (b16 x
//    32k reads 4.53 TB/s on 128 SMs).
//  - Otherwise as many CTAs as the grid has, unless a long unit would then be cut into more
//    than max_parts parts: a share of at least need tiles keeps every unit within
//    floor((n_max - 1) / need) + 2 <= max_parts parts.
KH_ATTN_HD int64_t decode_balance_ctas(int64_t total, int64_t n_max, int64_t n_min, int64_t units, int64_t grid,
                                       int64_t max_parts) {
  if (max_parts < 2) return -1;
  if (total <= 0 || grid <= 0) return 0;
  if (n_max == n_min && units <= grid && 20 * units >= 19 * grid) return units;
  const int64_t need = (n_max - 1) / (max_parts - 1) + 1;
  const int64_t by_need = total / need;
  const int64_t ctas = by_need < grid ? by_need : grid;
  return ctas < 1 ? 1 : ctas;
}

// The first tile of working CTA c's share (c = ctas: total).
KH_ATTN_HD int64_t decode_share_start(int64_t c, int64_t total, int64_t ctas) { return c * total / ctas; }

// The working CTA whose share holds tile pos (0 <= pos < total): the largest c with
// decode_share_start(c) <= pos.
KH_ATTN_HD int64_t decode_cta_of_tile(int64_t pos, int64_t total, int64_t ctas) {
  return ((pos + 1) * ctas - 1) / total;
}

// The sequence whose units hold tile pos, by binary search over first_tile (batch + 1 entries:
// first_tile[b] = heads_kv * C_b, first_tile[batch] = total; 0 <= pos < total): the b with
// first_tile[b] <= pos < first_tile[b + 1]. Sequences without tiles are never returned. (The
// kernel keeps the table in shared memory as int32, the host test as int64.)
template <typename Index>
KH_ATTN_HD int64_t decode_seq_of_tile(const Index* first_tile, int64_t batch, int64_t pos) {
  int64_t lo = 0, hi = batch - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (first_tile[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

}  // namespace kh_attention
