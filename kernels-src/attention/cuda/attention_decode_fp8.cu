// attention_decode_fp8.cu: the plans of the FP8-cache kernel (attention_decode_fp8.cuh): the split
// count of an attention_decode_paged_fp8 call (the bf16 kernels' rule: the count within the
// workspace's max_splits whose CTAs fill the device's resident slots best, from the shapes and
// the device only, never from seq_lens), the launches, the combine; and the packed (varlen) mode's
// grid. No allocation, no host synchronisation, no copy: graph-safe.
#include <atomic>

#include "attention_decode.hpp"
#include "attention_decode_fp8_launch.hpp"

namespace kh_attention {
namespace decode {

KH_DECODE_FP8_EXTERN(Bf16Tag, 128)
KH_DECODE_FP8_EXTERN(Bf16Tag, 256)
KH_DECODE_FP8_EXTERN(F16Tag, 128)
KH_DECODE_FP8_EXTERN(F16Tag, 256)

namespace {

template <typename Tag>
cudaError_t run_split(const DecodeParams& p, const Fp8VarlenArgs& va, int row_tiles, int splits, cudaStream_t s) {
  return decode_fp8_bucket(p.head_dim) == 128 ? run_decode_fp8_split<Tag, 128>(p, va, row_tiles, splits, s)
                                               : run_decode_fp8_split<Tag, 256>(p, va, row_tiles, splits, s);
}

template <typename Tag>
int occupancy(int head_dim) {
  return decode_fp8_bucket(head_dim) == 128 ? decode_fp8_occupancy<Tag, 128>() : decode_fp8_occupancy<Tag, 256>();
}

// Resident CTAs of the kernel on the device, cached per (device, dtype, bucket): the first call asks
// the runtime, later ones (graph captures among them) read the cache.
int resident_ctas(int device, bool bf16, int head_dim) {
  constexpr int kDevices = 64;
  static std::atomic<int> cache[kDevices][2][2];
  const int bi = decode_fp8_bucket(head_dim) == 128 ? 0 : 1;
  std::atomic<int>* slot = device >= 0 && device < kDevices ? &cache[device][bf16][bi] : nullptr;
  if (slot != nullptr) {
    const int v = slot->load(std::memory_order_relaxed);
    if (v > 0) return v;
  }
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0) sms = 1;
  const int per_sm = bf16 ? occupancy<Bf16Tag>(head_dim) : occupancy<F16Tag>(head_dim);
  const int v = sms * (per_sm > 0 ? per_sm : 1);
  if (slot != nullptr) slot->store(v, std::memory_order_relaxed);
  return v;
}

// The split count in [1, smax] whose CTAs fill the resident slots best (CTAs / (waves x slots)):
// the first that reaches 95%, else the best (attention_decode_cuda.cu's best_split).
int64_t best_split(int64_t units, int64_t slots, int64_t smax) {
  int64_t best = 1;
  double best_fill = -1.0;
  for (int64_t s = 1; s <= smax; ++s) {
    const int64_t ctas = units * s, waves = (ctas + slots - 1) / slots;
    const double fill = static_cast<double>(ctas) / static_cast<double>(waves * slots);
    if (fill > best_fill + 1e-9) best_fill = fill, best = s;
    if (fill >= 0.95) break;
  }
  return best;
}

}  // namespace

cudaError_t launch_decode_fp8(const DecodeParams& p, cudaStream_t stream) {
  const bool bf16 = p.dtype == ElementType::kBF16;
  const int rows = p.q_len * (p.heads_q / p.heads_kv);
  const int row_tiles = (rows + kDecodeFp8RowsPerCta - 1) / kDecodeFp8RowsPerCta;
  const int64_t units = static_cast<int64_t>(p.batch) * p.heads_kv * row_tiles;
  const int splits = static_cast<int>(best_split(units, resident_ctas(p.device_id, bf16, p.head_dim), p.max_splits()));
  const Fp8VarlenArgs paged;
  cudaError_t err = bf16 ? run_split<Bf16Tag>(p, paged, row_tiles, splits, stream)
                         : run_split<F16Tag>(p, paged, row_tiles, splits, stream);
  if (err != cudaSuccess || splits == 1) return err;
#if defined(KH_ATTENTION_SM90A)
  constexpr bool kDependent = true;  // the split kernel lets the combine grid start early (griddepcontrol)
#else
  constexpr bool kDependent = false;
#endif
  return run_decode_combine(p, splits, kDependent, stream);
}

cudaError_t launch_varlen_fp8(const DecodeParams& p, const Fp8VarlenArgs& va, cudaStream_t stream) {
  const int rows = va.max_q * (p.heads_q / p.heads_kv);
  const int row_tiles = (rows + kDecodeFp8RowsPerCta - 1) / kDecodeFp8RowsPerCta;
  return p.dtype == ElementType::kBF16 ? run_split<Bf16Tag>(p, va, row_tiles, 1, stream)
                                       : run_split<F16Tag>(p, va, row_tiles, 1, stream);
}

}  // namespace decode
}  // namespace kh_attention
