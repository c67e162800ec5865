// test_attention_decode_balance.cpp: the length-balanced decode grid's partition
// (kernels-src/attention/src/attention_decode_balance.hpp) against brute force on the host: a
// unit's tiles are exactly those that hold a key some query row sees; the working CTAs' shares
// cover every tile of every unit once, differ by at most one tile, never cut a unit into more
// parts than the workspace holds, and number each unit's parts 0, 1, ... in key order from the
// CTA that holds its first tile; equal units that fill the grid at once stay whole.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "attention_decode_balance.hpp"

using kh_attention::decode_balance_ctas;
using kh_attention::decode_cta_of_tile;
using kh_attention::decode_seq_of_tile;
using kh_attention::decode_share_start;
using kh_attention::decode_unit_tiles;

namespace {

// The 16-key tiles that hold a key any of the q_len rows sees (row i: keys j with
// j <= len - q_len + i and, with a window, j >= len - q_len + i - window), counted from the
// first such key's tile.
int64_t tiles_by_rows(int64_t len, int64_t q_len, int64_t window) {
  int64_t first = -1;
  for (int64_t j = 0; j < len && first < 0; ++j)
    for (int64_t i = 0; i < q_len; ++i) {
      const int64_t pos = len - q_len + i;
      if (j <= pos && (window < 0 || j >= pos - window)) {
        first = j;
        break;
      }
    }
  return first < 0 ? 0 : (len - (first / 16) * 16 + 15) / 16;
}

struct Part {
  int64_t index, begin, end;  // part index, tiles [begin, end) of the unit
};

// Walks every working CTA's share as a kernel would: from its first tile, the unit that holds
// it (decode_seq_of_tile, then the head), then the following units until the share ends.
std::map<int64_t, std::vector<Part>> walk_shares(const std::vector<int64_t>& tiles, int64_t heads, int64_t ctas,
                                                 std::vector<int64_t>* shares) {
  const int64_t batch = static_cast<int64_t>(tiles.size());
  std::vector<int64_t> first(batch + 1, 0);
  for (int64_t b = 0; b < batch; ++b) first[b + 1] = first[b] + heads * tiles[b];
  const int64_t total = first[batch];
  std::map<int64_t, std::vector<Part>> parts;  // unit -> its parts
  for (int64_t c = 0; c < ctas; ++c) {
    const int64_t s0 = decode_share_start(c, total, ctas), s1 = decode_share_start(c + 1, total, ctas);
    shares->push_back(s1 - s0);
    for (int64_t pos = s0; pos < s1;) {
      const int64_t b = decode_seq_of_tile(first.data(), batch, pos);
      REQUIRE(first[b] <= pos);
      REQUIRE(pos < first[b + 1]);
      const int64_t n = tiles[b], h = (pos - first[b]) / n, start = first[b] + h * n;
      const int64_t lo = std::max(start, s0), hi = std::min(start + n, s1);
      parts[b * heads + h].push_back({c - decode_cta_of_tile(start, total, ctas), lo - start, hi - start});
      pos = start + n;
    }
  }
  return parts;
}

void check_partition(const std::vector<int64_t>& tiles, int64_t heads, int64_t grid, int64_t max_parts) {
  int64_t total = 0, n_max = 0, n_min = -1, units = 0;
  for (int64_t n : tiles) {
    total += heads * n;
    if (n > 0) {
      n_max = std::max(n_max, n);
      n_min = n_min < 0 ? n : std::min(n_min, n);
      units += heads;
    }
  }
  const int64_t ctas = decode_balance_ctas(total, n_max, n_min, units, grid, max_parts);
  CAPTURE(tiles.size());
  CAPTURE(heads);
  CAPTURE(grid);
  CAPTURE(max_parts);
  CAPTURE(total);
  CAPTURE(ctas);
  if (total == 0) {
    CHECK(ctas == 0);
    return;
  }
  REQUIRE(ctas >= 1);
  CHECK(ctas <= grid);
  std::vector<int64_t> shares;
  const auto parts = walk_shares(tiles, heads, ctas, &shares);
  CHECK(*std::max_element(shares.begin(), shares.end()) - *std::min_element(shares.begin(), shares.end()) <= 1);
  const bool equal_whole = n_max == n_min && units <= grid && 20 * units >= 19 * grid;
  for (int64_t b = 0; b < static_cast<int64_t>(tiles.size()); ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const auto it = parts.find(b * heads + h);
      if (tiles[b] == 0) {
        CHECK(it == parts.end());  // nobody's share
        continue;
      }
      REQUIRE(it != parts.end());
      const std::vector<Part>& p = it->second;  // in CTA order
      CHECK(static_cast<int64_t>(p.size()) <= max_parts);
      if (equal_whole) CHECK(p.size() == 1);
      int64_t next = 0;  // every tile once, the parts in key order, numbered 0, 1, ...
      for (size_t j = 0; j < p.size(); ++j) {
        CHECK(p[j].index == static_cast<int64_t>(j));
        CHECK(p[j].begin == next);
        CHECK(p[j].end > p[j].begin);
        next = p[j].end;
      }
      CHECK(next == tiles[b]);
    }
}

}  // namespace

TEST_CASE("decode_unit_tiles: the tiles that hold a key some row sees") {
  for (int64_t len = 0; len <= 300; ++len)
    for (int64_t q_len = 1; q_len <= 8; ++q_len)
      for (int64_t window : {-1, 0, 1, 5, 16, 100, 1000}) {
        CAPTURE(len);
        CAPTURE(q_len);
        CAPTURE(window);
        CHECK(decode_unit_tiles(len, q_len, window) == tiles_by_rows(len, q_len, window));
      }
}

TEST_CASE("decode balance: equal units the grid holds stay whole, one a CTA") {
  check_partition(std::vector<int64_t>(16, 2048), 8, 132, 32);  // b16 x 32k, GQA 32/8
  CHECK(decode_balance_ctas(128 * 2048, 2048, 2048, 128, 132, 32) == 128);
  check_partition(std::vector<int64_t>(64, 512), 8, 132, 8);  // b64 x 8k: 512 units, cut at the shares
  CHECK(decode_balance_ctas(512 * 512, 512, 512, 512, 132, 8) == 132);
  // 14 equal sequences (112 units) leave 15% of 132 SMs idle: cut to fill them.
  check_partition(std::vector<int64_t>(14, 256), 8, 132, 8);
  CHECK(decode_balance_ctas(112 * 256, 256, 256, 112, 132, 8) == 132);
  CHECK(decode_balance_ctas(126 * 256, 256, 256, 126, 132, 8) == 126);  // 95.5%: whole
}

TEST_CASE("decode balance: a long unit among short ones is cut into at most max_parts parts") {
  std::vector<int64_t> tiles(16, 4);
  tiles[3] = 100000;  // one sequence of 1.6 M keys among short ones
  for (int64_t max_parts : {2, 3, 8, 64}) check_partition(tiles, 8, 132, max_parts);
  CHECK(decode_balance_ctas(8 * (100000 + 15 * 4), 100000, 4, 128, 132, 2) < 132);  // shares widened
}

TEST_CASE("decode balance: a call without workspace slots is not for this grid") {
  CHECK(decode_balance_ctas(1000, 10, 10, 100, 132, 1) == -1);
  CHECK(decode_balance_ctas(1000, 10, 10, 100, 132, 0) == -1);
}

TEST_CASE("decode balance: no tile at all, and empty sequences among full ones") {
  check_partition(std::vector<int64_t>(7, 0), 8, 132, 4);
  check_partition({0, 5, 0, 0, 17, 0}, 2, 132, 2);
  check_partition({0, 0, 1}, 1, 1, 2);
}

TEST_CASE("decode balance: random batches against brute force") {
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t batch = 1 + static_cast<int64_t>(rng() % 300);
    const int64_t heads = std::vector<int64_t>{1, 2, 8}[rng() % 3];
    const int64_t grid = std::vector<int64_t>{1, 7, 132, 264}[rng() % 4];
    const int64_t max_parts = std::vector<int64_t>{2, 3, 8, 64}[rng() % 4];
    const int64_t longest = 1 + static_cast<int64_t>(rng() % 4096);
    std::vector<int64_t> tiles(batch);
    for (int64_t& n : tiles) n = rng() % 5 == 0 ? 0 : static_cast<int64_t>(rng() % (longest + 1));
    check_partition(tiles, heads, grid, max_parts);
  }
}
