// attention_decode_cuda.cu: attention_decode_paged on CUDA after the shared argument rules: the
// alignment and grid checks, the split-KV heuristic, the split kernel (one instantiation per
// dtype and lane-group width, attention_decode_<dtype>_tpr<N>.cu) and the combine kernel.
// Everything is decided from shapes and device properties (cached), never from seq_lens'
// values: no host synchronisation, no allocation, no copy; safe inside CUDA graph capture. (A
// development build also reads the comparison switches of attention_experiments.hpp.)
#include "attention_decode.cuh"
#include "attention_decode_launch.hpp"
#include "attention_experiments.hpp"
#if defined(KH_ATTENTION_SM90A)
#include "attention_fwd_sm90.hpp"  // encode_tiled
#endif

#include <algorithm>
#include <atomic>
#include <cstring>

namespace kh_attention {
namespace decode {

KH_DECODE_EXTERN_ALL(Bf16Tag)
KH_DECODE_EXTERN_ALL(F16Tag)

// dependent: launched as a programmatic dependent of the split kernel just queued (sm90): the
// combine grid is scheduled while the split kernel's last CTAs finish, instead of after.
template <typename Kernel, typename... Args>
cudaError_t launch_combine(Kernel kernel, dim3 grid, bool dependent, cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = dim3(kCombineThreads);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attr;
  config.numAttrs = dependent ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

cudaError_t run_decode_combine(const DecodeParams& p, int num_splits, bool dependent, cudaStream_t stream) {
  const CombineShape shape = decode_combine_shape(p, num_splits);
  const int wpr = shape.warps_per_row;
  const dim3 grid(static_cast<unsigned>(shape.blocks));
  if (p.dtype == ElementType::kBF16)
    return launch_combine(decode_combine_kernel<Bf16Tag>, grid, dependent, stream, p, num_splits, wpr);
  return launch_combine(decode_combine_kernel<F16Tag>, grid, dependent, stream, p, num_splits, wpr);
}

// After the balanced grid of `grid` CTAs: a column of combine CTAs a share's record (a group of
// heads_kv CTAs a share), one warp a row of the recorded sequence (y is at most 65535; past it the
// warps take more rows).
cudaError_t run_balanced_combine(const DecodeParams& p, int grid, int slots, bool dependent, cudaStream_t stream) {
  const int64_t rows = static_cast<int64_t>(p.q_len) * p.heads_q;
  const int64_t y = std::min<int64_t>((rows + kCombineWarps - 1) / kCombineWarps, 65535);
  const dim3 combine_grid(static_cast<unsigned>(grid / p.heads_kv), static_cast<unsigned>(y));
  if (p.dtype == ElementType::kBF16)
    return launch_combine(decode_balanced_combine_kernel<Bf16Tag>, combine_grid, dependent, stream, p, slots);
  return launch_combine(decode_balanced_combine_kernel<F16Tag>, combine_grid, dependent, stream, p, slots);
}

namespace {

int lane_group_width(int head_dim) { return head_dim <= 32 ? 4 : head_dim <= 64 ? 8 : head_dim <= 128 ? 16 : 32; }

// The split kernel: the staged one (a development build's KH_ATTENTION_DECODE_VARIANT=tcpv|simt
// runs the register kernel at every head dim, or the CUDA-core kernel, the HIP kernel's design).
int variant() {
  static const int v = [] {
    const char* s = experiments::text("KH_ATTENTION_DECODE_VARIANT");
    if (s != nullptr && std::strcmp(s, "tcpv") == 0) return kVariantTensorPv;
    if (s != nullptr && std::strcmp(s, "simt") == 0) return kVariantSimt;
    return kVariantStaged;
  }();
  return v;
}

// The split kernel of a call: the process's variant, except at head dims 136-192 on devices where
// the staged kernel's 192 bucket (100 KiB of shared memory a CTA) holds fewer than 2 CTAs an SM:
// it was measured at 2 (sm90: 0.94 of the copy floor against the register kernel's 0.72) and a
// ring at 1 CTA an SM lost to the register kernel (the staged 256 of cuda/NOTES.md "Decode", head
// dims: 0.61 against 0.86). sm80 parts hold 1 (164 KiB an SM) and sm86/sm89 none (99 KiB a CTA):
// they keep the register kernel, as head dims above 192 do everywhere. Cached per device.
int call_variant(int device, bool bf16, int tpr, int rows, int head_dim) {
  const int v = variant();
  if (v != kVariantStaged || tpr < 32 || head_dim > kStagedDim<32>) return v;
  static std::atomic<int> cache[64][2][2];
  std::atomic<int>* slot = device >= 0 && device < 64 ? &cache[device][bf16][rows == 4 ? 0 : 1] : nullptr;
  // 0 = not asked yet; a bucket that does not fit at all (sm86/sm89) is cached as -1.
  int per_sm = slot != nullptr ? slot->load(std::memory_order_relaxed) : 0;
  if (per_sm == 0) {
    per_sm = bf16 ? decode_split_occupancy<Bf16Tag, 32>(rows, head_dim, kVariantStaged, false, false)
                  : decode_split_occupancy<F16Tag, 32>(rows, head_dim, kVariantStaged, false, false);
    if (per_sm <= 0) per_sm = -1;
    if (slot != nullptr) slot->store(per_sm, std::memory_order_relaxed);
  }
  return per_sm >= 2 ? v : kVariantTensorPv;
}

template <typename Tag>
cudaError_t run_split(const DecodeParams& p, const DecodePlan& plan, const DecodeTma* tma, cudaStream_t s) {
  const int rows = plan.rows, row_tiles = plan.row_tiles, v = plan.variant, bg = plan.balanced_grid;
  // The balanced grid's "splits" are the workspace's slots a row.
  const int splits = bg > 0 ? static_cast<int>(p.max_splits()) : plan.splits;
  const bool w = plan.wide;
  switch (plan.tpr) {
    case 4: return run_decode_split<Tag, 4>(p, rows, row_tiles, splits, v, w, tma, bg, s);
    case 8: return run_decode_split<Tag, 8>(p, rows, row_tiles, splits, v, w, tma, bg, s);
    case 16: return run_decode_split<Tag, 16>(p, rows, row_tiles, splits, v, w, tma, bg, s);
    default: return run_decode_split<Tag, 32>(p, rows, row_tiles, splits, v, w, tma, bg, s);
  }
}

#if defined(KH_ATTENTION_SM90A)
// The maps' L2 promotion: none (a box row is one whole 128-byte line already). H200, run 8 of
// h200-2026-12-02.md (cuda/NOTES.md "Decode"): 128 B the same, 256 B 7-10% slower.
constexpr CUtensorMapL2promotion kTmaL2Promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;

// A K or V cache as a TMA ring reads it (attention_decode_tma.cuh): false where the driver lacks
// the encoder or refuses the cache's address or strides (TMA wants 16-byte multiples).
bool encode_cache_map(CUtensorMap* map, const void* base, const DecodeParams& p, int64_t head_stride,
                      int64_t row_stride, int64_t block_stride, bool e4m3) {
  const sm90::EncodeTiledFn fn = sm90::encode_tiled();
  if (fn == nullptr) return false;
  const cuuint64_t elem = e4m3 ? 1 : 2;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(p.head_dim), static_cast<cuuint64_t>(p.heads_kv),
                              static_cast<cuuint64_t>(p.block_size), static_cast<cuuint64_t>(p.num_blocks)};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(head_stride) * elem,
                                 static_cast<cuuint64_t>(row_stride) * elem,
                                 static_cast<cuuint64_t>(block_stride) * elem};
  const cuuint32_t box[4] = {static_cast<cuuint32_t>(e4m3 ? kTmaFp8BoxCols : kTmaBoxCols), 1, kTmaBoxRows, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUtensorMapDataType type = e4m3                            ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                   : p.dtype == ElementType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                   : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  return fn(map, type, 4, const_cast<void*>(base), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, kTmaL2Promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
#endif

// The CTA kinds a plan may launch, as cache indices.
enum CtaKind { kNarrowCta = 0, kWideCta = 1, kBalancedCta = 2 };

template <typename Tag>
int occupancy(int tpr, int rows, int head_dim, int v, int kind) {
  const bool wide = kind != kNarrowCta, bal = kind == kBalancedCta;
  switch (tpr) {
    case 4: return decode_split_occupancy<Tag, 4>(rows, head_dim, v, wide, bal);
    case 8: return decode_split_occupancy<Tag, 8>(rows, head_dim, v, wide, bal);
    case 16: return decode_split_occupancy<Tag, 16>(rows, head_dim, v, wide, bal);
    default: return decode_split_occupancy<Tag, 32>(rows, head_dim, v, wide, bal);
  }
}

// Which split kernel a head dim gets, as a cache index: the staged kernel's buckets 32, 64, 128,
// 192, and the register kernel above them.
int head_dim_class(int head_dim) {
  return head_dim <= 32 ? 0 : head_dim <= 64 ? 1 : head_dim <= 128 ? 2 : head_dim <= 192 ? 3 : 4;
}

// CTAs of one split kernel the device holds at once, cached per (device, dtype, head-dim class,
// rows, CTA kind): the first call asks the runtime, later ones (graph captures among them) read
// the cache. 0 only for a wide or balanced CTA that is not built or does not fit (cached as -1).
int resident_ctas(int device, bool bf16, int tpr, int rows, int head_dim, int variant_id, int kind) {
  constexpr int kDevices = 64;
  static std::atomic<int> cache[kDevices][2][5][2][3];
  const int hi = head_dim_class(head_dim), ri = rows == 4 ? 0 : 1;
  const bool wide = kind != kNarrowCta;
  std::atomic<int>* slot = device >= 0 && device < kDevices ? &cache[device][bf16][hi][ri][kind] : nullptr;
  if (slot != nullptr) {
    const int v = slot->load(std::memory_order_relaxed);
    if (v != 0) return std::max(0, v);
  }
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0) sms = 1;
  const int per_sm = bf16 ? occupancy<Bf16Tag>(tpr, rows, head_dim, variant_id, kind)
                          : occupancy<F16Tag>(tpr, rows, head_dim, variant_id, kind);
  const int v = wide ? sms * per_sm : std::max(1, sms * per_sm);
  if (slot != nullptr) slot->store(v > 0 ? v : -1, std::memory_order_relaxed);
  return v;
}

// -1: the rule of plan_decode; a development build's KH_ATTENTION_DECODE_WIDE=0|1: never /
// wherever built and fitting take the wide CTA (comparisons).
int wide_mode() {
  static const int m = experiments::mode("KH_ATTENTION_DECODE_WIDE");
  return m;
}

}  // namespace

bool encode_cache_maps(DecodeTma* maps, const DecodeParams& p, bool e4m3) {
#if defined(KH_ATTENTION_SM90A)
  return encode_cache_map(&maps->k, p.k, p, p.k_head_stride, p.k_row_stride, p.k_block_stride, e4m3) &&
         encode_cache_map(&maps->v, p.v, p, p.v_head_stride, p.v_row_stride, p.v_block_stride, e4m3);
#else
  (void)maps, (void)p, (void)e4m3;
  return false;
#endif
}

DecodePlan plan_decode(const DecodeParams& p, int device) {
  DecodePlan plan;
  plan.tpr = lane_group_width(p.head_dim);
  const int total_rows = p.q_len * (p.heads_q / p.heads_kv);
  plan.rows = total_rows <= 4 ? 4 : 8;
  plan.row_tiles = (total_rows + plan.rows - 1) / plan.rows;
  const bool bf16 = p.dtype == ElementType::kBF16;
  plan.variant = call_variant(device, bf16, plan.tpr, plan.rows, p.head_dim);
  // Split-KV: the split count of best fill (best_split) for CTAs of 4 warps; and, where the wide
  // CTA is built and fits, for it too. The wide CTA is taken where it fills the device with no
  // split while 4-warp CTAs would need several: no partials, no combine kernel (H200, d128:
  // b16 x 4k -5%, b16 x 32k -2.3%, b64 x 8k and b128 x 4k -1.3%, d96 b16 x 8k -12%). With splits
  // it lost at batch 1 x 4k (+5%), hence not taken there (cuda/NOTES.md "Decode", wide CTAs).
  const int64_t units = static_cast<int64_t>(p.batch) * p.heads_kv * plan.row_tiles;
  const int64_t smax = p.max_splits();
  const SplitChoice narrow =
      best_split(units, resident_ctas(device, bf16, plan.tpr, plan.rows, p.head_dim, plan.variant, kNarrowCta), smax);
  int64_t best = narrow.splits;
  const int wm = wide_mode();
  if (wm != 0) {
    const int64_t wide_slots = resident_ctas(device, bf16, plan.tpr, plan.rows, p.head_dim, plan.variant, kWideCta);
    if (wide_slots > 0) {
      const SplitChoice wide = best_split(units, wide_slots, smax);
      if (wm == 1 || (wide.splits == 1 && wide.fill >= 0.95 && narrow.splits > 1)) {
        plan.wide = true;
        best = wide.splits;
      }
    }
  }
  // A development build's KH_ATTENTION_DECODE_SPLITS=<n> (comparisons): n splits, within
  // [1, max_splits].
  static const int64_t forced = experiments::number("KH_ATTENTION_DECODE_SPLITS");
  if (forced > 0) best = std::min<int64_t>(forced, smax);
  plan.splits = static_cast<int>(best);
  // The wide CTA's ring through TMA (sm90a, tiles within one cache block), at head dim 128 only:
  // there b16 x 32k and b128 x 4k took 1.2-1.6% less time (b64 x 8k and b16 x 4k the same), while
  // d96's 192-byte rows, whose boxes straddle lines, took 31-35% more (cuda/NOTES.md "Decode",
  // TMA). A development build's KH_ATTENTION_DECODE_TMA=0 keeps cp.async (comparisons).
  static const bool tma_on = experiments::flag("KH_ATTENTION_DECODE_TMA", true);
  const bool tma_able = kDecodeTmaBuilt && tma_on && p.head_dim == 128 && p.block_shift >= 4;
  plan.tma = tma_able && plan.wide;
  // A plan of one row tile whose ring TMA fills runs on the length-balanced grid
  // (attention_decode_balanced.cuh) of wide CTAs, whatever the split rule above chose, so that a
  // batch of mixed lengths is not as slow as its longest sequence (H200, lengths spread over
  // 2k-32k: b16 277 us against 296, b8 145 against 182, b4 84 against 95; one 32k among 1k ones:
  // b16 68 against 190, b4 54 against 77; its cost on equal lengths: 0-4%, cuda/NOTES.md
  // "Decode"). Not with the cp.async ring (head dims 72-120, the sm80 build): equal lengths then
  // took 10-16% longer (b64 x 8k d80 367 -> 425 us, d96 399 -> 441). Where:
  //  - the batch has two sequences or more: one has nothing to balance, and the grid's fixed
  //    costs (the scan, the combine launch, fewer and longer CTAs) made b1 x 8k 23.8 us against
  //    the plain split's 18.9, b1 x 32k 45.7 against 41.6;
  //  - the table holds >= kBalancedMinKeys keys a sequence: below, the most it can save is small
  //    (no sequence takes longer than ~65 us at b16 x 4k) and its fixed cost (~4 us: the scan of
  //    seq_lens, the combine launch) is 6% of an equal batch;
  //  - its kernel fits, and the workspace has >= 3 slots a row (a sequence is cut into at most
  //    slots - 1 parts, and the last slots hold the shares' records, head_dim / 2 a row: enough
  //    for the grid's groups of heads_kv CTAs, of which there is at least one);
  //  - the batch fits its shared tables, whose int32 tile counts stay below 2^31.
  // A development build's KH_ATTENTION_DECODE_BALANCED=0 / 1: never / regardless of the ring and
  // the table's width (comparisons); its KH_ATTENTION_DECODE_WIDE=0 (no wide CTA) also keeps the
  // plain grid.
  static const int balanced_mode = experiments::mode("KH_ATTENTION_DECODE_BALANCED");
  constexpr int64_t kBalancedMinKeys = 8192;
  const int64_t max_tiles = static_cast<int64_t>(p.batch) * ((p.max_kv() + 15) / 16 + 1);  // all sequences' tiles
  const int64_t records = static_cast<int64_t>(p.batch) * p.q_len * p.heads_q * (p.head_dim / 2);
  const bool balanced_wanted =
      balanced_mode == 1 || (balanced_mode == -1 && tma_able && p.batch >= 2 && p.max_kv() >= kBalancedMinKeys);
  if (balanced_wanted && wm != 0 && forced <= 0 && plan.row_tiles == 1 && smax >= 3 &&
      p.batch <= kBalancedMaxBatch && max_tiles < (int64_t{1} << 31)) {
    const int grid = resident_ctas(device, bf16, plan.tpr, plan.rows, p.head_dim, plan.variant, kBalancedCta);
    // Whole groups only: a CTA past the last group would idle.
    const int groups = grid / p.heads_kv;
    if (groups >= 1 && groups <= records) {
      plan.balanced_grid = groups * p.heads_kv;
      plan.wide = true;
      plan.tma = tma_able;
      plan.splits = 1;  // the grid's own: the shares' parts, combined by its own kernel
    }
  }
  // The combine kernel is a programmatic dependent launch on sm90a (run 6 of cuda/NOTES.md
  // "Decode": 0.8-2.8 us sooner at batch 1 and 16, the same elsewhere); the compute_80 PTX has no
  // griddepcontrol: an ordinary launch there.
#if defined(KH_ATTENTION_SM90A)
  plan.dependent_combine = true;
#endif
  return plan;
}

cudaError_t launch_decode(const DecodeParams& p, const DecodePlan& plan, cudaStream_t stream) {
  const bool bf16 = p.dtype == ElementType::kBF16;
  DecodeTma maps;
  const DecodeTma* tma = plan.tma && encode_cache_maps(&maps, p, false) ? &maps : nullptr;
  cudaError_t err = bf16 ? run_split<Bf16Tag>(p, plan, tma, stream) : run_split<F16Tag>(p, plan, tma, stream);
  if (err != cudaSuccess) return err;
  if (plan.balanced_grid > 0)
    return run_balanced_combine(p, plan.balanced_grid, static_cast<int>(p.max_splits()), plan.dependent_combine,
                                stream);
  if (plan.splits > 1) return run_decode_combine(p, plan.splits, plan.dependent_combine, stream);
  return cudaSuccess;
}

}  // namespace decode
}  // namespace kh_attention
