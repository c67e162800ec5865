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

// A 4-D map of a (batch, seq, heads, head_dim) tensor: dim 0 is head_dim, then row, head and
// batch ordered by stride (smallest first, as TMA expects); boxes are box_cols x box_rows,
// swizzled by box_cols * 2 bytes (128, 64 or 32). A packed (varlen) tensor is the same with a
// batch of 1 (its stride only has to be valid).
bool encode(CUtensorMap* map, TmaDimOrder* order, const void* data, ElementType dtype, int64_t head_dim,
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
    strides[i] = static_cast<cuuint64_t>(outer[i].stride) * 2;
    if (outer[i].which == 0) {
      box[i + 1] = static_cast<cuuint32_t>(box_rows);
      order->row = i + 1;
    } else if (outer[i].which == 1) {
      order->head = i + 1;
    } else {
      order->batch = i + 1;
    }
  }
  const CUtensorMapDataType type =
      dtype == ElementType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUtensorMapSwizzle swizzle = box_cols == 64   ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : box_cols == 32 ? CU_TENSOR_MAP_SWIZZLE_64B
                                                      : CU_TENSOR_MAP_SWIZZLE_32B;
  return fn(map, type, 4, const_cast<void*>(data), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <int kQKDim, int kVDim, ElementType kType>
cudaError_t run_bucket(const FwdLaunchParams& p, cudaStream_t stream) {
  using Cfg = Sm90TileConfig<kQKDim, kVDim>;
  const bool varlen = p.cu_seqlens_q != nullptr;
  // attention_fwd: (batch, seqlen, heads, dim); varlen: (1, total, heads, dim).
  const int64_t q_rows = varlen ? p.total_q : p.seqlen_q, k_rows = varlen ? p.total_k : p.seqlen_k;
  const int64_t batch = varlen ? 1 : p.batch;
  FwdTensorMaps maps{};
  if (!encode(&maps.q, &maps.q_order, p.q, p.dtype, p.head_dim, q_rows, p.heads_q, batch, p.q_row_stride,
              p.q_head_stride, p.q_batch_stride, Cfg::kSwizzleQK / 2, Cfg::kBlockM) ||
      !encode(&maps.k, &maps.k_order, p.k, p.dtype, p.head_dim, k_rows, p.heads_kv, batch, p.k_row_stride,
              p.k_head_stride, p.k_batch_stride, Cfg::kSwizzleQK / 2, Cfg::kBlockN) ||
      !encode(&maps.v, &maps.v_order, p.v, p.dtype, p.head_dim_v, k_rows, p.heads_kv, batch, p.v_row_stride,
              p.v_head_stride, p.v_batch_stride, Cfg::kSwizzleV / 2, Cfg::kBlockN))
    return cudaErrorNotSupported;
  return run_attention_fwd_sm90_instance<kQKDim, kVDim, kType>(p, maps, stream);
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
