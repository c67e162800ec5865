// attention_fp8_vt.hpp: the layout of V transposed into the workspace of the FP8 prefill (host and
// device code; checked on the CPU in tests/kernels/test_attention_fp8_vt.cpp).
//
// FP8 wgmma reads its B operand K-major only, and V arrives keys x head_dim. Without a workspace the
// sm90a kernel's producer warps transpose each V block in shared memory (attention_fwd_sm90.cuh,
// transpose_v_block); with one, a pre-pass writes the whole of V transposed once, and the kernel's
// TMA loads the blocks ready for P V. The layout, per KV head h and head-dim row r (r < head_dim):
//   vt[(h * head_dim + r) * columns + c]
// where sequence b's keys start at column col0(b) (the padded lengths of the sequences before
// it) and take round_up(len_k(b), vt_key_block(head_dim)) columns: the kernel's key blocks never
// leave their sequence's columns, and the columns past len_k hold zeros (0
// and not a neighbour's bytes, which may be NaN: P is 0 there, and 0 x NaN would be NaN).
// Within each 16 columns of a sequence, column 4t + i holds key 8 (i / 2) + 2t + i % 2 of those 16:
// the order the kernel's P fragments hold the keys in (consume_tile's pack_p), as the in-kernel
// transposer writes them.
// The workspace starts with a header: col0 of every sequence (int32, batch + 1 of them; the last
// is the columns used), then the transposed bytes at a 128-byte aligned offset. A call whose
// padded lengths do not fit the columns its size promised (sequences that overlap in k: the
// clamping rules allow it) keeps the in-kernel transposer: the header's col0[batch] says so.
#pragma once

#include <cstdint>

#include "attention_varlen_schedule.hpp"
#include "attention_visibility.hpp"

namespace kh_attention {

// The key block of the FP8 kernel for a head dim (Sm90TileConfig<d, d, 1>::kBlockN of its bucket
// 64, 128 or 256; attention_fp8_vt.cu asserts they agree): each sequence's columns are a multiple
// of it, so that a block never reads past its sequence's columns.
KH_ATTN_HD constexpr int64_t vt_key_block(int64_t head_dim) { return head_dim <= 64 ? 128 : head_dim <= 128 ? 192 : 128; }

KH_ATTN_HD int64_t vt_round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// The columns of one pre-pass tile (attention_fp8_vt.cu): the workspace's columns are a multiple.
constexpr int kVtTileColumns = 128;

// The columns a call's transposed V may take: every key once, plus each sequence's padding (less
// than one block each), rounded to a pre-pass tile, when the sequences do not overlap.
KH_ATTN_HD int64_t vt_columns(int64_t total_k, int64_t batch, int64_t head_dim) {
  return vt_round_up(total_k + batch * (vt_key_block(head_dim) - 1), kVtTileColumns);
}

// Where the pre-pass pays (measured on the H100: cuda/NOTES.md, "V transposed once" and "The second
// pre-pass"): its time grows with V's bytes (total_k x heads_kv x head_dim, plus two launches), what
// the kernel saves with the work each key takes part in: the q rows of its KV head that see it,
// about group x max_seqlen_q (half that causal).
// - Head dims above 128 (the 256 bucket): always. Its 128-key blocks leave the transposers too few
//   registers (Sm90TileConfig), so without the workspace the kernel is 5-7% slower than with the
//   64-key blocks of before, and with it 15-20% faster (d256 s8k full 860 against 1161 TF/s, the
//   pre-pass included; H100).
// - Up to 128 (the 64 and 128 buckets, the kernel 3.5-5.5% faster without transposing): where
//   group x max_seqlen_q reaches 6144 (12288 causal). s8k without GQA: full +2-5% (d128, d64),
//   causal -1 to -1.5% (below the bar); d128 s8k group 4 causal +2%; d128 s4k full -1% (below);
//   d128 s2k group 4 full -0.3 to -0.9% (above the bar: the pre-pass's fixed part, within noise).
// Elsewhere the workspace is unused and sized 0.
KH_ATTN_HD constexpr bool vt_pays(int64_t head_dim, int64_t group, int64_t max_seqlen_q, bool causal) {
  return head_dim > 128 || group * max_seqlen_q >= (causal ? 12288 : 6144);
}

// The header's bytes: col0[batch + 1] as int32, rounded up to 128 (the data's alignment).
KH_ATTN_HD int64_t vt_header_bytes(int64_t batch) { return vt_round_up((batch + 1) * 4, 128); }

// The workspace a call needs, in bytes.
KH_ATTN_HD int64_t vt_workspace_bytes(int64_t total_k, int64_t batch, int64_t heads_kv, int64_t head_dim) {
  return vt_header_bytes(batch) + heads_kv * head_dim * vt_columns(total_k, batch, head_dim);
}

// The key (0..15) that column position p (0..15) of a 16-key group holds, and its inverse.
KH_ATTN_HD int vt_key_at(int p) { return 8 * ((p & 3) >> 1) + 2 * (p >> 2) + (p & 1); }
KH_ATTN_HD int vt_position_of(int key) { return 4 * ((key & 7) >> 1) + 2 * (key >> 3) + (key & 1); }

// The sequence that column c (below col0[batch] <= INT32_MAX) belongs to: the last one whose first
// column is at or before c (col0 ascending; a sequence without keys shares its successor's first
// column and is passed over so): the varlen schedule's search.
KH_ATTN_HD int vt_sequence_of(const int32_t* col0, int batch, int64_t c) {
  return varlen_rank_at(col0, batch, static_cast<int32_t>(c));
}

// The key of its sequence that column `rel` of the sequence's columns holds (rel: c - col0[b]), or
// -1 for a column of the padding past len_k.
KH_ATTN_HD int64_t vt_key_of_column(int64_t rel, int64_t len_k) {
  const int64_t key = (rel & ~int64_t(15)) + vt_key_at(static_cast<int>(rel & 15));
  return key < len_k ? key : -1;
}

}  // namespace kh_attention
