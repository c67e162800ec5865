// attention_hip.hip: the HIP backend's op entries (rocm-gfx942). attention_fwd and
// attention_varlen_fwd validate the call with the shared rules (attention_args.hpp), check what
// the gfx942 kernel needs beyond them (16-byte aligned rows, grid and length limits), and
// launch the MFMA kernel (attention_fwd_gfx942_kernel.hpp) on the caller's stream
// (kh_call_ctx::stream, a hipStream_t; NULL: the default stream). A HIP error becomes
// KH_ERROR_DEVICE. attention_decode_paged has its own kernels (attention_decode_gfx942.hpp).
#include <hip/hip_runtime_api.h>

#include <climits>
#include <cstddef>
#include <cstdint>

#include "attention_args.hpp"
#include "attention_cache_args.hpp"
#include "attention_cache_gfx942.hpp"
#include "attention_decode_args.hpp"
#include "attention_decode_gfx942_launch.hpp"
#include "attention_fwd_gfx942.hpp"
#include "attention_ops.hpp"
#include "kh_kernel/args.hpp"

namespace kh_attention {

namespace gfx942 {

bool fwd_params_aligned(const FwdParams& p) {
  auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  auto rows_aligned = [](int64_t batch, int64_t row, int64_t head) {
    return batch % 8 == 0 && row % 8 == 0 && head % 8 == 0;  // 8 two-byte elements = 16 bytes
  };
  return aligned(p.q) && aligned(p.k) && aligned(p.v) && aligned(p.out) &&
         rows_aligned(p.q_batch_stride, p.q_row_stride, p.q_head_stride) &&
         rows_aligned(p.k_batch_stride, p.k_row_stride, p.k_head_stride) &&
         rows_aligned(p.v_batch_stride, p.v_row_stride, p.v_head_stride) &&
         rows_aligned(p.o_batch_stride, p.o_row_stride, p.o_head_stride);
}

hipError_t run_attention_fwd_gfx942(const FwdParams& p, hipStream_t stream) {
  return dispatch_fwd_bucket(Gfx942FwdDims{}, gfx942_fwd_bucket(p.head_dim, p.head_dim_v), p.dtype,
                             hipErrorInvalidValue, [&](auto qk, auto v, auto type) {
                               return run_attention_fwd_gfx942_instance<decltype(qk)::value, decltype(v)::value,
                                                                        decltype(type)::value>(p, stream);
                             });
}

}  // namespace gfx942

namespace {

using kh_kernels::OpContext;
using kh_kernels::op_error;

// Makes `device` current for the call and restores the caller's device afterwards.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    if (hipGetDevice(&previous_) != hipSuccess) previous_ = -1;
    status_ = previous_ == device ? hipSuccess : hipSetDevice(device);
  }
  ~ScopedDevice() {
    if (previous_ >= 0 && status_ == hipSuccess) (void)hipSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  hipError_t status() const { return status_; }

 private:
  int previous_ = -1;
  hipError_t status_ = hipSuccess;
};

kh_status launch(const OpContext& c, const AttentionParams& a) {
  if (gfx942_fwd_bucket(static_cast<int>(a.head_dim), static_cast<int>(a.head_dim_v)).qk == 0)
    return op_error(c, KH_ERROR_UNSUPPORTED, "argument 'q': head dims %lld/%lld have no gfx942 kernel",
                    (long long)a.head_dim, (long long)a.head_dim_v);
  // Grid: (q tiles, heads_q, sequences); y and z kept to 65535 as on CUDA, lengths to int
  // (varlen: a quarter of it, so that a window's bound stays inside int).
  const int64_t max_len = a.varlen() ? INT_MAX / 4 : INT_MAX / 2;
  if (a.heads_q > 65535 || a.batch > 65535 || a.seqlen_q > max_len || a.seqlen_k > max_len || a.total_q > INT_MAX ||
      a.total_k > INT_MAX)
    return op_error(c, KH_ERROR_UNSUPPORTED,
                    "shape too large for the gfx942 kernel: heads_q %lld and the batch (sequences) %lld must be <= "
                    "65535, sequence lengths (%lld, %lld) <= %lld, packed rows (%lld, %lld) < 2^31",
                    (long long)a.heads_q, (long long)a.batch, (long long)a.seqlen_q, (long long)a.seqlen_k,
                    (long long)max_len, (long long)a.total_q, (long long)a.total_k);
  const gfx942::FwdParams p = launch_params(a);
  if (!gfx942::fwd_params_aligned(p))
    return op_error(c, KH_ERROR_UNSUPPORTED,
                    "q, k, v and out need 16-byte aligned data pointers and row/head (and batch) strides that are "
                    "multiples of 8 elements (the kernel moves 16-byte chunks); copy the tensors to "
                    "contiguous memory first");

  const ScopedDevice device(a.device.device_id);
  if (device.status() != hipSuccess)
    return op_error(c, KH_ERROR_DEVICE, "cannot make ROCm device %d current: %s", a.device.device_id,
                    hipGetErrorString(device.status()));
  const bool has_stream = c.ctx != nullptr && c.ctx->struct_size >= offsetof(kh_call_ctx, stream) + sizeof(void*);
  const hipStream_t stream = has_stream ? static_cast<hipStream_t>(c.ctx->stream) : nullptr;
  const hipError_t err = gfx942::run_attention_fwd_gfx942(p, stream);
  if (err != hipSuccess)
    return op_error(c, err == hipErrorOutOfMemory ? KH_ERROR_OUT_OF_MEMORY : KH_ERROR_DEVICE,
                    "kernel launch failed on ROCm device %d: %s (%s)", a.device.device_id, hipGetErrorName(err),
                    hipGetErrorString(err));
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

// attention_decode_paged (1.1): the shared kernel design of the CUDA build on 64-lane
// wavefronts (attention_decode_gfx942.hpp); compiled and checked here, not run (hip/NOTES.md).
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
                      "shape too large for the gfx942 kernel: batch %d and heads_kv x ceil(q_len x group / 4) %lld "
                      "must be <= 65535",
                      p.batch, (long long)(p.heads_kv * row_tiles));
    const ScopedDevice device(p.device_id);
    if (device.status() != hipSuccess)
      return op_error(c, KH_ERROR_DEVICE, "cannot make ROCm device %d current: %s", p.device_id,
                      hipGetErrorString(device.status()));
    const bool has_stream = c.ctx != nullptr && c.ctx->struct_size >= offsetof(kh_call_ctx, stream) + sizeof(void*);
    const hipStream_t stream = has_stream ? static_cast<hipStream_t>(c.ctx->stream) : nullptr;
    const decode::DecodePlan plan = decode::plan_decode(p, p.device_id);
    const hipError_t err = decode::launch_decode(p, plan, stream);
    if (err != hipSuccess)
      return op_error(c, KH_ERROR_DEVICE, "kernel launch failed on ROCm device %d: %s (%s)", p.device_id,
                      hipGetErrorName(err), hipGetErrorString(err));
    return KH_OK;
  });
}

}  // namespace kh_attention

// --- 1.2.0: FP8 (compiled and checked on the host emulator here, not run: hip/NOTES.md) ---------
namespace kh_attention {
namespace {

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }
bool multiples_of(int64_t n, int64_t a, int64_t b, int64_t c) { return a % n == 0 && b % n == 0 && c % n == 0; }

hipStream_t call_stream(const OpContext& c) {
  const bool has_stream = c.ctx != nullptr && c.ctx->struct_size >= offsetof(kh_call_ctx, stream) + sizeof(void*);
  return has_stream ? static_cast<hipStream_t>(c.ctx->stream) : nullptr;
}

}  // namespace

// The shared SIMT split kernel over e4m3 caches (8-byte loads a lane, decoded in registers).
kh_status attention_decode_paged_fp8_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const OpContext c{"attention_decode_paged_fp8", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&]() -> kh_status {
    DecodeParams p;
    KH_KERNEL_TRY(parse_attention_decode_fp8_args(args, nargs, ctx, &p));
    if (p.empty()) return KH_OK;
    if (!(aligned16(p.q) && aligned16(p.k) && aligned16(p.v) && aligned16(p.out) && aligned16(p.workspace) &&
          multiples_of(8, p.q_batch_stride, p.q_row_stride, p.q_head_stride) &&
          multiples_of(8, p.o_batch_stride, p.o_row_stride, p.o_head_stride) &&
          multiples_of(16, p.k_block_stride, p.k_row_stride, p.k_head_stride) &&
          multiples_of(16, p.v_block_stride, p.v_row_stride, p.v_head_stride)))
      return op_error(c, KH_ERROR_UNSUPPORTED,
                      "q, k_cache, v_cache, out and workspace need 16-byte aligned data pointers, q and out strides "
                      "that are multiples of 8 elements and cache strides that are multiples of 16 bytes");
    const int64_t row_tiles = (static_cast<int64_t>(p.q_len) * (p.heads_q / p.heads_kv) + 3) / 4;
    if (p.batch > 65535 || p.heads_kv * row_tiles > 65535)
      return op_error(c, KH_ERROR_UNSUPPORTED,
                      "shape too large for the gfx942 kernel: batch %d and heads_kv x ceil(q_len x group / 4) %lld "
                      "must be <= 65535",
                      p.batch, (long long)(p.heads_kv * row_tiles));
    const ScopedDevice device(p.device_id);
    if (device.status() != hipSuccess)
      return op_error(c, KH_ERROR_DEVICE, "cannot make ROCm device %d current: %s", p.device_id,
                      hipGetErrorString(device.status()));
    const decode::DecodePlan plan = decode::plan_decode(p, p.device_id);
    const hipError_t err = decode::launch_decode_fp8(p, plan, call_stream(c));
    if (err != hipSuccess)
      return op_error(c, KH_ERROR_DEVICE, "kernel launch failed on ROCm device %d: %s (%s)", p.device_id,
                      hipGetErrorName(err), hipGetErrorString(err));
    return KH_OK;
  });
}

// Not built for gfx942 in 1.2.0 (the CPU and CUDA builds have it): refused after the shared rules,
// before anything is launched.
kh_status attention_varlen_fwd_fp8_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const OpContext c{"attention_varlen_fwd_fp8", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&]() -> kh_status {
    AttentionParams a;
    KH_KERNEL_TRY(parse_attention_varlen_fwd_fp8_args(args, nargs, ctx, &a));
    return op_error(c, KH_ERROR_UNSUPPORTED,
                    "attention_varlen_fwd_fp8 has no gfx942 kernel in attention 1.2.0 (the CPU and CUDA builds have "
                    "it); dequantize k and v and call attention_varlen_fwd");
  });
}

kh_status paged_kv_cache_write_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  const OpContext c{"paged_kv_cache_write", ctx, KH_DEVICE_TYPE};
  return kh_kernels::guarded(c, [&]() -> kh_status {
    CacheWriteParams p;
    KH_KERNEL_TRY(parse_paged_kv_cache_write_args(args, nargs, ctx, &p));
    if (p.empty()) return KH_OK;
    const int64_t cache_step = p.fp8 ? 16 : 8;
    if (!(aligned16(p.key) && aligned16(p.value) && aligned16(p.k_cache) && aligned16(p.v_cache) &&
          multiples_of(8, p.key_token_stride, p.key_head_stride, p.value_token_stride) && p.value_head_stride % 8 == 0 &&
          multiples_of(cache_step, p.kc_block_stride, p.kc_row_stride, p.kc_head_stride) &&
          multiples_of(cache_step, p.vc_block_stride, p.vc_row_stride, p.vc_head_stride)))
      return op_error(c, KH_ERROR_UNSUPPORTED,
                      "key, value and the caches need 16-byte aligned data pointers and strides of 16-byte "
                      "multiples (the kernel moves 16-byte chunks)");
    const ScopedDevice device(p.device_id);
    if (device.status() != hipSuccess)
      return op_error(c, KH_ERROR_DEVICE, "cannot make ROCm device %d current: %s", p.device_id,
                      hipGetErrorString(device.status()));
    const hipError_t err = launch_cache_write(p, call_stream(c));
    if (err != hipSuccess)
      return op_error(c, KH_ERROR_DEVICE, "kernel launch failed on ROCm device %d: %s (%s)", p.device_id,
                      hipGetErrorName(err), hipGetErrorString(err));
    return KH_OK;
  });
}

}  // namespace kh_attention
