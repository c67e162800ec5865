// attention_cuda.cu: the CUDA backend's op entries. attention_fwd and attention_varlen_fwd
// validate the call with the shared rules (attention_args.hpp), check what the GPU kernels need
// beyond them (16-byte aligned rows, grid and length limits), and launch on the caller's stream
// (kh_call_ctx::stream, NULL: the default stream):
//  - sm80 variant: the FlashAttention-2 style mma.sync kernel (attention_fwd_sm80.cuh);
//  - sm90a variant (KH_ATTENTION_SM90A): the wgmma + TMA kernel (attention_fwd_sm90.cuh), the
//    sm80 kernel for calls whose tensors TMA cannot describe. KH_ATTENTION_FORCE_SM80=1 in the
//    environment picks the sm80 kernel always (for comparisons).
// attention_decode_paged has its own kernels (attention_decode_launch.hpp).
#include <cuda_runtime_api.h>

#include <climits>
#include <cstdlib>

#include "attention_args.hpp"
#include "attention_decode_args.hpp"
#include "attention_decode_launch.hpp"
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

// Makes `device` current for the call and restores the caller's device afterwards.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    status_ = previous_ == device ? cudaSuccess : cudaSetDevice(device);
  }
  ~ScopedDevice() {
    if (previous_ >= 0 && status_ == cudaSuccess) cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  cudaError_t status() const { return status_; }

 private:
  int previous_ = -1;
  cudaError_t status_ = cudaSuccess;
};

kh_status launch(const OpContext& c, const AttentionParams& a) {
  if (cuda_fwd_bucket(static_cast<int>(a.head_dim), static_cast<int>(a.head_dim_v)).qk == 0)
    return op_error(c, KH_ERROR_UNSUPPORTED, "argument 'q': head dims %lld/%lld have no CUDA kernel",
                    (long long)a.head_dim, (long long)a.head_dim_v);
  // Grid: (q tiles, heads_q, sequences); y and z are limited to 65535, lengths to int (varlen:
  // a quarter of it, so that a window's bound stays inside int), packed rows to TMA's int32.
  const int64_t max_len = a.varlen() ? INT_MAX / 4 : INT_MAX / 2;
  if (a.heads_q > 65535 || a.batch > 65535 || a.seqlen_q > max_len || a.seqlen_k > max_len || a.total_q > INT_MAX ||
      a.total_k > INT_MAX)
    return op_error(c, KH_ERROR_UNSUPPORTED,
                    "shape too large for the CUDA kernel: heads_q %lld and the batch (sequences) %lld must be <= "
                    "65535, sequence lengths (%lld, %lld) <= %lld, packed rows (%lld, %lld) < 2^31",
                    (long long)a.heads_q, (long long)a.batch, (long long)a.seqlen_q, (long long)a.seqlen_k,
                    (long long)max_len, (long long)a.total_q, (long long)a.total_k);
  const FwdLaunchParams p = launch_params(a);
  if (!fwd_params_aligned(p))
    return op_error(c, KH_ERROR_UNSUPPORTED,
                    "q, k, v and out need 16-byte aligned data pointers and row/head (and batch) strides that are "
                    "multiples of 8 elements (the kernel copies 16-byte chunks); copy the tensors to "
                    "contiguous memory first");

  const ScopedDevice device(a.device.device_id);
  if (device.status() != cudaSuccess)
    return op_error(c, KH_ERROR_DEVICE, "cannot make CUDA device %d current: %s", a.device.device_id,
                    cudaGetErrorString(device.status()));
  const cudaStream_t stream = static_cast<cudaStream_t>(c.ctx ? c.ctx->stream : nullptr);
  cudaError_t err = cudaErrorNotSupported;
#if defined(KH_ATTENTION_SM90A)
  static const bool force_sm80 = [] {
    const char* v = std::getenv("KH_ATTENTION_FORCE_SM80");
    return v != nullptr && v[0] == '1';
  }();
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
    if (device.status() != cudaSuccess)
      return op_error(c, KH_ERROR_DEVICE, "cannot make CUDA device %d current: %s", device_id,
                      cudaGetErrorString(device.status()));
    const cudaStream_t stream = static_cast<cudaStream_t>(c.ctx ? c.ctx->stream : nullptr);
    const decode::DecodePlan plan = decode::plan_decode(p, device_id);
    const cudaError_t err = decode::launch_decode(p, plan, stream);
    if (err != cudaSuccess)
      return op_error(c, KH_ERROR_DEVICE, "kernel launch failed on CUDA device %d: %s (%s)", device_id,
                      cudaGetErrorName(err), cudaGetErrorString(err));
    return KH_OK;
  });
}

}  // namespace kh_attention
