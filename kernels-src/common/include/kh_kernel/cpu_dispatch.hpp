// kh_kernel/cpu_dispatch.hpp: turns runtime float dtypes into C++ storage types for CPU
// kernels (float, Half, BFloat16), so each kernel body is written once as a template.
#pragma once

#include <utility>

#include "kh_kernel/half.hpp"
#include "kh_kernel/tensor.hpp"

namespace kh_kernels {

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) for the storage type of dtype (F32, F16 or BF16); false otherwise.
template <typename F>
bool dispatch_float(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kF32: f(TypeTag<float>{}); return true;
    case DType::kF16: f(TypeTag<Half>{}); return true;
    case DType::kBF16: f(TypeTag<BFloat16>{}); return true;
    default: return false;
  }
}

// Reads element i of a float vector of the given dtype as double (weights, biases).
inline double load_as_double(const void* data, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(data)[i];
    case DType::kF16: return to_double(static_cast<const Half*>(data)[i]);
    case DType::kBF16: return to_double(static_cast<const BFloat16*>(data)[i]);
    default: return 0.0;
  }
}

}  // namespace kh_kernels
