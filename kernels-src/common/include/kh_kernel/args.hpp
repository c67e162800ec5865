// kh_kernel/args.hpp: argument checks shared by every op of every backend. Each check that
// fails writes "<op>: argument '<name>': <what is wrong>" into ctx->error_buf and returns
// KH_ERROR_INVALID_ARGUMENT, so a package's parse function reads as a list of rules:
//
//   KH_KERNEL_TRY(tensor_arg(op, args, kX, "x", Presence::kRequired, &x));
//   KH_KERNEL_TRY(check_dtype(op, "x", x, KH_DTYPE_F32 | KH_DTYPE_F16 | KH_DTYPE_BF16));
#pragma once

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "kh/kernel_abi.h"
#include "kh_kernel/tensor.hpp"

#define KH_KERNEL_TRY(expr)                 \
  do {                                      \
    const kh_status kh_try_status_ = (expr); \
    if (kh_try_status_ != KH_OK) return kh_try_status_; \
  } while (0)

namespace kh_kernels {

// Who is checking: the op's name for messages, the call context for the error buffer, and
// the device its tensors must live on (KH_DEVICE_TYPE of the library being built).
// shapes_only: the checks of a workspace-size query (kh_op_workspace_fn), where tensors may
// come without data: a NULL data pointer is accepted and memory overlap is not checked.
struct OpContext {
  const char* op;
  const kh_call_ctx* ctx;
  int32_t device_type;
  bool shapes_only = false;
};

inline bool has_error_buf(const kh_call_ctx* ctx) {
  return ctx != nullptr && ctx->struct_size >= offsetof(kh_call_ctx, error_buf_size) + sizeof(size_t) &&
         ctx->error_buf != nullptr && ctx->error_buf_size > 0;
}

inline void vwrite_error(const kh_call_ctx* ctx, const char* prefix, const char* fmt, va_list ap) {
  if (!has_error_buf(ctx)) return;
  const int n = std::snprintf(ctx->error_buf, ctx->error_buf_size, "%s", prefix);
  if (n >= 0 && static_cast<size_t>(n) < ctx->error_buf_size)
    std::vsnprintf(ctx->error_buf + n, ctx->error_buf_size - static_cast<size_t>(n), fmt, ap);
}

// "<op>: <message>", returning status.
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
inline kh_status op_error(const OpContext& c, kh_status status, const char* fmt, ...) {
  const std::string prefix = std::string(c.op) + ": ";
  va_list ap;
  va_start(ap, fmt);
  vwrite_error(c.ctx, prefix.c_str(), fmt, ap);
  va_end(ap);
  return status;
}

// "<op>: argument '<arg>': <message>", returning KH_ERROR_INVALID_ARGUMENT.
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
inline kh_status arg_error(const OpContext& c, const char* arg, const char* fmt, ...) {
  const std::string prefix = std::string(c.op) + ": argument '" + arg + "': ";
  va_list ap;
  va_start(ap, fmt);
  vwrite_error(c.ctx, prefix.c_str(), fmt, ap);
  va_end(ap);
  return KH_ERROR_INVALID_ARGUMENT;
}

// Runs body (returning kh_status); maps escaping exceptions to statuses: an op entry point
// must never throw across the C ABI.
template <typename Body>
kh_status guarded(const OpContext& c, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return op_error(c, KH_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return op_error(c, KH_ERROR_INTERNAL, "unexpected error: %s", e.what());
  } catch (...) {
    return op_error(c, KH_ERROR_INTERNAL, "unexpected non-standard exception");
  }
}

inline kh_status check_nargs(const OpContext& c, const kh_value* args, uint32_t nargs, uint32_t expected) {
  if (nargs != expected)
    return op_error(c, KH_ERROR_INVALID_ARGUMENT, "expected %u arguments, got %u", expected, nargs);
  if (args == nullptr && expected > 0) return op_error(c, KH_ERROR_INVALID_ARGUMENT, "args is NULL");
  return KH_OK;
}

enum class Presence { kRequired, kOptional };

// Reads tensor argument `index` into *out (out->tensor stays NULL for an omitted optional
// one) and checks what holds for every tensor: kind, rank, sizes, data present when
// non-empty, and device type.
inline kh_status tensor_arg(const OpContext& c, const kh_value* args, uint32_t index, const char* name,
                            Presence presence, TensorView* out) {
  *out = TensorView{};
  const kh_value& v = args[index];
  if (v.kind == KH_VALUE_NONE && presence == Presence::kOptional) return KH_OK;
  if (v.kind != KH_VALUE_TENSOR)
    return arg_error(c, name, "expected a tensor, got value kind %u%s", v.kind,
                     v.kind == KH_VALUE_NONE ? " (none); this argument is required" : "");
  const DLTensor* t = v.u.tensor;
  if (t == nullptr) {
    if (presence == Presence::kOptional) return KH_OK;
    return arg_error(c, name, "tensor is NULL; this argument is required");
  }
  if (t->ndim < 0 || t->ndim > kMaxNdim) return arg_error(c, name, "ndim %d is out of range [0, %d]", t->ndim, kMaxNdim);
  if (t->ndim > 0 && t->shape == nullptr) return arg_error(c, name, "shape is NULL");
  out->tensor = t;
  out->ndim = t->ndim;
  out->dtype = dtype_of(t->dtype);
  out->device = t->device;
  int64_t expected_stride = 1;
  for (int32_t d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] < 0) return arg_error(c, name, "dimension %d has negative size %lld", d, (long long)t->shape[d]);
    out->shape[d] = t->shape[d];
    out->strides[d] = t->strides ? t->strides[d] : expected_stride;
    expected_stride *= t->shape[d];
  }
  if (out->dtype == DType::kUnknown)
    return arg_error(c, name, "dtype (code %u, %u bits, %u lanes) is not supported", t->dtype.code, t->dtype.bits,
                     t->dtype.lanes);
  if (t->data == nullptr && out->numel() != 0 && !c.shapes_only)
    return arg_error(c, name, "data is NULL but the tensor has %lld elements", (long long)out->numel());
  out->data = t->data ? static_cast<char*>(t->data) + t->byte_offset : nullptr;
  if (t->device.device_type != c.device_type)
    return arg_error(c, name, "tensor is on device type %d; this library's ops take device type %d",
                     (int)t->device.device_type, c.device_type);
  return KH_OK;
}

inline kh_status double_arg(const OpContext& c, const kh_value* args, uint32_t index, const char* name, double* out) {
  const kh_value& v = args[index];
  if (v.kind == KH_VALUE_DOUBLE) *out = v.u.d;
  else if (v.kind == KH_VALUE_INT) *out = static_cast<double>(v.u.i);
  else return arg_error(c, name, "expected a float, got value kind %u", v.kind);
  return KH_OK;
}

inline kh_status bool_arg(const OpContext& c, const kh_value* args, uint32_t index, const char* name, bool* out) {
  const kh_value& v = args[index];
  if (v.kind != KH_VALUE_BOOL) return arg_error(c, name, "expected a bool, got value kind %u", v.kind);
  *out = v.u.b != 0;
  return KH_OK;
}

inline kh_status check_finite(const OpContext& c, const char* name, double value) {
  if (!std::isfinite(value)) return arg_error(c, name, "must be finite, got %g", value);
  return KH_OK;
}

inline kh_status check_dtype(const OpContext& c, const char* name, const TensorView& t, uint32_t mask) {
  if (!(dtype_bit(t.dtype) & mask))
    return arg_error(c, name, "dtype %s is not supported (expected %s)", dtype_name(t.dtype),
                     dtype_mask_names(mask).c_str());
  return KH_OK;
}

inline kh_status check_same_dtype(const OpContext& c, const char* name, const TensorView& t, const char* ref_name,
                                  const TensorView& ref) {
  if (t.dtype != ref.dtype)
    return arg_error(c, name, "dtype %s does not match %s's dtype %s", dtype_name(t.dtype), ref_name,
                     dtype_name(ref.dtype));
  return KH_OK;
}

inline kh_status check_ndim(const OpContext& c, const char* name, const TensorView& t, int32_t min_ndim,
                            int32_t max_ndim) {
  if (t.ndim < min_ndim || (max_ndim >= 0 && t.ndim > max_ndim)) {
    if (min_ndim == max_ndim) return arg_error(c, name, "expected %d dimensions, got %d", min_ndim, t.ndim);
    if (max_ndim < 0) return arg_error(c, name, "expected at least %d dimensions, got %d", min_ndim, t.ndim);
    return arg_error(c, name, "expected %d to %d dimensions, got %d", min_ndim, max_ndim, t.ndim);
  }
  return KH_OK;
}

inline kh_status check_same_shape(const OpContext& c, const char* name, const TensorView& t, const char* ref_name,
                                  const TensorView& ref) {
  bool same = t.ndim == ref.ndim;
  for (int32_t d = 0; same && d < t.ndim; ++d) same = t.shape[d] == ref.shape[d];
  if (!same)
    return arg_error(c, name, "shape %s does not match %s's shape %s", shape_string(t).c_str(), ref_name,
                     shape_string(ref).c_str());
  return KH_OK;
}

inline kh_status check_same_device(const OpContext& c, const char* name, const TensorView& t, const char* ref_name,
                                   const TensorView& ref) {
  if (t.device.device_type != ref.device.device_type || t.device.device_id != ref.device.device_id)
    return arg_error(c, name, "tensor is on device %d:%d but %s is on device %d:%d", (int)t.device.device_type,
                     t.device.device_id, ref_name, (int)ref.device.device_type, ref.device.device_id);
  return KH_OK;
}

// The innermost dimension must have stride 1 (any stride is fine when its size is <= 1).
inline kh_status check_last_dim_contiguous(const OpContext& c, const char* name, const TensorView& t) {
  if (t.ndim > 0 && t.size(-1) > 1 && t.stride(-1) != 1)
    return arg_error(c, name, "the last dimension must be contiguous (stride 1), got stride %lld",
                     (long long)t.stride(-1));
  return KH_OK;
}

inline kh_status check_contiguous(const OpContext& c, const char* name, const TensorView& t) {
  if (!t.is_contiguous()) return arg_error(c, name, "must be contiguous (row-major, no gaps)");
  return KH_OK;
}

enum class Alias { kForbidden, kExactAllowed };

// Whether two views that share their outermost stride S (bytes) and whose rows each fit in S
// bytes (the inner dims' extent) touch a common byte: rows interleave like the query and key
// slices of one packed qkv tensor. Row r of a covers [a0 + r S, a0 + r S + wa); a row of b
// starts d + k S after it (d = b0 - a0, k = s - r), and as wa, wb <= S at most the two k
// nearest -d / S can make the intervals meet. *decided is false when the views are not of that
// form (the caller then compares whole extents).
inline bool interleaved_rows_overlap(const TensorView& a, const TensorView& b, bool* decided) {
  *decided = false;
  if (a.ndim < 2 || b.ndim < 2 || a.dtype != b.dtype || a.numel() == 0 || b.numel() == 0) return false;
  const int64_t esize = dtype_size(a.dtype) > 0 ? dtype_size(a.dtype) : 1;
  const int64_t stride = a.strides[0] * esize;
  if (stride <= 0 || b.strides[0] * esize != stride) return false;
  // The inner dims' byte extent of one row, relative to its first element.
  auto row_extent = [esize](const TensorView& t, int64_t* lo, int64_t* width) {
    int64_t mn = 0, mx = 0;
    for (int32_t d = 1; d < t.ndim; ++d) {
      const int64_t span = (t.shape[d] - 1) * t.strides[d];
      if (span < 0) mn += span; else mx += span;
    }
    *lo = mn * esize;
    *width = (mx - mn + 1) * esize;
  };
  int64_t alo, wa, blo, wb;
  row_extent(a, &alo, &wa);
  row_extent(b, &blo, &wb);
  if (wa > stride || wb > stride) return false;
  *decided = true;
  const int64_t d = (reinterpret_cast<intptr_t>(b.data) + blo) - (reinterpret_cast<intptr_t>(a.data) + alo);
  const int64_t kmin = -(a.shape[0] - 1), kmax = b.shape[0] - 1;
  // floor(-d / S) and the one after it.
  const int64_t q = -d >= 0 ? -d / stride : -((d + stride - 1) / stride);
  for (int64_t k = q; k <= q + 1; ++k) {
    if (k < kmin || k > kmax) continue;
    const int64_t start = d + k * stride;  // b's row start from a's
    if (start < wa && start > -wb) return true;
  }
  return false;
}

// out must not share memory with other unless (when allowed) it is exactly the same view.
// Decided on byte extents, except for views whose rows interleave at one common stride (the
// slices of a packed qkv tensor), which are decided exactly (interleaved_rows_overlap).
inline kh_status check_no_overlap(const OpContext& c, const char* out_name, const TensorView& out,
                                  const char* other_name, const TensorView& other, Alias alias) {
  if (!out.present() || !other.present() || c.shapes_only) return KH_OK;
  if (alias == Alias::kExactAllowed && same_layout(out, other)) return KH_OK;
  bool decided = false;
  const bool rows_meet = interleaved_rows_overlap(out, other, &decided);
  uintptr_t a_lo, a_hi, b_lo, b_hi;
  out.byte_extent(&a_lo, &a_hi);
  other.byte_extent(&b_lo, &b_hi);
  if (decided ? rows_meet : (a_lo < b_hi && b_lo < a_hi))
    return arg_error(c, out_name, "overlaps %s in memory%s", other_name,
                     alias == Alias::kExactAllowed ? "; only exact aliasing (same data, shape and strides) is allowed"
                                                   : "; it must not share memory with it");
  return KH_OK;
}

}  // namespace kh_kernels
