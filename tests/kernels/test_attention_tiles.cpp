// test_attention_tiles.cpp: the index math every prefill attention kernel shares
// (kernels-src/attention/src/attention_visibility.hpp), checked on the host against brute force
// over many shapes: which keys a row sees (causal bottom-right, window), which key blocks a tile
// of rows must visit (none it skips holds a visible key), which blocks need no per-element
// mask (every valid row sees all of them), where a packed sequence's rows are (cu_seqlens
// clamped as documented), and which compiled head-dim bucket serves a call. The GPU kernels run
// this code on the device; a mistake here would be a wrong mask there.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "attention_fwd_buckets.hpp"
#include "attention_visibility.hpp"

using kh_attention::KeyRange;
using kh_attention::seq_bounds;
using kh_attention::SeqBounds;
using kh_attention::tile_visibility;
using kh_attention::TileVisibility;
using kh_attention::visible_keys;

namespace {

// The documented rule, written out: row i of a (len_q, len_k) sequence sees key j.
bool sees(int i, int j, int len_q, int len_k, bool causal, int window) {
  const int pos = i + len_k - len_q;
  if (j < 0 || j >= len_k) return false;
  if (causal && j > pos) return false;
  if (window >= 0 && j < pos - window) return false;
  return true;
}

}  // namespace

TEST_CASE("attention tiles: visible_keys is the documented rule") {
  for (int len_q : {0, 1, 5, 17, 64})
    for (int len_k : {0, 1, 3, 17, 100})
      for (bool causal : {false, true})
        for (int window : {-1, 0, 1, 6, 50, 1000})
          for (int i = 0; i < len_q; ++i) {
            const KeyRange<int> r = visible_keys<int>(i, len_q, len_k, causal, window);
            for (int j = -2; j < len_k + 2; ++j) {
              const bool in = j >= r.lo && j < r.end;
              if (in != sees(i, j, len_q, len_k, causal, window)) {
                CAPTURE(len_q);
                CAPTURE(len_k);
                CAPTURE(causal);
                CAPTURE(window);
                CAPTURE(i);
                CAPTURE(j);
                FAIL("visible_keys disagrees with the rule");
              }
            }
          }
}

TEST_CASE("attention tiles: key blocks to visit and blocks that need a mask") {
  std::mt19937 rng(12);
  int checked = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int len_q = static_cast<int>(rng() % 300), len_k = static_cast<int>(rng() % 300);
    const int block_m = std::vector<int>{64, 128, 192}[rng() % 3];
    const int block_n = std::vector<int>{32, 64, 80, 112, 128}[rng() % 5];
    const bool causal = rng() & 1;
    const int window = (rng() % 3 == 0) ? -1 : static_cast<int>(rng() % 200);
    // Tiles as the kernels place them: from row 0 up, or ending at the last row (causal
    // tiles of the sm90a kernel start below row 0).
    const int m_blocks = (len_q + block_m - 1) / block_m;
    const int shift = (rng() & 1) ? m_blocks * block_m - len_q : 0;
    for (int t = 0; t < m_blocks; ++t) {
      const int m0 = t * block_m - shift;
      const TileVisibility<int> v = tile_visibility<int>(m0, block_m, len_q, len_k, causal, window, block_n);
      const int n_all = (len_k + block_n - 1) / block_n;
      for (int n = 0; n < n_all; ++n) {
        bool any = false, all = true;
        for (int i = std::max(m0, 0); i < std::min(m0 + block_m, len_q); ++i)
          for (int j = n * block_n; j < (n + 1) * block_n; ++j) {
            const bool s = sees(i, j, len_q, len_k, causal, window);
            any = any || s;
            all = all && s;
          }
        const bool visited = n >= v.n_lo && n < v.n_hi;
        CAPTURE(len_q);
        CAPTURE(len_k);
        CAPTURE(block_m);
        CAPTURE(block_n);
        CAPTURE(causal);
        CAPTURE(window);
        CAPTURE(m0);
        CAPTURE(n);
        if (any) CHECK(visited);               // no visible key is skipped
        if (visited && !v.needs_mask(n, block_n)) CHECK(all);  // "no mask" only where every row sees all
        if (all && visited && (n + 1) * block_n <= len_k) {
          // Blocks every row sees whole are not masked needlessly in the common cases: full
          // attention, and causal blocks left of the tile's first diagonal.
          if (window < 0) CHECK(!v.needs_mask(n, block_n));
        }
        ++checked;
      }
      // The visited range is tight at both ends: its first and last blocks hold a visible key.
      if (v.blocks() > 0) {
        for (int n : {v.n_lo, v.n_hi - 1}) {
          bool any = false;
          for (int i = std::max(m0, 0); i < std::min(m0 + block_m, len_q); ++i)
            for (int j = n * block_n; j < (n + 1) * block_n; ++j) any = any || sees(i, j, len_q, len_k, causal, window);
          CHECK(any);
        }
      }
    }
  }
  CHECK(checked > 2000);
}

TEST_CASE("attention tiles: packed sequences from cu_seqlens, clamped") {
  // attention_fwd: every sequence starts at row 0 of its batch entry.
  const SeqBounds f = seq_bounds(nullptr, 1, nullptr, 1, 0, 0, 40, 50, 3);
  CHECK(f.q_start == 0);
  CHECK(f.k_start == 0);
  CHECK(f.len_q == 40);
  CHECK(f.len_k == 50);
  // Offsets as given, within the rules.
  const int32_t cu_q[] = {0, 5, 5, 12}, cu_k[] = {0, 9, 10, 30};
  const int64_t want_q[][2] = {{0, 5}, {5, 0}, {5, 7}}, want_k[][2] = {{0, 9}, {9, 1}, {10, 20}};
  for (int b = 0; b < 3; ++b) {
    const SeqBounds s = seq_bounds(cu_q, 1, cu_k, 1, 12, 30, 100, 100, b);
    CHECK(s.q_start == want_q[b][0]);
    CHECK(s.len_q == want_q[b][1]);
    CHECK(s.k_start == want_k[b][0]);
    CHECK(s.len_k == want_k[b][1]);
  }
  // Strided offsets, and values outside the rules: a negative start, an end below its start,
  // past the tensor, lengths over max_seqlen.
  const int32_t cu[] = {-4, 0, 9, 0, 14, 0, 11, 0, 500};
  const int64_t want[][2] = {{0, 7}, {9, 5}, {14, 0}, {11, 7}};  // total 20, max_seqlen 7
  for (int b = 0; b < 4; ++b) {
    const SeqBounds s = seq_bounds(cu, 2, cu, 2, 20, 20, 7, 7, b);
    CAPTURE(b);
    CHECK(s.q_start == want[b][0]);
    CHECK(s.len_q == want[b][1]);
    CHECK(s.k_start == want[b][0]);
    CHECK(s.len_k == want[b][1]);
  }
}

TEST_CASE("attention tiles: the head-dim bucket of every supported call") {
  using kh_attention::cuda_fwd_bucket;
  using kh_attention::dispatch_fwd_bucket;
  using kh_attention::ElementType;
  using kh_attention::FwdBucket;
  using kh_attention::gfx942_fwd_bucket;
  const int fast[] = {64, 80, 96, 128, 192, 256};
  for (int d = 32; d <= 256; d += 8) {
    CAPTURE(d);
    for (const FwdBucket b : {cuda_fwd_bucket(d, d), gfx942_fwd_bucket(d, d)}) {
      CHECK(b.qk >= d);
      CHECK(b.v == b.qk);
      CHECK(b.qk - d < 64);  // never more than one step of the list up
    }
    for (int f : fast)
      if (d == f) CHECK(cuda_fwd_bucket(d, d).qk == d);  // the fast head dims run exact buckets on CUDA
    CHECK(gfx942_fwd_bucket(d, d).qk % 32 == 0);          // MFMA groups of 32 dims
    CHECK(cuda_fwd_bucket(d, 128).qk == (d == 192 || d == 128 ? (d == 192 ? 192 : 128) : 0));
  }
  CHECK(cuda_fwd_bucket(192, 128).v == 128);
  CHECK(gfx942_fwd_bucket(192, 128).v == 128);
  CHECK(gfx942_fwd_bucket(80, 80).qk == 96);
  CHECK(cuda_fwd_bucket(264, 264).qk == 0);
  CHECK(cuda_fwd_bucket(128, 64).qk == 0);
  // The dispatch reaches the instantiation of the bucket and dtype, and only those of its list.
  auto code = [](auto qk, auto v, auto t) {
    return decltype(qk)::value * 1000 + decltype(v)::value + (decltype(t)::value == ElementType::kBF16 ? 1 : 0);
  };
  CHECK(dispatch_fwd_bucket(kh_attention::CudaFwdDims{}, cuda_fwd_bucket(72, 72), ElementType::kBF16, -1, code) ==
        80081);
  CHECK(dispatch_fwd_bucket(kh_attention::CudaFwdDims{}, cuda_fwd_bucket(192, 128), ElementType::kF16, -1, code) ==
        192128);
  CHECK(dispatch_fwd_bucket(kh_attention::Gfx942FwdDims{}, gfx942_fwd_bucket(80, 80), ElementType::kF16, -1, code) ==
        96096);
  CHECK(dispatch_fwd_bucket(kh_attention::Gfx942FwdDims{}, FwdBucket{80, 80}, ElementType::kF16, -1, code) == -1);
  CHECK(dispatch_fwd_bucket(kh_attention::CudaFwdDims{}, FwdBucket{}, ElementType::kF16, -1, code) == -1);
}
