// attention_decode_cuda.cu: attention_decode_paged on CUDA after the shared argument rules: the
// alignment and grid checks, the split-KV heuristic, the split kernel (one instantiation per
// dtype and lane-group width, attention_decode_<dtype>_tpr<N>.cu) and the combine kernel.
// Everything is decided from shapes and device properties (cached), never from seq_lens'
// values: no host synchronisation, no allocation, no copy; safe inside CUDA graph capture.
#include "attention_decode.cuh"
#include "attention_decode_launch.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace kh_attention {
namespace decode {

KH_DECODE_EXTERN_ALL(Bf16Tag)
KH_DECODE_EXTERN_ALL(F16Tag)

cudaError_t run_decode_combine(const DecodeParams& p, int num_splits, cudaStream_t stream) {
  const int64_t rows = static_cast<int64_t>(p.batch) * p.q_len * p.heads_q;
  const int64_t blocks = (rows + kCombineRows - 1) / kCombineRows;
  if (p.dtype == ElementType::kBF16)
    decode_combine_kernel<Bf16Tag><<<static_cast<unsigned>(blocks), kCombineThreads, 0, stream>>>(p, num_splits);
  else
    decode_combine_kernel<F16Tag><<<static_cast<unsigned>(blocks), kCombineThreads, 0, stream>>>(p, num_splits);
  return cudaGetLastError();
}

namespace {

int lane_group_width(int head_dim) { return head_dim <= 32 ? 4 : head_dim <= 64 ? 8 : head_dim <= 128 ? 16 : 32; }

// KH_ATTENTION_DECODE_VARIANT=async|simt (comparisons): the cp.async-ring or the CUDA-core split
// kernel instead of the default; KH_ATTENTION_DECODE_SIMT=1 is the same as simt.
int variant() {
  static const int v = [] {
    const char* s = std::getenv("KH_ATTENTION_DECODE_VARIANT");
    const char* simt = std::getenv("KH_ATTENTION_DECODE_SIMT");
    if (s != nullptr && std::strcmp(s, "async") == 0) return kVariantAsync;
    if ((s != nullptr && std::strcmp(s, "simt") == 0) || (simt != nullptr && simt[0] == '1')) return kVariantSimt;
    return kVariantRegs;
  }();
  return v;
}

template <typename Tag>
cudaError_t run_split(const DecodeParams& p, int tpr, int rows, int row_tiles, int splits, cudaStream_t s) {
  const int v = variant();
  switch (tpr) {
    case 4: return run_decode_split<Tag, 4>(p, rows, row_tiles, splits, v, s);
    case 8: return run_decode_split<Tag, 8>(p, rows, row_tiles, splits, v, s);
    case 16: return run_decode_split<Tag, 16>(p, rows, row_tiles, splits, v, s);
    default: return run_decode_split<Tag, 32>(p, rows, row_tiles, splits, v, s);
  }
}

template <typename Tag>
int occupancy(int tpr, int rows) {
  const int v = variant();
  switch (tpr) {
    case 4: return decode_split_occupancy<Tag, 4>(rows, v);
    case 8: return decode_split_occupancy<Tag, 8>(rows, v);
    case 16: return decode_split_occupancy<Tag, 16>(rows, v);
    default: return decode_split_occupancy<Tag, 32>(rows, v);
  }
}

// CTAs of one variant the device holds at once, cached per (device, variant): the first call
// asks the runtime, later ones (graph captures among them) read the cache.
int resident_ctas(int device, bool bf16, int tpr, int rows) {
  constexpr int kDevices = 64;
  static std::atomic<int> cache[kDevices][2][4][2];
  const int ti = tpr == 4 ? 0 : tpr == 8 ? 1 : tpr == 16 ? 2 : 3, ri = rows == 4 ? 0 : 1;
  std::atomic<int>* slot = device >= 0 && device < kDevices ? &cache[device][bf16][ti][ri] : nullptr;
  if (slot != nullptr) {
    const int v = slot->load(std::memory_order_relaxed);
    if (v > 0) return v;
  }
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0) sms = 1;
  const int per_sm = bf16 ? occupancy<Bf16Tag>(tpr, rows) : occupancy<F16Tag>(tpr, rows);
  const int v = std::max(1, sms * per_sm);
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
  // KH_ATTENTION_DECODE_SPLITS=<n> (comparisons, tests): n splits, within [1, max_splits].
  static const int64_t forced = [] {
    const char* v = std::getenv("KH_ATTENTION_DECODE_SPLITS");
    return v != nullptr ? std::atoll(v) : 0LL;
  }();
  if (forced > 0) best = std::min<int64_t>(forced, smax);
  plan.splits = static_cast<int>(best);
  return plan;
}

cudaError_t launch_decode(const DecodeParams& p, const DecodePlan& plan, cudaStream_t stream) {
  const bool bf16 = p.dtype == ElementType::kBF16;
  cudaError_t err = bf16 ? run_split<Bf16Tag>(p, plan.tpr, plan.rows, plan.row_tiles, plan.splits, stream)
                         : run_split<F16Tag>(p, plan.tpr, plan.rows, plan.row_tiles, plan.splits, stream);
  if (err == cudaSuccess && plan.splits > 1) err = run_decode_combine(p, plan.splits, stream);
  return err;
}

}  // namespace decode
}  // namespace kh_attention
