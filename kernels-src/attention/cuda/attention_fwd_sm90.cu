// attention_fwd_sm90.cu: the sm90a path's host side: builds the TMA tensor maps of q, k and v
// (through the driver's cuTensorMapEncodeTiled, reached via the runtime so the library links
// no libcuda) with the boxes of the call's head-dim bucket, and picks the compiled
// instantiation for the call's head dims and dtype.
#include <algorithm>
#include <atomic>

#include "attention_experiments.hpp"
#include "attention_fwd_sm90.hpp"

namespace kh_attention::sm90 {

EncodeTiledFn encode_tiled() {
  static const EncodeTiledFn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      return static_cast<EncodeTiledFn>(nullptr);
    return reinterpret_cast<EncodeTiledFn>(f);
  }();
  return fn;
}

namespace {

// The element type of a tensor map: 16-bit floats (swizzled boxes of `swizzle` bytes a row), or
// (FP8) bytes, swizzled or (swizzle 0) not.
struct TmaElement {
  CUtensorMapDataType type;
  int bytes;
};
TmaElement tma_element(ElementType dtype) {
  return {dtype == ElementType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2};
}
constexpr TmaElement kTmaBytes{CU_TENSOR_MAP_DATA_TYPE_UINT8, 1};

// A 4-D map of a (batch, seq, heads, head_dim) tensor: dim 0 is head_dim, then row, head and
// batch ordered by stride (smallest first, as TMA expects); boxes are box_cols x box_rows,
// swizzled by `swizzle` bytes (128, 64, 32; 0: none). A packed (varlen) tensor is the same with
// a batch of 1 (its stride only has to be valid).
bool encode(CUtensorMap* map, TmaDimOrder* order, const void* data, TmaElement elem, int swizzle, int64_t head_dim,
            int64_t rows, int64_t heads, int64_t batch, int64_t row_stride, int64_t head_stride, int64_t batch_stride,
            int box_cols, int box_rows) {
  const EncodeTiledFn fn = encode_tiled();
  if (fn == nullptr || rows < 1) return false;
  if (batch_stride <= 0) batch_stride = std::max(rows * row_stride, heads * head_stride);
  struct Dim {
    int64_t size, stride;
    int which;  // 0 row, 1 head, 2 batch
  } outer[3] = {{rows, row_stride, 0}, {heads, head_stride, 1}, {batch, batch_stride, 2}};
  std::stable_sort(outer, outer + 3, [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
  cuuint64_t dims[4] = {static_cast<cuuint64_t>(head_dim), 0, 0, 0};
  cuuint64_t strides[3];
  cuuint32_t box[4] = {static_cast<cuuint32_t>(box_cols), 1, 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  for (int i = 0; i < 3; ++i) {
    dims[i + 1] = static_cast<cuuint64_t>(outer[i].size);
    strides[i] = static_cast<cuuint64_t>(outer[i].stride) * elem.bytes;
    if (outer[i].which == 0) {
      box[i + 1] = static_cast<cuuint32_t>(box_rows);
      order->row = i + 1;
    } else if (outer[i].which == 1) {
      order->head = i + 1;
    } else {
      order->batch = i + 1;
    }
  }
  const CUtensorMapSwizzle swz = swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                : swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                : swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                : CU_TENSOR_MAP_SWIZZLE_NONE;
  return fn(map, elem.type, 4, const_cast<void*>(data), dims, strides, box, elem_strides,
            CU_TENSOR_MAP_INTERLEAVE_NONE, swz, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// FP8 with a workspace: the 3-D map of V transposed there (attention_fp8_vt.hpp): columns (bytes
// of keys), head-dim rows, KV heads; boxes of `box_cols` key bytes x `box_rows` rows, swizzled
// by box_cols bytes (rows past head_dim_v come as zeros, as the bucket's wider Vt stage needs).
bool encode_vt(CUtensorMap* map, const FwdLaunchParams& p, int box_cols, int box_rows) {
  const EncodeTiledFn fn = encode_tiled();
  if (fn == nullptr) return false;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(p.vt_columns), static_cast<cuuint64_t>(p.head_dim_v),
                              static_cast<cuuint64_t>(p.heads_kv)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(p.vt_columns),
                                 static_cast<cuuint64_t>(p.vt_columns) * static_cast<cuuint64_t>(p.head_dim_v)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUtensorMapSwizzle swz = box_cols == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                 : box_cols == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                                  : CU_TENSOR_MAP_SWIZZLE_32B;
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, p.vt, dims, strides, box, elem_strides,
            CU_TENSOR_MAP_INTERLEAVE_NONE, swz, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <int kQKDim, int kVDim, ElementType kType>
cudaError_t run_bucket(const FwdLaunchParams& p, cudaStream_t stream) {
  using Cfg = Sm90TileConfig<kQKDim, kVDim>;
  const bool varlen = p.cu_seqlens_q != nullptr;
  // attention_fwd: (batch, seqlen, heads, dim); varlen: (1, total, heads, dim).
  const int64_t q_rows = varlen ? p.total_q : p.seqlen_q, k_rows = varlen ? p.total_k : p.seqlen_k;
  const int64_t batch = varlen ? 1 : p.batch;
  const TmaElement elem = tma_element(p.dtype);
  FwdTensorMaps maps{};
  if (!encode(&maps.q, &maps.q_order, p.q, elem, Cfg::kSwizzleQK, p.head_dim, q_rows, p.heads_q, batch,
              p.q_row_stride, p.q_head_stride, p.q_batch_stride, Cfg::kSwizzleQK / 2, Cfg::kBlockM) ||
      !encode(&maps.k, &maps.k_order, p.k, elem, Cfg::kSwizzleQK, p.head_dim, k_rows, p.heads_kv, batch,
              p.k_row_stride, p.k_head_stride, p.k_batch_stride, Cfg::kSwizzleQK / 2, Cfg::kBlockN) ||
      !encode(&maps.v, &maps.v_order, p.v, elem, Cfg::kSwizzleV, p.head_dim_v, k_rows, p.heads_kv, batch,
              p.v_row_stride, p.v_head_stride, p.v_batch_stride, Cfg::kSwizzleV / 2, Cfg::kBlockN))
    return cudaErrorNotSupported;
  return run_attention_fwd_sm90_instance<kQKDim, kVDim, kType>(p, maps, stream);
}

// FP8: q, k and v in boxes of their swizzle's bytes (= columns). Packed tensors (varlen) only. With
// no key at all (total_k 0) the kernel loads no K or V (every tile has no key block and writes 0
// and -inf): their maps then describe one row of q, which is never read.
template <int kDim, ElementType kOutType>
cudaError_t run_fp8_bucket(const FwdLaunchParams& p, cudaStream_t stream) {
  using Cfg = Sm90TileConfig<kDim, kDim, 1>;
  const bool keys = p.total_k > 0;
  const void* const k = keys ? p.k : p.q;
  const void* const v = keys ? p.v : p.q;
  const int64_t k_rows = keys ? p.total_k : 1;
  FwdTensorMaps maps{};
  if (!encode(&maps.q, &maps.q_order, p.q, kTmaBytes, Cfg::kSwizzleQK, p.head_dim, p.total_q, p.heads_q, 1,
              p.q_row_stride, p.q_head_stride, 0, Cfg::kSwizzleQK, Cfg::kBlockM) ||
      !encode(&maps.k, &maps.k_order, k, kTmaBytes, Cfg::kSwizzleQK, p.head_dim, k_rows, p.heads_kv, 1,
              keys ? p.k_row_stride : p.q_row_stride, keys ? p.k_head_stride : p.q_head_stride, 0, Cfg::kSwizzleQK,
              Cfg::kBlockN) ||
      !encode(&maps.v, &maps.v_order, v, kTmaBytes, Cfg::kSwizzleV, p.head_dim_v, k_rows, p.heads_kv, 1,
              keys ? p.v_row_stride : p.q_row_stride, keys ? p.v_head_stride : p.q_head_stride, 0, Cfg::kSwizzleV,
              Cfg::kVKeys))
    return cudaErrorNotSupported;
  // With a workspace and keys to transpose: the pre-pass first (same stream), then the kernel.
  FwdLaunchParams launch = p;
  if (!keys) launch.vt = nullptr;
  if (launch.vt != nullptr) {
    if (!encode_vt(&maps.vt, launch, Cfg::kSwizzleVt, kDim)) return cudaErrorNotSupported;
    const cudaError_t err = launch_fp8_vt_prepass(launch, stream);
    if (err != cudaSuccess) return err;
  }
  return run_attention_fwd_sm90_fp8_instance<kDim, kOutType>(launch, maps, stream);
}

template <int kDim>
cudaError_t run_fp8_typed(const FwdLaunchParams& p, cudaStream_t stream) {
  return p.dtype == ElementType::kBF16 ? run_fp8_bucket<kDim, ElementType::kBF16>(p, stream)
                                       : run_fp8_bucket<kDim, ElementType::kF16>(p, stream);
}

}  // namespace

int sm90_sm_count() {
  static std::atomic<int> counts[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 132;
  if (dev < 0 || dev >= 64) dev = 0;
  int n = counts[dev].load(std::memory_order_relaxed);
  if (n == 0) {
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) n = 132;
    counts[dev].store(n, std::memory_order_relaxed);
  }
  return n;
}

// Development builds read these at each call (one environment read; the only callers are the
// launches of varlen calls), so that one probe process can time both paths, set between calls.
bool sm90_varlen_persistent() { return experiments::flag("KH_ATTENTION_VARLEN_PERSISTENT", true); }

bool sm90_varlen_pair_list() { return experiments::flag("KH_ATTENTION_VARLEN_PAIRS", true); }

cudaError_t run_attention_fwd_sm90_fp8(const FwdLaunchParams& p, cudaStream_t stream) {
  if (p.head_dim != p.head_dim_v) return cudaErrorInvalidValue;
  return p.head_dim <= 64 ? run_fp8_typed<64>(p, stream) : p.head_dim <= 128 ? run_fp8_typed<128>(p, stream)
         : p.head_dim <= 256 ? run_fp8_typed<256>(p, stream) : cudaErrorInvalidValue;
}

cudaError_t run_attention_fwd_sm90(const FwdLaunchParams& p, cudaStream_t stream) {
  // An empty key range (seqlen_k 0, every packed k empty) has no rows a tensor map can hold;
  // the sm80 kernel writes its zeros and -inf.
  if ((p.cu_seqlens_q != nullptr ? p.total_k : p.seqlen_k) < 1) return cudaErrorNotSupported;
  const cudaError_t err = with_cuda_fwd_bucket(p, [&](auto qk, auto v, auto type) {
    return run_bucket<decltype(qk)::value, decltype(v)::value, decltype(type)::value>(p, stream);
  });
  return err == cudaErrorInvalidValue ? cudaErrorNotSupported : err;
}

}  // namespace kh_attention::sm90
