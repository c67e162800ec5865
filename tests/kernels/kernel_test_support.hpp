// kernel_test_support.hpp: host tensors for the kernel tests, written independently of
// kernels-src (no kh_kernel headers): strided tensors and views over NaN-poisoned storage,
// random values on a grid the dtype holds exactly, and a tolerance check of one unit in the
// last place of the output dtype.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "ieee_reference.hpp"
#include "kh/kh.hpp"

namespace kh_test {

// A host tensor over its own storage; strides (elements) may leave gaps, which start as
// the poison value so that writes outside the view show up.
struct Tensor {
  Dt dt = Dt::f32;
  std::vector<int64_t> shape, strides;
  std::shared_ptr<std::vector<unsigned char>> buffer;  // shared by views of one allocation
  int64_t offset_elems = 0;                           // where the view starts in the buffer
  DLTensor dl{};

  Tensor() = default;
  Tensor(Tensor&&) = default;  // vectors keep their heap buffers: dl's pointers stay valid
  Tensor& operator=(Tensor&&) = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  double get_at(int64_t storage_index) const {
    const unsigned char* p = buffer->data() + storage_index * dt_size(dt);
    if (dt == Dt::f32) {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    uint16_t b;
    std::memcpy(&b, p, 2);
    return dt == Dt::f16 ? decode_f16(b) : decode_bf16(b);
  }
  void set_at(int64_t storage_index, double v) {  // v must be exact in dt
    unsigned char* p = buffer->data() + storage_index * dt_size(dt);
    if (dt == Dt::f32) {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      return;
    }
    const uint16_t b = std::isnan(v) ? (dt == Dt::f16 ? 0x7e00 : 0x7fc0) : encode_exact(v, dt);
    std::memcpy(p, &b, 2);
  }
  int64_t index(const std::vector<int64_t>& idx) const {
    int64_t off = offset_elems;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
    return off;
  }
  double get(const std::vector<int64_t>& idx) const { return get_at(index(idx)); }
  void set(const std::vector<int64_t>& idx, double v) { set_at(index(idx), v); }
  int64_t storage_elems() const { return static_cast<int64_t>(buffer->size()) / dt_size(dt); }
  DLTensor* t() { return &dl; }
};

// Compact row-major strides of shape.
inline std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = acc;
    acc *= shape[d];
  }
  return s;
}

// A tensor of the shape with the strides (default: contiguous), storage filled with NaN.
inline Tensor make_tensor(Dt dt, std::vector<int64_t> shape, std::vector<int64_t> strides = {}) {
  Tensor t;
  t.dt = dt;
  t.shape = std::move(shape);
  t.strides = strides.empty() ? contiguous_strides(t.shape) : std::move(strides);
  int64_t extent = 1;
  bool empty = false;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] == 0) empty = true;
    extent += (t.shape[d] - 1) * t.strides[d];
  }
  if (empty) extent = 0;
  t.buffer = std::make_shared<std::vector<unsigned char>>(static_cast<size_t>(std::max<int64_t>(extent, 1) * dt_size(dt)));
  for (int64_t i = 0; i < t.storage_elems(); ++i) t.set_at(i, std::nan(""));
  t.dl.data = t.buffer->data();
  t.dl.device = DLDevice{kDLCPU, 0};
  t.dl.ndim = static_cast<int32_t>(t.shape.size());
  t.dl.dtype = dl_dtype(dt);
  t.dl.shape = t.shape.data();
  t.dl.strides = t.strides.data();
  t.dl.byte_offset = 0;
  return t;
}

// A view into base's allocation starting offset_elems in, reached through DLTensor's
// byte_offset (e.g. q, k and v of a packed qkv buffer).
inline Tensor make_view(const Tensor& base, std::vector<int64_t> shape, std::vector<int64_t> strides,
                        int64_t offset_elems) {
  Tensor t;
  t.dt = base.dt;
  t.shape = std::move(shape);
  t.strides = std::move(strides);
  t.buffer = base.buffer;
  t.offset_elems = offset_elems;
  t.dl = base.dl;
  t.dl.ndim = static_cast<int32_t>(t.shape.size());
  t.dl.shape = t.shape.data();
  t.dl.strides = t.strides.data();
  t.dl.byte_offset = static_cast<uint64_t>(offset_elems * dt_size(base.dt));
  return t;
}

// Calls f(index) for every multi-index of shape, row-major.
template <typename F>
void for_each_index(const std::vector<int64_t>& shape, F&& f) {
  for (int64_t s : shape)
    if (s == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    f(idx);
    size_t d = shape.size();
    while (d > 0) {
      --d;
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (shape.empty()) return;
  }
}

// Random non-zero values on a grid the dtype holds exactly: k / 2^bits, |k| in [1, 2^bits].
struct Random {
  std::mt19937_64 rng;
  explicit Random(uint64_t seed) : rng(seed) {}
  double value(Dt dt) {
    const int bits = dt == Dt::bf16 ? 7 : 10;
    std::uniform_int_distribution<int> dist(1, 1 << bits);
    const int k = dist(rng);
    return (rng() & 1 ? -k : k) * std::ldexp(1.0, -bits);
  }
  void fill(Tensor& t) {
    for_each_index(t.shape, [&](const std::vector<int64_t>& i) { t.set(i, value(t.dt)); });
  }
};

// |got - want| <= ulps * eps(dt) * |want| + abs_tol (NaN never passes).
inline bool close(double got, double want, Dt dt, double ulps = 1.0, double abs_tol = 1e-6) {
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= ulps * dt_eps(dt) * std::fabs(want) + abs_tol;
}

// Every storage element outside the view is still NaN: nothing was written out of bounds.
inline int64_t count_gap_writes(const Tensor& t) {
  std::vector<char> in_view(static_cast<size_t>(t.storage_elems()), 0);
  for_each_index(t.shape, [&](const std::vector<int64_t>& i) { in_view[static_cast<size_t>(t.index(i))] = 1; });
  int64_t n = 0;
  for (int64_t i = 0; i < t.storage_elems(); ++i)
    if (!in_view[static_cast<size_t>(i)] && !std::isnan(t.get_at(i))) ++n;
  return n;
}

inline kh_value targ(Tensor& t) { return kh::arg(t.t()); }

// Calls op and returns its status; on failure the message is in kh_last_error().
inline kh_status call(const kh::Op& op, std::vector<kh_value> args) {
  return kh_op_call(op.get(), args.data(), static_cast<uint32_t>(args.size()), nullptr);
}

// The last error names the argument: "'name'" appears in it.
inline bool error_names(const char* name) {
  return std::string(kh_last_error()).find(std::string("'") + name + "'") != std::string::npos;
}

}  // namespace kh_test
