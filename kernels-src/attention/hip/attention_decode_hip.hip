// attention_decode_hip.hip: attention_decode_paged on gfx942 after the shared argument rules:
// the split-KV plan (same heuristic as CUDA: one full wave of resident CTAs, within the
// workspace rule's max_splits), the split kernel (attention_decode_gfx942_<dtype>.hip) and
// the combine kernel. Decided from shapes and device properties only: no host read of
// seq_lens, no allocation, no copy.
#include "attention_decode_gfx942.hpp"

#include <algorithm>
#include <atomic>

namespace kh_attention {
namespace decode {

KH_DECODE_EXTERN_ALL(Bf16Tag)
KH_DECODE_EXTERN_ALL(F16Tag)
KH_DECODE_FP8_EXTERN_ALL(Bf16Tag)
KH_DECODE_FP8_EXTERN_ALL(F16Tag)

hipError_t run_decode_combine(const DecodeParams& p, int num_splits, hipStream_t stream) {
  const CombineShape shape = decode_combine_shape(p, num_splits);
  const unsigned blocks = static_cast<unsigned>(shape.blocks);
  if (p.dtype == ElementType::kBF16)
    decode_combine_kernel<Bf16Tag><<<blocks, kCombineThreads, 0, stream>>>(p, num_splits, shape.warps_per_row);
  else
    decode_combine_kernel<F16Tag><<<blocks, kCombineThreads, 0, stream>>>(p, num_splits, shape.warps_per_row);
  return hipGetLastError();
}

namespace {

int lane_group_width(int head_dim) { return head_dim <= 32 ? 4 : head_dim <= 64 ? 8 : head_dim <= 128 ? 16 : 32; }

template <typename Tag>
hipError_t run_split(const DecodeParams& p, int tpr, int rows, int row_tiles, int splits, hipStream_t s) {
  switch (tpr) {
    case 4: return run_decode_split<Tag, 4>(p, rows, row_tiles, splits, s);
    case 8: return run_decode_split<Tag, 8>(p, rows, row_tiles, splits, s);
    case 16: return run_decode_split<Tag, 16>(p, rows, row_tiles, splits, s);
    default: return run_decode_split<Tag, 32>(p, rows, row_tiles, splits, s);
  }
}

template <typename Tag>
hipError_t run_split_fp8(const DecodeParams& p, int tpr, int rows, int row_tiles, int splits, hipStream_t s) {
  switch (tpr) {
    case 4: return run_decode_split_fp8<Tag, 4>(p, rows, row_tiles, splits, s);
    case 8: return run_decode_split_fp8<Tag, 8>(p, rows, row_tiles, splits, s);
    case 16: return run_decode_split_fp8<Tag, 16>(p, rows, row_tiles, splits, s);
    default: return run_decode_split_fp8<Tag, 32>(p, rows, row_tiles, splits, s);
  }
}

template <typename Tag>
int occupancy(int tpr, int rows) {
  switch (tpr) {
    case 4: return decode_split_occupancy<Tag, 4>(rows);
    case 8: return decode_split_occupancy<Tag, 8>(rows);
    case 16: return decode_split_occupancy<Tag, 16>(rows);
    default: return decode_split_occupancy<Tag, 32>(rows);
  }
}

int resident_ctas(int device, bool bf16, int tpr, int rows) {
  constexpr int kDevices = 64;
  static std::atomic<int> cache[kDevices][2][4][2];
  const int ti = tpr == 4 ? 0 : tpr == 8 ? 1 : tpr == 16 ? 2 : 3, ri = rows == 4 ? 0 : 1;
  std::atomic<int>* slot = device >= 0 && device < kDevices ? &cache[device][bf16][ti][ri] : nullptr;
  if (slot != nullptr) {
    const int v = slot->load(std::memory_order_relaxed);
    if (v > 0) return v;
  }
  int cus = 0;
  if (hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device) != hipSuccess || cus <= 0) cus = 1;
  const int per_cu = bf16 ? occupancy<Bf16Tag>(tpr, rows) : occupancy<F16Tag>(tpr, rows);
  const int v = std::max(1, cus * per_cu);
  if (slot != nullptr) slot->store(v, std::memory_order_relaxed);
  return v;
}

}  // namespace

DecodePlan plan_decode(const DecodeParams& p, int device) {
  DecodePlan plan;
  plan.tpr = lane_group_width(p.head_dim);
  const int total_rows = p.q_len * (p.heads_q / p.heads_kv);
  plan.rows = total_rows <= 4 ? 4 : 8;
  plan.row_tiles = (total_rows + plan.rows - 1) / plan.rows;
  // Split-KV: the split count in [1, max_splits] (the workspace rule's bound) whose CTAs
  // fill the device's resident slots best (CTAs / (waves x slots)): the first that reaches
  // 95%, else the best. A last wave that is mostly empty costs as much as a full one: b64 x 8k
  // unsplit is 512 CTAs on 396 slots, 65% (run 2 of cuda/NOTES.md "decode").
  const int64_t units = static_cast<int64_t>(p.batch) * p.heads_kv * plan.row_tiles;
  const int64_t slots = resident_ctas(device, p.dtype == ElementType::kBF16, plan.tpr, plan.rows);
  const int64_t smax = p.max_splits();
  int64_t best = 1;
  double best_fill = -1.0;
  for (int64_t s = 1; s <= smax; ++s) {
    const int64_t ctas = units * s, waves = (ctas + slots - 1) / slots;
    const double fill = static_cast<double>(ctas) / static_cast<double>(waves * slots);
    if (fill > best_fill + 1e-9) {
      best_fill = fill;
      best = s;
    }
    if (fill >= 0.95) break;
  }
  plan.splits = static_cast<int>(best);
  return plan;
}

hipError_t launch_decode(const DecodeParams& p, const DecodePlan& plan, hipStream_t stream) {
  const bool bf16 = p.dtype == ElementType::kBF16;
  hipError_t err = bf16 ? run_split<Bf16Tag>(p, plan.tpr, plan.rows, plan.row_tiles, plan.splits, stream)
                        : run_split<F16Tag>(p, plan.tpr, plan.rows, plan.row_tiles, plan.splits, stream);
  if (err == hipSuccess && plan.splits > 1) err = run_decode_combine(p, plan.splits, stream);
  return err;
}

hipError_t launch_decode_fp8(const DecodeParams& p, const DecodePlan& plan, hipStream_t stream) {
  const bool bf16 = p.dtype == ElementType::kBF16;
  hipError_t err = bf16 ? run_split_fp8<Bf16Tag>(p, plan.tpr, plan.rows, plan.row_tiles, plan.splits, stream)
                        : run_split_fp8<F16Tag>(p, plan.tpr, plan.rows, plan.row_tiles, plan.splits, stream);
  if (err == hipSuccess && plan.splits > 1) err = run_decode_combine(p, plan.splits, stream);
  return err;
}

}  // namespace decode
}  // namespace kh_attention
