// attention_cuda.cu: the CUDA backend's op entries. attention_fwd and attention_varlen_fwd
// validate the call with the shared rules (attention_args.hpp), check what the GPU kernels need
// beyond them (16-byte aligned rows, grid and length limits), and launch on the caller's stream
// (kh_call_ctx::stream, NULL: the default stream):
//  - sm80 variant: the FlashAttention-2 style mma.sync kernel (attention_fwd_sm80.cuh);
//  - sm90a variant (KH_ATTENTION_SM90A): the wgmma + TMA kernel (attention_fwd_sm90.cuh), the
//    sm80 kernel for calls whose tensors TMA cannot describe (a development build's
//    KH_ATTENTION_FORCE_SM80=1 picks it always, for comparisons: attention_experiments.hpp).
// attention_decode_paged has its own kernels (attention_decode_launch.hpp). 1.2.0:
// attention_decode_paged_fp8 and attention_varlen_fwd_fp8 (bf16/fp16 q) run the FP8-cache kernel
// (attention_decode_fp8_launch.hpp), paged_kv_cache_write its own (attention_cache_launch.hpp);
// attention_varlen_fwd_fp8 with an e4m3 q (FP8 prefill) runs the sm90a kernel on FP8 wgmma
// (sm90a variant) or is refused before launch (sm80 variant).
#include <cuda_runtime_api.h>

#include <climits>
#include <cstdint>

#include "attention_args.hpp"
#include "attention_cache_args.hpp"
#include "attention_cache_launch.hpp"
#include "attention_decode_args.hpp"
#include "attention_decode_fp8_launch.hpp"
#include "attention_decode_launch.hpp"
#include "attention_experiments.hpp"
#include "attention_fp8_vt.hpp"
#include "attention_fwd_sm80.hpp"
#if defined(KH_ATTENTION_SM90A)
#include "attention_fwd_sm90.hpp"
#endif
#include "attention_ops.hpp"
#include "kh_kernel/args.hpp"

namespace kh_attention {
namespace {

using kh_kernels::OpContext;
using kh_kernels::op_error;

// Makes `device` current for the call and restores the caller's device afterwards; check()
// says, as the op's error, when it could not.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) : device_(device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    status_ = previous_ == device ? cudaSuccess : cudaSetDevice(device);
  }
  ~ScopedDevice() {
    if (previous_ >= 0 && status_ == cudaSuccess) cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  kh_status check(const OpContext& c) const {
    return status_ == cudaSuccess ? KH_OK
                                  : op_error(c, KH_ERROR_DEVICE, "cannot make CUDA device %d current: %s", device_,
                                             cudaGetErrorString(status_));
  }

 private:
  int device_ = 0;
  int previous_ = -1;
  cudaError_t status_ = cudaSuccess;
};

// Grid: (q tiles, heads_q, sequences); y and z are limited to 65535, lengths to int (varlen: a
// quarter of it, so that a window's bound stays inside int), packed rows to TMA's int32.
kh_status check_prefill_limits(const OpContext& c, const AttentionParams& a) {
  const int64_t max_len = a.varlen() ? INT_MAX / 4 : INT_MAX / 2;
  if (a.heads_q > 65535 || a.batch > 65535 || a.seqlen_q > max_len || a.seqlen_k > max_len || a.total_q > INT_MAX ||
      a.total_k > INT_MAX)
    return op_error(c, KH_ERROR_UNSUPPORTED,
                    "shape too large for the CUDA kernel: heads_q %lld and the batch (sequences) %lld must be <= "
                    "65535, sequence lengths (%lld, %lld) <= %lld, packed rows (%lld, %lld) < 2^31",
                    (long long)a.heads_q, (long long)a.batch, (long long)a.seqlen_q, (long long)a.seqlen_k,
                    (long long)max_len, (long long)a.total_q, (long long)a.total_k);
  return KH_OK;
}

// The caller's stream (kh_call_ctx::stream; NULL: the default stream).
cudaStream_t caller_stream(const OpContext& c) { return static_cast<cudaStream_t>(c.ctx ? c.ctx->stream : nullptr); }

kh_status launch(const OpContext& c, const AttentionParams& a) {
  if (cuda_fwd_bucket(static_cast<int>(a.head_dim), static_cast<int>(a.head_dim_v)).qk == 0)
    return op_error(c, KH_ERROR_UNSUPPORTED, "argument 'q': head dims %lld/%lld have no CUDA kernel",
                    (long long)a.head_dim, (long long)a.head_dim_v);
  KH_KERNEL_TRY(check_prefill_limits(c, a));
  const FwdLaunchParams p = launch_params(a);
  if (!fwd_params_aligned(p))
    return op_error(c, KH_ERROR_UNSUPPORTED,
                    "q, k, v and out need 16-byte aligned data pointers and row/head (and batch) strides that are "
                    "multiples of 8 elements (the kernel copies 16-byte chunks); copy the tensors to "
                    "contiguous memory first");

  const ScopedDevice device(a.device.device_id);
  KH_KERNEL_TRY(device.check(c));
  const cudaStream_t stream = caller_stream(c);
  cudaError_t err = cudaErrorNotSupported;
#if defined(KH_ATTENTION_SM90A)
  static const bool force_sm80 = experiments::flag("KH_ATTENTION_FORCE_SM80", false);
  if (!force_sm80) err = sm90::run_attention_fwd_sm90(p, stream);  // NotSupported: not this call
#endif
  if (err == cudaErrorNotSupported) err = sm80::run_attention_fwd_sm80(p, stream);
  if (err != cudaSuccess)
    return op_error(c, err == cudaErrorMemoryAllocation ? KH_ERROR_OUT_OF_MEMORY : KH_ERROR_DEVICE,
                    "kernel launch failed on CUDA device %d: %s (%s)", a.device.device_id, cudaGetErrorName(err),
                    cudaGetErrorString(err));
  return KH_OK;
}

// attention_fwd and attention_varlen_fwd: parse with the op's rules, then the same launch.
template <typename Parse>
kh_status run_prefill(const char* op, const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx, Parse parse) {
  const OpContext c{op, ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&] {
    AttentionParams p;
    KH_KERNEL_TRY(parse(args, nargs, ctx, &p));
    if (p.empty()) return KH_OK;
    return launch(c, p);
  });
}

bool decode_params_aligned(const DecodeParams& p) {
  auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  auto rows_aligned = [](int64_t a, int64_t b, int64_t c) { return a % 8 == 0 && b % 8 == 0 && c % 8 == 0; };
  return aligned(p.q) && aligned(p.k) && aligned(p.v) && aligned(p.out) && aligned(p.workspace) &&
         rows_aligned(p.q_batch_stride, p.q_row_stride, p.q_head_stride) &&
         rows_aligned(p.k_block_stride, p.k_row_stride, p.k_head_stride) &&
         rows_aligned(p.v_block_stride, p.v_row_stride, p.v_head_stride) &&
         rows_aligned(p.o_batch_stride, p.o_row_stride, p.o_head_stride);
}

}  // namespace

kh_status attention_fwd_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return run_prefill("attention_fwd", args, nargs, ctx, parse_attention_fwd_args);
}

kh_status attention_varlen_fwd_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return run_prefill("attention_varlen_fwd", args, nargs, ctx, parse_attention_varlen_fwd_args);
}

}  // namespace kh_attention

namespace kh_attention {

kh_status attention_decode_paged_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const OpContext c{"attention_decode_paged", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&]() -> kh_status {
    DecodeParams p;
    KH_KERNEL_TRY(parse_attention_decode_args(args, nargs, ctx, &p));
    if (p.empty()) return KH_OK;
    if (!decode_params_aligned(p))
      return op_error(c, KH_ERROR_UNSUPPORTED,
                      "q, k_cache, v_cache, out and workspace need 16-byte aligned data pointers, and q, out and "
                      "cache strides that are multiples of 8 elements (the kernel reads 16-byte chunks)");
    const int64_t row_tiles = (static_cast<int64_t>(p.q_len) * (p.heads_q / p.heads_kv) + 3) / 4;
    if (p.batch > 65535 || p.heads_kv * row_tiles > 65535)
      return op_error(c, KH_ERROR_UNSUPPORTED,
                      "shape too large for the CUDA kernel: batch %d and heads_kv x ceil(q_len x group / 4) %lld "
                      "must be <= 65535",
                      p.batch, (long long)(p.heads_kv * row_tiles));
    const int device_id = p.device_id;
    const ScopedDevice device(device_id);
    KH_KERNEL_TRY(device.check(c));
    const cudaStream_t stream = caller_stream(c);
    const decode::DecodePlan plan = decode::plan_decode(p, device_id);
    const cudaError_t err = decode::launch_decode(p, plan, stream);
    if (err != cudaSuccess)
      return op_error(c, KH_ERROR_DEVICE, "kernel launch failed on CUDA device %d: %s (%s)", device_id,
                      cudaGetErrorName(err), cudaGetErrorString(err));
    return KH_OK;
  });
}

}  // namespace kh_attention

// --- 1.2.0: FP8 ---------------------------------------------------------------------------------
namespace kh_attention {
namespace {

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }
bool multiples_of(int64_t n, int64_t a, int64_t b, int64_t c) { return a % n == 0 && b % n == 0 && c % n == 0; }

// The FP8 kernel reads 16-byte chunks: q, out (and the workspace) as the bf16 kernels, the e4m3
// caches' rows at 16-byte multiples (their strides are bytes).
bool fp8_decode_aligned(const DecodeParams& p) {
  return aligned16(p.q) && aligned16(p.k) && aligned16(p.v) && aligned16(p.out) && aligned16(p.workspace) &&
         multiples_of(8, p.q_batch_stride, p.q_row_stride, p.q_head_stride) &&
         multiples_of(8, p.o_batch_stride, p.o_row_stride, p.o_head_stride) &&
         multiples_of(16, p.k_block_stride, p.k_row_stride, p.k_head_stride) &&
         multiples_of(16, p.v_block_stride, p.v_row_stride, p.v_head_stride);
}

kh_status device_error(const OpContext& c, int device_id, cudaError_t err) {
  return op_error(c, err == cudaErrorMemoryAllocation ? KH_ERROR_OUT_OF_MEMORY : KH_ERROR_DEVICE,
                  "kernel launch failed on CUDA device %d: %s (%s)", device_id, cudaGetErrorName(err),
                  cudaGetErrorString(err));
}

// attention_varlen_fwd_fp8 with an e4m3 q: the sm90a kernel on FP8 wgmma (attention_fwd_sm90.cuh);
// the sm80 variant has no FP8 tensor cores and refuses the call before anything is launched.
kh_status fp8_prefill(const OpContext& c, const AttentionParams& a) {
#if defined(KH_ATTENTION_SM90A)
  if (a.empty()) return KH_OK;
  KH_KERNEL_TRY(check_prefill_limits(c, a));
  FwdLaunchParams p = launch_params(a);
  // With a workspace where the pre-pass pays (the size asked for is not 0): V transposed there by
  // a pre-pass (attention_fp8_vt.hpp), its header first. (Columns past int32 would not fit the
  // header or a TMA coordinate: the kernel transposes then.)
  if (a.workspace != nullptr && a.total_k > 0 && fp8_prefill_workspace_bytes(a) > 0 &&
      vt_columns(a.total_k, a.batch, a.head_dim_v) < INT32_MAX) {
    p.vt_col0 = static_cast<int32_t*>(a.workspace);
    p.vt = static_cast<unsigned char*>(a.workspace) + vt_header_bytes(a.batch);
    p.vt_columns = vt_columns(a.total_k, a.batch, a.head_dim_v);
    if (!aligned16(a.workspace))
      return op_error(c, KH_ERROR_UNSUPPORTED, "workspace needs 16-byte aligned data (TMA reads it)");
  }
  if (!(aligned16(p.q) && aligned16(p.k) && aligned16(p.v) && aligned16(p.out) &&
        multiples_of(16, p.q_row_stride, p.q_head_stride, p.k_row_stride) && p.k_head_stride % 16 == 0 &&
        multiples_of(16, p.v_row_stride, p.v_head_stride, 16) && multiples_of(8, p.o_row_stride, p.o_head_stride, 8)))
    return op_error(c, KH_ERROR_UNSUPPORTED,
                    "q, k, v and out need 16-byte aligned data pointers, q, k and v strides that are multiples of 16 "
                    "bytes and out strides that are multiples of 8 elements (the kernel copies 16-byte chunks)");
  const ScopedDevice device(a.device.device_id);
  KH_KERNEL_TRY(device.check(c));
  const cudaStream_t stream = caller_stream(c);
  const cudaError_t err = sm90::run_attention_fwd_sm90_fp8(p, stream);
  if (err == cudaErrorNotSupported || err == cudaErrorInvalidValue)
    return op_error(c, KH_ERROR_UNSUPPORTED,
                    "the driver cannot describe q, k or v as TMA tensors (cuTensorMapEncodeTiled refused them); copy "
                    "them to contiguous memory first");
  return err == cudaSuccess ? KH_OK : device_error(c, a.device.device_id, err);
#else
  return op_error(c, KH_ERROR_UNSUPPORTED,
                  "argument 'q': an e4m3 q (FP8 prefill) needs FP8 tensor cores, which this build (sm80, no FP8 "
                  "wgmma) has no kernel for: it runs on the sm90a build (Hopper) and the CPU build; here pass q in "
                  "bf16/fp16 (FP8 KV)");
#endif
}

}  // namespace

kh_status attention_decode_paged_fp8_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const OpContext c{"attention_decode_paged_fp8", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&]() -> kh_status {
    DecodeParams p;
    KH_KERNEL_TRY(parse_attention_decode_fp8_args(args, nargs, ctx, &p));
    if (p.empty()) return KH_OK;
    if (!fp8_decode_aligned(p))
      return op_error(c, KH_ERROR_UNSUPPORTED,
                      "q, k_cache, v_cache, out and workspace need 16-byte aligned data pointers, q and out strides "
                      "that are multiples of 8 elements and cache strides that are multiples of 16 bytes (the kernel "
                      "reads 16-byte chunks)");
    const int64_t row_tiles = (static_cast<int64_t>(p.q_len) * (p.heads_q / p.heads_kv) + 7) / 8;
    if (p.batch > 65535 || p.heads_kv * row_tiles > 65535)
      return op_error(c, KH_ERROR_UNSUPPORTED,
                      "shape too large for the CUDA kernel: batch %d and heads_kv x ceil(q_len x group / 8) %lld "
                      "must be <= 65535",
                      p.batch, (long long)(p.heads_kv * row_tiles));
    const ScopedDevice device(p.device_id);
    KH_KERNEL_TRY(device.check(c));
    const cudaStream_t stream = caller_stream(c);
    const cudaError_t err = decode::launch_decode_fp8(p, stream);
    return err == cudaSuccess ? KH_OK : device_error(c, p.device_id, err);
  });
}

kh_status attention_varlen_fwd_fp8_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const OpContext c{"attention_varlen_fwd_fp8", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&]() -> kh_status {
    AttentionParams a;
    KH_KERNEL_TRY(parse_attention_varlen_fwd_fp8_args(args, nargs, ctx, &a));
    if (a.q_fp8) return fp8_prefill(c, a);
    if (a.empty()) return KH_OK;
    const int64_t group = a.heads_q / a.heads_kv;
    const int64_t row_tiles = (a.seqlen_q * group + 7) / 8;
    if (a.batch > 65535 || a.heads_kv * row_tiles > 65535 || a.seqlen_q > INT_MAX / 4 || a.seqlen_k > INT_MAX / 4 ||
        a.total_q > INT_MAX || a.total_k > INT_MAX)
      return op_error(c, KH_ERROR_UNSUPPORTED,
                      "shape too large for the CUDA kernel: the batch %lld and heads_kv x ceil(max_seqlen_q x group "
                      "/ 8) %lld must be <= 65535, lengths <= 2^29, packed rows < 2^31",
                      (long long)a.batch, (long long)(a.heads_kv * row_tiles));
    DecodeParams p;
    p.q = a.q, p.k = a.k, p.v = a.v, p.out = a.out;
    p.q_row_stride = a.q_row_stride, p.q_head_stride = a.q_head_stride;
    p.o_row_stride = a.o_row_stride, p.o_head_stride = a.o_head_stride;
    p.k_row_stride = a.k_row_stride, p.k_head_stride = a.k_head_stride;
    p.v_row_stride = a.v_row_stride, p.v_head_stride = a.v_head_stride;
    p.batch = static_cast<int>(a.batch);
    p.q_len = static_cast<int>(a.seqlen_q);
    p.heads_q = static_cast<int>(a.heads_q);
    p.heads_kv = static_cast<int>(a.heads_kv);
    p.head_dim = static_cast<int>(a.head_dim);
    p.window_left = a.window_left >= a.seqlen_q + a.seqlen_k ? -1 : static_cast<int>(a.window_left);
    p.scale = static_cast<float>(a.scale);
    p.softcap = static_cast<float>(a.softcap);
    p.dtype = a.dtype == kh_kernels::DType::kBF16 ? ElementType::kBF16 : ElementType::kF16;
    p.device_id = a.device.device_id;
    p.kv_fp8 = true;
    p.k_scale = a.k_scale, p.v_scale = a.v_scale;
    p.k_scale_stride = a.k_scale_stride, p.v_scale_stride = a.v_scale_stride;
    decode::Fp8VarlenArgs va;
    va.cu_q = a.cu_seqlens_q, va.cu_k = a.cu_seqlens_k;
    va.cu_q_stride = a.cu_seqlens_q_stride, va.cu_k_stride = a.cu_seqlens_k_stride;
    va.total_q = static_cast<int>(a.total_q), va.total_k = static_cast<int>(a.total_k);
    va.max_q = static_cast<int>(a.seqlen_q), va.max_k = static_cast<int>(a.seqlen_k);
    va.causal = a.causal;
    va.lse = a.lse;
    if (!(aligned16(p.q) && aligned16(p.k) && aligned16(p.v) && aligned16(p.out) &&
          multiples_of(8, p.q_row_stride, p.q_head_stride, p.o_row_stride) && p.o_head_stride % 8 == 0 &&
          multiples_of(16, p.k_row_stride, p.k_head_stride, p.v_row_stride) && p.v_head_stride % 16 == 0))
      return op_error(c, KH_ERROR_UNSUPPORTED,
                      "q, k, v and out need 16-byte aligned data pointers, q and out strides that are multiples of 8 "
                      "elements and k and v strides that are multiples of 16 bytes");
    const ScopedDevice device(p.device_id);
    KH_KERNEL_TRY(device.check(c));
    const cudaStream_t stream = caller_stream(c);
    const cudaError_t err = decode::launch_varlen_fp8(p, va, stream);
    return err == cudaSuccess ? KH_OK : device_error(c, p.device_id, err);
  });
}

kh_status paged_kv_cache_write_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const OpContext c{"paged_kv_cache_write", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&]() -> kh_status {
    CacheWriteParams p;
    KH_KERNEL_TRY(parse_paged_kv_cache_write_args(args, nargs, ctx, &p));
    if (p.empty()) return KH_OK;
    const int64_t cache_step = p.fp8 ? 16 : 8;  // elements: 16 bytes either way
    if (!(aligned16(p.key) && aligned16(p.value) && aligned16(p.k_cache) && aligned16(p.v_cache) &&
          multiples_of(8, p.key_token_stride, p.key_head_stride, p.value_token_stride) && p.value_head_stride % 8 == 0 &&
          multiples_of(cache_step, p.kc_block_stride, p.kc_row_stride, p.kc_head_stride) &&
          multiples_of(cache_step, p.vc_block_stride, p.vc_row_stride, p.vc_head_stride)))
      return op_error(c, KH_ERROR_UNSUPPORTED,
                      "key, value and the caches need 16-byte aligned data pointers and strides of 16-byte "
                      "multiples (the kernel moves 16-byte chunks)");
    const ScopedDevice device(p.device_id);
    KH_KERNEL_TRY(device.check(c));
    const cudaStream_t stream = caller_stream(c);
    const cudaError_t err = launch_cache_write(p, stream);
    return err == cudaSuccess ? KH_OK : device_error(c, p.device_id, err);
  });
}

}  // namespace kh_attention
