// attention_varlen_schedule.hpp: the tile schedule of a persistent attention_varlen_fwd grid,
// computed on the device from cu_seqlens (host and device code; checked against brute force in
// tests/kernels/test_attention_tiles.cpp).
//
// A persistent CTA walks a static list of tiles (query block, head, sequence). The list holds
// only tiles with rows (no tile of one sequence past its end), and puts the most expensive
// first, so that the cheap ones fill the gaps at the end of the grid (longest processing time
// first). For full (non-causal) attention a tile's cost is its sequence's key blocks, the same
// for every tile of the sequence, so the order is by sequence: key blocks descending (ties: the
// lower index first), then head, then query block (fastest, from the last one down, as
// attention_fwd's persistent grid orders them: CTAs side by side read one head's K and V
// from L2).
//
// Each CTA builds the list itself, without host work or memory beyond its shared memory:
//   1. every thread takes sequences b = tid, tid + threads, ...: its key (varlen_seq_key) and
//      its tile count (varlen_seq_tiles), into shared memory;
//   2. every thread takes the same sequences again: varlen_seq_rank gives where the sequence
//      goes (rank) and its first tile (the tiles of the sequences ranked before it); the
//      thread writes seq_of_rank[rank] = b and first_tile[rank], and the last-ranked one
//      first_tile[n] = the number of tiles;
//   3. varlen_tile_at(p) finds tile p of the list by binary search over first_tile.
// Step 2 is O(n) a sequence (O(n^2 / threads) a CTA), so the kernel takes this path up to a
// bounded number of sequences (Sm90TileConfig::kSchedSeqs) and keeps one CTA per tile above it.
#pragma once

#include <cstdint>

#include "attention_visibility.hpp"

namespace kh_attention {

// The sort key of a sequence: the key blocks each of its tiles visits (full attention, no
// window: all of them); -1 for a sequence without query rows (it has no tiles: last).
KH_ATTN_HD int32_t varlen_seq_key(const SeqBounds& s, int32_t block_n) {
  return s.len_q > 0 ? static_cast<int32_t>((s.len_k + block_n - 1) / block_n) : -1;
}

// The tiles of a sequence: heads x query blocks. Fits int32 because the launch refuses calls
// whose heads x ceil(max_seqlen_q / block_m) x batch does not.
KH_ATTN_HD int32_t varlen_seq_tiles(const SeqBounds& s, int32_t block_m, int32_t heads) {
  return heads * static_cast<int32_t>((s.len_q + block_m - 1) / block_m);
}

// Where sequence i goes in the list of n sequences (key descending, ties by index) and the
// list position of its first tile. keys[j], tiles[j]: varlen_seq_key / varlen_seq_tiles of j.
struct VarlenRank {
  int32_t rank = 0, first_tile = 0;
};

KH_ATTN_HD VarlenRank varlen_seq_rank(const int32_t* keys, const int32_t* tiles, int32_t n, int32_t i) {
  VarlenRank r;
  const int32_t key = keys[i];
  for (int32_t j = 0; j < n; ++j) {
    const int32_t kj = keys[j];
    if (kj > key || (kj == key && j < i)) {
      ++r.rank;
      r.first_tile += tiles[j];
    }
  }
  return r;
}

// Tile p (0 <= p < first_tile[n]) of the list: first_tile[0..n] and seq_of_rank[0..n) as
// step 2 leaves them. m_block counts query blocks from row 0.
struct VarlenTile {
  int32_t seq = 0, head = 0, m_block = 0;
};

// The last rank whose first tile is <= p: it has tiles (ranks without any come last, and their
// first tile is the total, > p).
KH_ATTN_HD int32_t varlen_rank_at(const int32_t* first_tile, int32_t n, int32_t p) {
  int32_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const int32_t mid = (lo + hi + 1) >> 1;
    if (first_tile[mid] <= p) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

KH_ATTN_HD VarlenTile varlen_tile_at(const int32_t* first_tile, const int32_t* seq_of_rank, int32_t n, int32_t heads,
                                     int32_t p) {
  const int32_t lo = varlen_rank_at(first_tile, n, p);
  const int32_t m_blocks = (first_tile[lo + 1] - first_tile[lo]) / heads;
  const int32_t off = p - first_tile[lo];
  VarlenTile t;
  t.seq = seq_of_rank[lo];
  t.head = off / m_blocks;
  t.m_block = m_blocks - 1 - (off - t.head * m_blocks);
  return t;
}

// Causal lists. A causal tile's cost falls with its distance from its sequence's end, so the
// list is of (sequence, tile) items sorted by cost, each item the tiles of all heads (head
// fastest). Tile j of a sequence counts from its end (j = 0 ends at the last query row, as the
// one-CTA-per-tile causal grid aligns them: the partial tile is the sequence's first rows); its
// rows see keys below len_k - j block_m (bottom-right), so its cost is
//   varlen_causal_key = ceil((len_k - j block_m) / block_n) key blocks (0 when none),
// non-increasing in j. Order: key descending, ties by sequence index, then by j. Item (b, j)'s
// place in it is computable from the sequences' (len_k, tiles) alone, O(n) an item:
//   rank = j + sum over b' < b of count_ge(b', key) + sum over b' > b of count_gt(b', key)
// (count_gt(b', x): tiles of b' whose key is > x; the tiles of b before j are the j whose key is
// >= b's key). Every CTA computes the same list; no sort, no atomics.
KH_ATTN_HD int32_t varlen_causal_key(int32_t len_k, int32_t j, int32_t block_m, int32_t block_n) {
  const int64_t keys = static_cast<int64_t>(len_k) - static_cast<int64_t>(j) * block_m;
  return keys > 0 ? static_cast<int32_t>((keys + block_n - 1) / block_n) : 0;
}

// Tiles j in [0, tiles) of a sequence with len_k keys whose key is > x (x >= -1): those with
// j block_m < len_k - x block_n.
KH_ATTN_HD int32_t varlen_causal_count_gt(int32_t len_k, int32_t tiles, int32_t x, int32_t block_m, int32_t block_n) {
  if (x < 0) return tiles;
  const int64_t room = static_cast<int64_t>(len_k) - static_cast<int64_t>(x) * block_n;
  if (room <= 0) return 0;
  const int64_t c = (room + block_m - 1) / block_m;
  return c < tiles ? static_cast<int32_t>(c) : tiles;
}

KH_ATTN_HD int32_t varlen_causal_rank(const int32_t* len_k, const int32_t* tiles, int32_t n, int32_t b, int32_t j,
                                      int32_t block_m, int32_t block_n) {
  const int32_t key = varlen_causal_key(len_k[b], j, block_m, block_n);
  int32_t rank = j;
  for (int32_t o = 0; o < n; ++o) {
    if (o == b) continue;
    rank += varlen_causal_count_gt(len_k[o], tiles[o], o < b ? key - 1 : key, block_m, block_n);
  }
  return rank;
}

// An item of a causal list: (sequence, tile from its end), packed; the launch keeps lists to
// fewer than 2^16 items and sequences.
KH_ATTN_HD int32_t varlen_causal_item(int32_t b, int32_t j) { return (b << 16) | j; }
KH_ATTN_HD VarlenTile varlen_causal_tile_at(const int32_t* items, int32_t heads, int32_t p) {
  const int32_t it = items[p / heads];
  VarlenTile t;
  t.seq = it >> 16;
  t.head = p - (p / heads) * heads;
  t.m_block = it & 0xffff;  // here: the tile's place from the sequence's end
  return t;
}

// Causal pair lists (the sm90a two-warpgroup buckets, d >= 128, for calls with at least six
// rounds of pairs: see the launch). As attention_fwd's pair
// schedule (attention_causal_schedule.hpp) does for equal lengths, a CTA takes tiles j and
// T - 1 - j of one (sequence, head) in turn (j counts from the sequence's end as above, T: the
// sequence's tiles): the two see about as many keys as any other pair of the sequence, so the
// list can run head-major within a sequence (the CTAs side by side read a few heads' K and V from
// L2) and still be ordered by cost. It is the full-attention list of the sequences
// (varlen_seq_rank) with each sequence's key its first pair's cost and its entries heads x
// ceil(T / 2) pair items; a sequence with odd T has its middle tile alone as item ceil(T / 2) - 1
// of each head (dealt first of the head's items).
//
// Pairs are a coarse unit to end a grid with, so the lowest-ranked sequences form a tail of
// single tiles: the suffix of the rank order whose sequences after each one hold fewer than
// kVarlenPairTailRounds x grid tiles. A tail sequence's entries are its heads x T tiles,
// tile-major (j slowest, from the sequence's end; head fastest), so that the tail too runs from
// its most expensive tiles down. On the H200 it beat a head-major tail (each head's tiles from
// j = 0 down, as its pairs would have run) by 1-2% on the bench's 2k mix at d128, d192 and d256,
// and no tail by 1%; the longer mixes were within the spread (cuda/NOTES.md).
//
// The entries ("slots") are dealt in rounds of one a CTA: round 0 gives slot b to CTA b; in each
// later round r, the slots [r grid, r grid + m) are sorted by cost (descending, ties: the lower
// slot first) and the CTAs by the work dealt to them so far (ascending, ties: the lower CTA first),
// and the slot of cost rank q goes to the CTA of work rank q (longest processing time first, a
// round at a time; the CTAs side by side still take neighbouring slots). A model of the dealing
// over random mixes put its busiest CTA within 1.5% of the causal tile list's at the 90th
// percentile at every size, where alternating rounds ("snake") over pair items ran 3-17% behind
// (cuda/NOTES.md). Every CTA computes the whole dealing (the work of all of them) from the list
// alone: the same on every CTA, no atomics, no state across calls.
constexpr int32_t kVarlenPairTailRounds = 4;
// The tail's layout, the launch's choice: tile-major as above (shipped), head-major, or no tail
// (every sequence's entries pair items); the other two measured the same or slower.
enum class VarlenPairTail : int32_t { kTileMajor = 0, kHeadMajor = 1, kNone = 2 };
// A tile's fixed cost in the dealing's model, in key blocks (its Q load, prologue and epilogue).
constexpr int32_t kVarlenTileOverheadBlocks = 1;

KH_ATTN_HD int32_t varlen_pair_key(const SeqBounds& s, int32_t block_m, int32_t block_n) {
  if (s.len_q <= 0) return -1;
  const int32_t tiles = static_cast<int32_t>((s.len_q + block_m - 1) / block_m);
  const int32_t len_k = static_cast<int32_t>(s.len_k);
  const int32_t first = varlen_causal_key(len_k, 0, block_m, block_n);
  return tiles > 1 ? first + varlen_causal_key(len_k, tiles - 1, block_m, block_n) : first;
}

// Whether sequence i is in the tail: the sequences ranked after it (keys: varlen_pair_key;
// tiles: query tiles T) hold fewer than tail_rounds (kVarlenPairTailRounds, or 0: no tail) x grid
// tiles of `heads` heads.
KH_ATTN_HD bool varlen_pair_in_tail(const int32_t* keys, const int32_t* tiles, int32_t n, int32_t i, int32_t heads,
                                    int32_t grid, int32_t tail_rounds) {
  const int32_t key = keys[i];
  int64_t after = 0;
  for (int32_t j = 0; j < n; ++j) {
    const int32_t kj = keys[j];
    if (kj < key || (kj == key && j > i)) after += tiles[j];
  }
  return after * heads < static_cast<int64_t>(tail_rounds) * grid;
}

// A sequence's entries in the list: pair items, or in the tail its tiles.
KH_ATTN_HD int32_t varlen_pair_entries(int32_t tiles, int32_t heads, bool tail) {
  return heads * (tail ? tiles : (tiles + 1) / 2);
}

// The tile (from the sequence's end) of pair item i of a sequence with `tiles` tiles, its long
// (sub 0) or short (sub 1) one; -1 for the short one of a middle item (no tile).
KH_ATTN_HD int32_t varlen_pair_tile(int32_t tiles, int32_t i, int32_t sub) {
  if (2 * i + 1 == tiles) return sub == 0 ? i : -1;  // the middle tile of an odd count
  return sub == 0 ? i : tiles - 1 - i;
}

// Slot s (0 <= s < first_tile[n]) of a pair list: first_tile[0..n] and seq_of_rank[0..n) as
// varlen_seq_rank over the entries leaves them; ranks from `cut` on are the tail. item: the pair
// item (a head's from the highest down), or in the tail the tile from the sequence's end;
// tile_major_tail: the tail's layout (VarlenPairTail).
struct VarlenSlot {
  int32_t seq = 0, head = 0, item = 0;
  bool tail = false;
};

KH_ATTN_HD VarlenSlot varlen_pair_slot_at(const int32_t* first_tile, const int32_t* seq_of_rank, int32_t n,
                                          int32_t heads, int32_t cut, int32_t s, bool tile_major_tail) {
  const int32_t lo = varlen_rank_at(first_tile, n, s);
  const int32_t per_head = (first_tile[lo + 1] - first_tile[lo]) / heads;
  const int32_t off = s - first_tile[lo];
  VarlenSlot v;
  v.seq = seq_of_rank[lo];
  v.tail = lo >= cut;
  if (v.tail && tile_major_tail) {
    v.item = off / heads;
    v.head = off - v.item * heads;
    return v;
  }
  v.head = off / per_head;
  v.item = off - v.head * per_head;
  if (!v.tail) v.item = per_head - 1 - v.item;
  return v;
}

// A slot's cost in the dealing's model: its tiles' key blocks and fixed costs.
KH_ATTN_HD int32_t varlen_pair_slot_cost(const VarlenSlot& v, int32_t len_k, int32_t tiles, int32_t block_m,
                                         int32_t block_n) {
  if (v.tail) return varlen_causal_key(len_k, v.item, block_m, block_n) + kVarlenTileOverheadBlocks;
  const int32_t lo = varlen_pair_tile(tiles, v.item, 1);
  return varlen_causal_key(len_k, v.item, block_m, block_n) + kVarlenTileOverheadBlocks +
         (lo >= 0 ? varlen_causal_key(len_k, lo, block_m, block_n) + kVarlenTileOverheadBlocks : 0);
}

// A round's ranks: slot i's among cost[0..m) (descending, ties: the lower first), and CTA i's
// among work[0..grid) (ascending, ties: the lower first).
KH_ATTN_HD int32_t lpt_cost_rank(const int32_t* cost, int32_t m, int32_t i) {
  const int32_t c = cost[i];
  int32_t rank = 0;
  for (int32_t j = 0; j < m; ++j) rank += cost[j] > c || (cost[j] == c && j < i);
  return rank;
}

KH_ATTN_HD int32_t lpt_work_rank(const int32_t* work, int32_t grid, int32_t i) {
  const int32_t w = work[i];
  int32_t rank = 0;
  for (int32_t j = 0; j < grid; ++j) rank += work[j] < w || (work[j] == w && j < i);
  return rank;
}

}  // namespace kh_attention
