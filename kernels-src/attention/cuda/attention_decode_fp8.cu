// attention_decode_fp8.cu: the plans of the FP8-cache kernel (attention_decode_fp8.cuh): the split
// count of an attention_decode_paged_fp8 call and its CTA width (the bf16 kernels' rules: the count
// within the workspace's max_splits whose CTAs fill the device's resident slots best, from the
// shapes and the device only, never from seq_lens; the wide CTA where it needs no split and 4-warp
// CTAs would, or where many full waves of it with the TMA ring fill the device), the launches, the
// combine; and the packed (varlen) mode's grid. No allocation, no host synchronisation, no copy:
// graph-safe.
#include <atomic>

#include "attention_decode.hpp"
#include "attention_decode_fp8_launch.hpp"
#include "attention_decode_tma.cuh"  // DecodeTma
#include "attention_dram_pace.hpp"
#include "attention_experiments.hpp"

namespace kh_attention {
namespace decode {

KH_DECODE_FP8_EXTERN(Bf16Tag, 128, kDecodeFp8Warps)
KH_DECODE_FP8_EXTERN(Bf16Tag, 256, kDecodeFp8Warps)
KH_DECODE_FP8_EXTERN(F16Tag, 128, kDecodeFp8Warps)
KH_DECODE_FP8_EXTERN(F16Tag, 256, kDecodeFp8Warps)
KH_DECODE_FP8_EXTERN(Bf16Tag, 128, kDecodeFp8WideWarps)
KH_DECODE_FP8_EXTERN(F16Tag, 128, kDecodeFp8WideWarps)
#if defined(KH_ATTENTION_SM90A)
KH_DECODE_FP8_EXTERN_TMA(Bf16Tag, 128, kDecodeFp8Warps)
KH_DECODE_FP8_EXTERN_TMA(F16Tag, 128, kDecodeFp8Warps)
KH_DECODE_FP8_EXTERN_TMA(Bf16Tag, 128, kDecodeFp8WideWarps)
KH_DECODE_FP8_EXTERN_TMA(F16Tag, 128, kDecodeFp8WideWarps)
#endif

namespace {

// wide: the wide CTA (the 128 bucket only; the plan never asks for it at 256). tma: the caches'
// maps for the TMA rings (the 128 bucket, sm90a), or null for cp.async.
template <typename Tag>
cudaError_t run_split(const DecodeParams& p, const Fp8VarlenArgs& va, int row_tiles, int splits, bool wide,
                      const DecodeTma* tma, cudaStream_t s) {
  constexpr int kNarrow = kDecodeFp8Warps, kWide = kDecodeFp8WideWarps;
  const DecodeTma none{};
  if (decode_fp8_bucket(p.head_dim) == 256)
    return run_decode_fp8_split<Tag, 256, kNarrow, false>(p, va, row_tiles, splits, none, s);
#if defined(KH_ATTENTION_SM90A)
  if (tma != nullptr)
    return wide ? run_decode_fp8_split<Tag, 128, kWide, true>(p, va, row_tiles, splits, *tma, s)
                : run_decode_fp8_split<Tag, 128, kNarrow, true>(p, va, row_tiles, splits, *tma, s);
#else
  (void)tma;
#endif
  return wide ? run_decode_fp8_split<Tag, 128, kWide, false>(p, va, row_tiles, splits, none, s)
              : run_decode_fp8_split<Tag, 128, kNarrow, false>(p, va, row_tiles, splits, none, s);
}

template <typename Tag>
int occupancy(int head_dim, bool wide) {
  constexpr int kNarrow = kDecodeFp8Warps, kWide = kDecodeFp8WideWarps;
  if (decode_fp8_bucket(head_dim) == 256) return wide ? 0 : decode_fp8_occupancy<Tag, 256, kNarrow>();
  return wide ? decode_fp8_occupancy<Tag, 128, kWide>() : decode_fp8_occupancy<Tag, 128, kNarrow>();
}

// Resident CTAs of the kernel on the device, cached per (device, dtype, bucket, width): the first
// call asks the runtime, later ones (graph captures among them) read the cache. 0 for a wide CTA
// that does not exist (the 256 bucket) or does not fit (cached as -1).
int resident_ctas(int device, bool bf16, int head_dim, bool wide) {
  constexpr int kDevices = 64;
  static std::atomic<int> cache[kDevices][2][2][2];
  const int bi = decode_fp8_bucket(head_dim) == 128 ? 0 : 1;
  std::atomic<int>* slot = device >= 0 && device < kDevices ? &cache[device][bf16][bi][wide] : nullptr;
  if (slot != nullptr) {
    const int v = slot->load(std::memory_order_relaxed);
    if (v != 0) return v > 0 ? v : 0;
  }
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0) sms = 1;
  const int per_sm = bf16 ? occupancy<Bf16Tag>(head_dim, wide) : occupancy<F16Tag>(head_dim, wide);
  const int v = wide ? sms * per_sm : sms * (per_sm > 0 ? per_sm : 1);
  if (slot != nullptr) slot->store(v > 0 ? v : -1, std::memory_order_relaxed);
  return v;
}

// Whether the wide CTA keeps pace with the device's DRAM (attention_dram_pace.hpp: not on an
// H200, where it lost 18-31%), cached per device as above.
bool wide_keeps_pace(int device) {
  constexpr int kDevices = 64;
  static std::atomic<int> cache[kDevices];  // 0 unknown, 1 yes, -1 no
  std::atomic<int>* slot = device >= 0 && device < kDevices ? &cache[device] : nullptr;
  if (slot != nullptr) {
    const int v = slot->load(std::memory_order_relaxed);
    if (v != 0) return v > 0;
  }
  int khz = 0, bits = 0, sms = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess) khz = 0;
  if (cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess) bits = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) sms = 0;
  const bool yes = wide_cta_keeps_pace(khz, bits, sms);
  if (slot != nullptr) slot->store(yes ? 1 : -1, std::memory_order_relaxed);
  return yes;
}

}  // namespace

cudaError_t launch_decode_fp8(const DecodeParams& p, cudaStream_t stream) {
  const bool bf16 = p.dtype == ElementType::kBF16;
  const int rows = p.q_len * (p.heads_q / p.heads_kv);
  const int row_tiles = (rows + kDecodeFp8RowsPerCta - 1) / kDecodeFp8RowsPerCta;
  const int64_t units = static_cast<int64_t>(p.batch) * p.heads_kv * row_tiles;
  const int64_t smax = p.max_splits();
  int64_t splits = best_split(units, resident_ctas(p.device_id, bf16, p.head_dim, false), smax).splits;
  // The 4-warp CTAs' rings filled by TMA (sm90a; encode_cache_maps is false elsewhere) at head
  // dim 128 with cache blocks of >= 16 rows (a tile's 16 rows in one block). H100, A/B in one run
  // (cuda/NOTES.md "FP8 decode rings filled by TMA"): b64 x 8k 382.3 -> 370.1 us, b128 x 4k 378.0
  // -> 371.5; the wide CTA's one wave gained 1 us at b16 x 4k but lost 8% at b16 x 32k (356.6 ->
  // 384.2), so it keeps cp.async there. A development build's KH_ATTENTION_DECODE_TMA=0|1: never /
  // both widths (comparisons). The maps are encoded once it is known they are wanted.
  static const int tma_mode = experiments::mode("KH_ATTENTION_DECODE_TMA");
  const bool tma_shape = tma_mode != 0 && p.head_dim == 128 && p.block_shift >= 4;
  DecodeTma maps;
  int maps_state = 0;  // 0 not tried, 1 encoded, -1 refused
  auto maps_ready = [&]() {
    if (maps_state == 0) maps_state = tma_shape && encode_cache_maps(&maps, p, true) ? 1 : -1;
    return maps_state == 1;
  };
  // The wide CTA, unsplit, where 4-warp CTAs would split and whole waves of it fill the device: no
  // partials, no combine kernel. One full wave always (H100, GQA 32/8 d128: b16 x 4k 63.9 -> 59.7
  // us, b16 x 32k 411.9 -> 381.4); two full waves (b32 x 8 kv heads) where the table holds >= 8192
  // keys, as shorter sequences lost (H100, 2026-12-07, two rounds in one run: b32 x 32k 775.5 ->
  // 735.4, b32 x 16k 402.9 -> 377.4, b32 x 8k 206.9 -> 198.8, b32 x 4k even, b32 x 2k 60.4 ->
  // 62.9). Where 4-warp CTAs need no split, or its waves are partly empty, it lost with cp.async
  // (b128 x 4k 390 -> 411, b40 x 8k 252 -> 265, b20 x 16k 252 -> 265; b64 x 8k even: cuda/NOTES.md
  // "FP8"). But with the TMA ring, unsplit, where >= 6 full waves of it fill the device, it gains
  // (cuda/NOTES.md "The wide CTA with TMA at many waves"; H100, the release build against the one
  // before, two rounds in one run): b96 x 4k 285.7 -> 278.7 us, b128 x 4k 372.3 -> 365.6, b96 x 8k
  // 558.5 -> 549.5, b192 x 2k 279.8 -> 275.7, b256 x 2k 372.2 -> 359.5; forced at 3-4 waves it
  // lost or tied (b48 x 8k 298.6 -> 301.1, b64 x 8k 391.5 -> 394.3). Only on devices whose DRAM it
  // keeps pace with (wide_keeps_pace: not the H200). A development build's
  // KH_ATTENTION_DECODE_WIDE=0|1: never / wherever it exists (comparisons).
  static const int wide_mode = experiments::mode("KH_ATTENTION_DECODE_WIDE");
  constexpr int64_t kWideWavesMinKeys = 8192;
  constexpr int64_t kWideTmaMinWaves = 6;
  bool wide = false, wide_tma = false;
  if (wide_mode != 0) {
    const int64_t wide_slots = resident_ctas(p.device_id, bf16, p.head_dim, true);
    const int64_t waves = wide_slots > 0 ? (units + wide_slots - 1) / wide_slots : 0;
    const bool full_waves =
        waves > 0 && static_cast<double>(units) >= 0.95 * static_cast<double>(waves * wide_slots);
    const bool keeps_pace = wide_keeps_pace(p.device_id);
    const bool paced = full_waves && keeps_pace;
    const bool few_waves =
        splits > 1 && full_waves && (waves == 1 || (waves == 2 && p.max_kv() >= kWideWavesMinKeys));
    const bool unsplit = few_waves && keeps_pace;
    // Where the cp.async ring does not keep pace (the H200), the TMA ring does at the same one or
    // two full waves (H200, release against the wide CTA with TMA forced, two rounds in one run:
    // b16 x 4k 45.0 -> 41.6 us, b16 x 32k 284.8 -> 260.6 (0.99 of the copy floor), b32 x 8k 146.5
    // -> 141.0, b32 x 32k 548.0 -> 510.4, but b32 x 4k 77.3 -> 79.2); at 4-8 waves it lost there
    // (b64 x 8k 270.5 -> 274.1, b128 x 4k 271.4 -> 286.9, b256 x 2k 270.2 -> 313.9): cuda/NOTES.md
    // "The wide CTA with TMA on an H200".
    const bool unsplit_tma = few_waves && !keeps_pace && maps_ready();
    wide_tma = (paced && waves >= kWideTmaMinWaves && maps_ready()) || unsplit_tma;
    if (wide_slots > 0 && (wide_mode == 1 || unsplit || wide_tma)) {
      wide = true;
      splits = unsplit || wide_tma || (full_waves && waves == 1) ? 1 : best_split(units, wide_slots, smax).splits;
    }
  }
  const bool tma_width = tma_mode == 1 || !wide || wide_tma;
  const DecodeTma* tma = tma_width && maps_ready() ? &maps : nullptr;
  const Fp8VarlenArgs paged;
  const int n = static_cast<int>(splits);
  cudaError_t err = bf16 ? run_split<Bf16Tag>(p, paged, row_tiles, n, wide, tma, stream)
                         : run_split<F16Tag>(p, paged, row_tiles, n, wide, tma, stream);
  if (err != cudaSuccess || n == 1) return err;
#if defined(KH_ATTENTION_SM90A)
  constexpr bool kDependent = true;  // the split kernel lets the combine grid start early (griddepcontrol)
#else
  constexpr bool kDependent = false;
#endif
  return run_decode_combine(p, n, kDependent, stream);
}

cudaError_t launch_varlen_fp8(const DecodeParams& p, const Fp8VarlenArgs& va, cudaStream_t stream) {
  const int rows = va.max_q * (p.heads_q / p.heads_kv);
  const int row_tiles = (rows + kDecodeFp8RowsPerCta - 1) / kDecodeFp8RowsPerCta;
  return p.dtype == ElementType::kBF16 ? run_split<Bf16Tag>(p, va, row_tiles, 1, false, nullptr, stream)
                                       : run_split<F16Tag>(p, va, row_tiles, 1, false, nullptr, stream);
}

}  // namespace decode
}  // namespace kh_attention
