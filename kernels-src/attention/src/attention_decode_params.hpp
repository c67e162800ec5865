// attention_decode_params.hpp: what every backend of attention_decode_paged takes (CPU,
// CUDA sm80/sm90a, HIP gfx942), filled from the validated op arguments
// (parse_attention_decode_args), and the workspace rule the host sizes its scratch with.
// Plain C++ (no kh headers): device code includes it too.
#pragma once

#include <cstdint>

#include "attention_fwd_params.hpp"  // ElementType
#include "attention_visibility.hpp"  // KH_ATTN_HD

namespace kh_attention {

// The split-KV (FlashDecoding) bounds, part of the op's contract (docs/ops-attention-decode.md):
//   max_kv     = max_blocks_per_seq * block_size  (block_table.shape[1] * k_cache.shape[1])
//   max_splits = max(1, min(64, ceil(max_kv / 128), ceil(4096 / (batch * heads_kv))))
//   workspace  >= (max_splits > 1 ? batch * q_len * heads_q * max_splits * (head_dim + 1) : 0)
//                 float32 elements
// A backend may split a sequence's keys into any count in [1, max_splits], chosen from the
// shapes and the device (never from seq_lens' values: no host read), so a workspace sized by
// this rule is enough on every device and stays valid across CUDA graph replays.
constexpr int64_t kDecodeMaxSplits = 64;
// Head dims the op takes: multiples of 8 from kDecodeMinHeadDim to kDecodeMaxHeadDim (kernels
// size per-row buffers by the maximum).
constexpr int kDecodeMinHeadDim = 32;
constexpr int kDecodeMaxHeadDim = 256;
// attention_decode_paged_fp8's head dims: multiples of 16 (an e4m3 row is then whole 16-byte
// chunks, as the GPU kernels copy it).
constexpr int kDecodeFp8HeadDimStep = 16;
constexpr int64_t kDecodeMinSplitKeys = 128;
constexpr int64_t kDecodeSplitCtaBudget = 4096;

constexpr int64_t decode_ceil_div(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

constexpr int64_t decode_max_splits(int64_t batch, int64_t heads_kv, int64_t max_kv) {
  const int64_t by_len = decode_ceil_div(max_kv, kDecodeMinSplitKeys);
  const int64_t units = batch * heads_kv;
  const int64_t by_fill = units > 0 ? decode_ceil_div(kDecodeSplitCtaBudget, units) : 1;
  int64_t s = kDecodeMaxSplits;
  if (by_len < s) s = by_len;
  if (by_fill < s) s = by_fill;
  return s < 1 ? 1 : s;
}

// float32 elements of workspace a call of these shapes needs (0: no split is ever made).
constexpr int64_t decode_workspace_floats(int64_t batch, int64_t q_len, int64_t heads_q, int64_t heads_kv,
                                          int64_t head_dim, int64_t max_kv) {
  const int64_t s = decode_max_splits(batch, heads_kv, max_kv);
  return s > 1 ? batch * q_len * heads_q * s * (head_dim + 1) : 0;
}

// A validated attention_decode_paged call. Strides in elements; every tensor's last dim is
// contiguous. Row r of sequence b (query token i = 0..q_len-1, head h) sits at key position
// pos = seq_lens[b] - q_len + i and sees keys j with j <= pos and, when window_left >= 0,
// j >= pos - window_left; a row that sees no key gets out = 0 and lse = -inf.
struct DecodeParams {
  const void* q = nullptr;        // (batch, q_len, heads_q, head_dim)
  const void* k = nullptr;        // (num_blocks, block_size, heads_kv, head_dim)
  const void* v = nullptr;        // (num_blocks, block_size, heads_kv, head_dim)
  void* out = nullptr;            // (batch, q_len, heads_q, head_dim)
  float* lse = nullptr;           // (batch, heads_q, q_len) fp32 contiguous, or null
  const int32_t* block_table = nullptr;  // (batch, max_blocks_per_seq)
  const int32_t* seq_lens = nullptr;     // (batch)
  float* workspace = nullptr;     // workspace_floats float32 elements (may be null when 0)

  int64_t q_batch_stride = 0, q_row_stride = 0, q_head_stride = 0;
  int64_t o_batch_stride = 0, o_row_stride = 0, o_head_stride = 0;
  int64_t k_block_stride = 0, k_row_stride = 0, k_head_stride = 0;
  int64_t v_block_stride = 0, v_row_stride = 0, v_head_stride = 0;
  int64_t bt_batch_stride = 0;    // block_table's row stride (its last dim is contiguous)
  int64_t seq_lens_stride = 1;
  int64_t workspace_floats = 0;   // what the caller gave

  int batch = 0;
  int q_len = 0;
  int heads_q = 0;
  int heads_kv = 0;
  int head_dim = 0;
  int block_size = 0;             // a power of two
  int block_shift = 0;            // log2(block_size)
  int max_blocks_per_seq = 0;
  int num_blocks = 0;
  int window_left = -1;           // -1: no window
  float scale = 1.f;
  float softcap = 0.f;            // 0: none; else s = softcap * tanh(scale * q.k / softcap)
  double scale_f64 = 1.0;         // the same two as given (the CPU oracle's)
  double softcap_f64 = 0.0;
  ElementType dtype = ElementType::kBF16;
  int device_id = 0;              // DLDevice::device_id of the tensors
  // attention_decode_paged_fp8 (1.2): k and v hold e4m3 bytes (attention_fp8.hpp), so their strides
  // are in bytes; key j of kv head h is e4m3(k) * k_scale[h * k_scale_stride] (stride 0: one factor
  // for every head), values likewise. The scales live on the tensors' device.
  bool kv_fp8 = false;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  int64_t k_scale_stride = 0, v_scale_stride = 0;
  // Launch geometry, set by the backend's plan (not by the caller): 1 = the split kernel's
  // grid is (heads_kv x row tiles, splits, batch) instead of (splits, heads_kv x row tiles,
  // batch), so that the CTAs the device starts together read the same cache blocks.
  int grid_heads_first = 0;

  int64_t max_kv() const { return static_cast<int64_t>(max_blocks_per_seq) * block_size; }
  int64_t max_splits() const { return decode_max_splits(batch, heads_kv, max_kv()); }
  bool empty() const { return batch == 0 || q_len == 0 || heads_q == 0; }
};

// A block id a call may read: one in [0, num_blocks). The table lives on the device, so a GPU
// call cannot refuse a bad entry without a host synchronisation; its kernels read nothing for it
// (the copies are zero-filled, the loads skipped) and leave the block's keys out of every row's
// softmax, as if masked. The CPU build, whose table is on the host, refuses the call instead.
// Either way no byte outside the caches is read (docs/ops-attention-decode.md).
KH_ATTN_HD bool decode_block_ok(int32_t block, int num_blocks) {
  return static_cast<uint32_t>(block) < static_cast<uint32_t>(num_blocks);
}

}  // namespace kh_attention
