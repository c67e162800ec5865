// kh_kernel/tensor.hpp: a checked, strided view of a DLTensor (shape and strides in elements,
// byte_offset applied, NULL strides made explicit), the dtypes kernels see, and RowLayout,
// which maps a row index of a (..., hidden) tensor to its element offset for any strides.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kh/kernel_abi.h"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define KH_HOST_DEVICE __host__ __device__
#else
#define KH_HOST_DEVICE
#endif

namespace kh_kernels {

// Element types. The enumerator values are the bit positions of the KH_DTYPE_* masks.
enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kF64 = 3,
  kI32 = 4,
  kI64 = 5,
  kU8 = 6,
  kI8 = 7,
  kBool = 8,
  kUnknown = 31,
};
static_assert(KH_DTYPE_F32 == 1u << 0 && KH_DTYPE_F16 == 1u << 1 && KH_DTYPE_BF16 == 1u << 2 &&
                  KH_DTYPE_F64 == 1u << 3 && KH_DTYPE_BOOL == 1u << 8,
              "DType values are KH_DTYPE_* bit positions");

inline uint32_t dtype_bit(DType d) { return d == DType::kUnknown ? 0u : 1u << static_cast<uint32_t>(d); }

inline DType dtype_of(DLDataType t) {
  if (t.lanes != 1) return DType::kUnknown;
  switch (t.code) {
    case kDLFloat:
      return t.bits == 32 ? DType::kF32 : t.bits == 16 ? DType::kF16 : t.bits == 64 ? DType::kF64 : DType::kUnknown;
    case kDLBfloat:
      return t.bits == 16 ? DType::kBF16 : DType::kUnknown;
    case kDLInt:
      return t.bits == 32 ? DType::kI32 : t.bits == 64 ? DType::kI64 : t.bits == 8 ? DType::kI8 : DType::kUnknown;
    case kDLUInt:
      return t.bits == 8 ? DType::kU8 : DType::kUnknown;
    case 6:  // kDLBool (DLPack >= 0.8; Debian ships 0.6)
      return t.bits == 8 ? DType::kBool : DType::kUnknown;
    default:
      return DType::kUnknown;
  }
}

inline const char* dtype_name(DType d) {
  switch (d) {
    case DType::kF32: return "float32";
    case DType::kF16: return "float16";
    case DType::kBF16: return "bfloat16";
    case DType::kF64: return "float64";
    case DType::kI32: return "int32";
    case DType::kI64: return "int64";
    case DType::kU8: return "uint8";
    case DType::kI8: return "int8";
    case DType::kBool: return "bool";
    default: return "an unsupported dtype";
  }
}

inline int64_t dtype_size(DType d) {
  switch (d) {
    case DType::kF64: case DType::kI64: return 8;
    case DType::kF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: return 2;
    case DType::kU8: case DType::kI8: case DType::kBool: return 1;
    default: return 0;
  }
}

// "float32, float16 or bfloat16" for a KH_DTYPE_* mask.
inline std::string dtype_mask_names(uint32_t mask) {
  std::string out;
  int remaining = 0;
  for (uint32_t b = 0; b < 9; ++b) remaining += (mask >> b) & 1u;
  for (uint32_t b = 0; b < 9; ++b) {
    if (!((mask >> b) & 1u)) continue;
    if (!out.empty()) out += remaining == 1 ? " or " : ", ";
    out += dtype_name(static_cast<DType>(b));
    --remaining;
  }
  return out;
}

// Dimensions a tensor argument may have; deeper tensors are rejected with a message.
constexpr int32_t kMaxNdim = 16;

// A DLTensor as kernels use it. Filled and checked by tensor_arg() (args.hpp).
struct TensorView {
  const DLTensor* tensor = nullptr;  // nullptr: an omitted optional argument
  void* data = nullptr;              // tensor->data + byte_offset
  DType dtype = DType::kUnknown;
  DLDevice device = {kDLCPU, 0};
  int32_t ndim = 0;
  int64_t shape[kMaxNdim] = {};
  int64_t strides[kMaxNdim] = {};  // in elements; compact row-major when DLTensor::strides is NULL

  bool present() const { return tensor != nullptr; }
  int64_t numel() const {
    int64_t n = 1;
    for (int32_t d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
  // Negative d counts from the end, as in Python.
  int64_t size(int32_t d) const { return shape[d < 0 ? d + ndim : d]; }
  int64_t stride(int32_t d) const { return strides[d < 0 ? d + ndim : d]; }
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
  // Byte range [*lo, *hi) covered by the elements; lo == hi when the tensor is empty.
  void byte_extent(uintptr_t* lo, uintptr_t* hi) const {
    const uintptr_t base = reinterpret_cast<uintptr_t>(data);
    if (numel() == 0) {
      *lo = *hi = base;
      return;
    }
    int64_t min_off = 0, max_off = 0;
    for (int32_t d = 0; d < ndim; ++d) {
      const int64_t span = (shape[d] - 1) * strides[d];
      if (span < 0) min_off += span; else max_off += span;
    }
    const int64_t esize = dtype_size(dtype) > 0 ? dtype_size(dtype) : 1;
    *lo = base + static_cast<uintptr_t>(min_off * esize);
    *hi = base + static_cast<uintptr_t>((max_off + 1) * esize);
  }
  // True when every element's offset is its row-major index (size-1 dims ignored).
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int32_t d = ndim - 1; d >= 0; --d) {
      if (shape[d] != 1 && strides[d] != expected) return false;
      expected *= shape[d];
    }
    return true;
  }
};

// "[2, 3, 4096]"
inline std::string shape_string(const TensorView& t) {
  std::string s = "[";
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (d) s += ", ";
    s += std::to_string(t.shape[d]);
  }
  return s + "]";
}

// The same elements at the same addresses in the same order: what "out may alias x" means.
inline bool same_layout(const TensorView& a, const TensorView& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.ndim != b.ndim) return false;
  for (int32_t d = 0; d < a.ndim; ++d) {
    if (a.shape[d] != b.shape[d]) return false;
    if (a.shape[d] != 1 && a.strides[d] != b.strides[d]) return false;
  }
  return true;
}

// Leading dims of a row-structured tensor after collapsing: rarely more than 2.
constexpr int32_t kMaxRowDims = 6;

// Where row r of a tensor viewed as (rows, hidden) starts, in elements from data. The leading
// dims are collapsed where their strides allow (size-1 dims dropped, adjacent dims merged),
// so a tensor whose rows are evenly spaced has ndim <= 1 and uniform() is true.
struct RowLayout {
  int32_t ndim = 0;  // 0: one row (or none)
  int64_t size[kMaxRowDims] = {};
  int64_t stride[kMaxRowDims] = {};  // elements

  KH_HOST_DEVICE int64_t offset(int64_t row) const {
    int64_t off = 0;
    for (int32_t d = ndim - 1; d >= 0; --d) {
      off += (row % size[d]) * stride[d];
      row /= size[d];
    }
    return off;
  }
  // Rows evenly spaced: row r starts at r * row_stride().
  KH_HOST_DEVICE bool uniform() const { return ndim <= 1; }
  KH_HOST_DEVICE int64_t row_stride() const { return ndim == 0 ? 0 : stride[ndim - 1]; }
};

// Builds the layout of t's first t.ndim - 1 dims. False if more than kMaxRowDims dims
// remain after collapsing (an exotic layout; the caller reports it).
inline bool make_row_layout(const TensorView& t, RowLayout* out) {
  RowLayout r;
  for (int32_t d = 0; d + 1 < t.ndim; ++d) {
    if (t.shape[d] == 1) continue;
    if (t.shape[d] == 0) {  // no rows at all
      r = RowLayout{};
      r.ndim = 1;
      r.size[0] = 0;
      r.stride[0] = 0;
      *out = r;
      return true;
    }
    if (r.ndim > 0 && r.stride[r.ndim - 1] == t.shape[d] * t.strides[d]) {
      r.size[r.ndim - 1] *= t.shape[d];
      r.stride[r.ndim - 1] = t.strides[d];
      continue;
    }
    if (r.ndim == kMaxRowDims) return false;
    r.size[r.ndim] = t.shape[d];
    r.stride[r.ndim] = t.strides[d];
    ++r.ndim;
  }
  *out = r;
  return true;
}

}  // namespace kh_kernels
