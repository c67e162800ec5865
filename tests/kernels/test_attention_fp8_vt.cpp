// test_attention_fp8_vt.cpp: the layout of the FP8 prefill's transposed V
// (kernels-src/attention/src/attention_fp8_vt.hpp), checked on the host: the key order within 16
// columns is the P fragments' (a permutation), every sequence's padded columns fit the columns a
// workspace of the documented size holds, and the pre-pass's column -> (sequence, key) mapping,
// run here as the kernel runs it, puts each key block's keys in that block's columns with zeros
// after len_k. The sm90a kernel loads those columns by TMA for P V; a mistake here would be wrong
// outputs (or a neighbour's NaN) there.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "attention_fp8_vt.hpp"

using namespace kh_attention;

namespace {

// What vt_columns_kernel writes: col0[b] = the padded lengths before b, col0[batch] their sum.
std::vector<int32_t> first_columns(const std::vector<int64_t>& lens, int64_t head_dim) {
  std::vector<int32_t> col0(lens.size() + 1, 0);
  for (size_t b = 0; b < lens.size(); ++b)
    col0[b + 1] = col0[b] + static_cast<int32_t>(vt_round_up(lens[b], vt_key_block(head_dim)));
  return col0;
}

}  // namespace

TEST_CASE("FP8 Vt: the key order of 16 columns is the P fragments'") {
  std::vector<int> seen(16, 0);
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 4; ++i) {
      // pack_p: A register holds keys 2t, 2t + 1, 8 + 2t, 9 + 2t at positions 4t .. 4t + 3.
      const int p = 4 * t + i, key = 8 * (i / 2) + 2 * t + i % 2;
      CHECK(vt_key_at(p) == key);
      CHECK(vt_position_of(key) == p);
      ++seen[static_cast<size_t>(key)];
    }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
}

TEST_CASE("FP8 Vt: padded sequences fit the workspace's columns") {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 2000; ++trial) {
    const int batch = 1 + static_cast<int>(rng() % (trial < 1000 ? 8 : 300));
    std::vector<int64_t> lens(static_cast<size_t>(batch));
    int64_t total = 0;
    for (auto& l : lens) {
      l = static_cast<int64_t>(rng() % (rng() % 4 == 0 ? 3000 : 200));
      total += l;
    }
    for (int64_t d : {32, 64, 80, 128, 144, 256}) {
      const int64_t columns = vt_columns(total, batch, d);
      CHECK(columns % 128 == 0);
      CHECK(first_columns(lens, d).back() <= columns);
    }
  }
  // The header: batch + 1 int32, whole 128-byte units; the size is header + heads x dim x columns.
  CHECK(vt_header_bytes(0) == 128);
  CHECK(vt_header_bytes(31) == 128);
  CHECK(vt_header_bytes(32) == 256);
  CHECK(vt_workspace_bytes(1000, 3, 2, 128) == 128 + 2 * 128 * vt_round_up(1000 + 3 * 191, 128));
  CHECK(vt_workspace_bytes(1000, 3, 2, 64) == 128 + 2 * 64 * vt_round_up(1000 + 3 * 127, 128));
  CHECK(vt_workspace_bytes(1000, 3, 2, 256) == 128 + 2 * 256 * vt_round_up(1000 + 3 * 127, 128));  // 128-key blocks at d256 too
}

// The docs' rule of where the workspace is used (docs/ops-attention-fp8.md; check_fp8.py's
// vt_workspace_bytes holds the GPU build to it): above head dim 128 always, else from
// group x max_seqlen_q of 6144 (12288 causal).
TEST_CASE("FP8 Vt: where the pre-pass is used") {
  for (bool causal : {false, true}) {
    CHECK(vt_pays(256, 1, 1, causal));
    CHECK(vt_pays(144, 1, 0, causal));
  }
  for (int64_t d : {32, 64, 80, 128}) {
    CHECK(vt_pays(d, 1, 6144, false));
    CHECK_FALSE(vt_pays(d, 1, 6143, false));
    CHECK(vt_pays(d, 4, 1536, false));
    CHECK_FALSE(vt_pays(d, 4, 1535, false));
    CHECK(vt_pays(d, 8, 1536, true));
    CHECK_FALSE(vt_pays(d, 8, 1535, true));
  }
  CHECK_FALSE(vt_pays(128, 1, 8192, true));  // measured slower: d128 s8k causal without GQA
  CHECK(vt_pays(128, 1, 8192, false));       // measured faster: the same, non-causal
  CHECK(vt_pays(128, 4, 8192, true));        // measured faster: group 4 causal
  CHECK_FALSE(vt_pays(128, 1, 4096, false)); // measured slower: s4k full
}

TEST_CASE("FP8 Vt: each key block's columns hold its keys in P order, zeros past the sequence") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int batch = 1 + static_cast<int>(rng() % 12);
    std::vector<int64_t> lens(static_cast<size_t>(batch));
    for (auto& l : lens) l = rng() % 3 == 0 ? 0 : static_cast<int64_t>(rng() % 900);
    for (int64_t d : {64, 128, 256}) {
      const int64_t block_n = vt_key_block(d);
      const std::vector<int32_t> col0 = first_columns(lens, d);
      // The pre-pass: every column of every sequence gets (sequence, key) or padding.
      std::vector<int> seq_at(static_cast<size_t>(col0.back()));
      std::vector<int64_t> key_at(static_cast<size_t>(col0.back()));
      for (int64_t c = 0; c < col0.back(); ++c) {
        const int b = vt_sequence_of(col0.data(), batch, c);
        REQUIRE(b >= 0);
        REQUIRE(b < batch);
        REQUIRE(col0[static_cast<size_t>(b)] <= c);
        REQUIRE(c < col0[static_cast<size_t>(b) + 1]);
        seq_at[static_cast<size_t>(c)] = b;
        key_at[static_cast<size_t>(c)] =
            vt_key_of_column(c - col0[static_cast<size_t>(b)], lens[static_cast<size_t>(b)]);
      }
      // The kernel: block n of sequence b reads columns col0[b] + n N .. + N; position q of each
      // 16 there must hold key n N + 16 (q / 16) + vt_key_at(q % 16), or padding past len_k.
      for (int b = 0; b < batch; ++b) {
        const int64_t len = lens[static_cast<size_t>(b)];
        for (int64_t n = 0; n * block_n < len; ++n)
          for (int64_t q = 0; q < block_n; ++q) {
            const int64_t c = col0[static_cast<size_t>(b)] + n * block_n + q;
            REQUIRE(c < col0[static_cast<size_t>(b) + 1]);
            CHECK(seq_at[static_cast<size_t>(c)] == b);
            const int64_t want = n * block_n + (q & ~int64_t(15)) + vt_key_at(static_cast<int>(q & 15));
            CHECK(key_at[static_cast<size_t>(c)] == (want < len ? want : -1));
          }
      }
    }
  }
}
