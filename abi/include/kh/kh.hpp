// kh/kh.hpp: thin RAII wrappers over kh/kh.h for C++ hosts. Header-only; errors become
// kh::Error exceptions carrying the status and kh_last_error()'s message.
//
//   kh::Kernel k = kh::load_kernel("kernels-community/rms-norm@1");
//   k.op("rms_norm")({kh::arg(&out), kh::arg(&x), kh::arg(&w), kh::arg(1e-6)});
// Trailing arguments with schema defaults may be left out of a call (kh_op_call fills them).
#ifndef KH_KH_HPP
#define KH_KH_HPP

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kh/kh.h"

namespace kh {

class Error : public std::runtime_error {
 public:
  Error(kh_status status, const std::string& message)
      : std::runtime_error(std::string(kh_status_string(status)) + ": " + message), status_(status) {}
  kh_status status() const noexcept { return status_; }

 private:
  kh_status status_;
};

inline void check(kh_status status) {
  if (status != KH_OK) throw Error(status, kh_last_error());
}

// kh_value from a host's values. Every C++ type maps to one kind, so no call is ambiguous:
//  - DLTensor* (const too: an input) and kh::TensorView: KH_VALUE_TENSOR (NULL: none);
//  - nullptr and kh::none(): KH_VALUE_NONE (an omitted optional, "Tensor?");
//  - bool: KH_VALUE_BOOL;
//  - any other integer (int, int64_t, size_t, uint32_t, ...): KH_VALUE_INT; an unsigned value
//    above INT64_MAX throws kh::Error(KH_ERROR_INVALID_ARGUMENT);
//  - float, double: KH_VALUE_DOUBLE (a schema "float");
//  - const char* (NULL: none) and std::string (an lvalue: it must outlive the call): KH_VALUE_STRING.
// Other pointers do not compile (they would otherwise become a bool).
inline kh_value arg(DLTensor* tensor) {
  kh_value v{};
  v.kind = tensor ? KH_VALUE_TENSOR : KH_VALUE_NONE;
  v.u.tensor = tensor;
  return v;
}
// Ops never write an argument their schema does not mark written ("Tensor(a!)"), and the
// loader checks the kinds: an input may be const.
inline kh_value arg(const DLTensor* tensor) { return arg(const_cast<DLTensor*>(tensor)); }
inline kh_value arg(std::nullptr_t) { return kh_value{}; }
inline kh_value arg(bool b) {
  kh_value v{};
  v.kind = KH_VALUE_BOOL;
  v.u.b = b ? 1 : 0;
  return v;
}
template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
inline kh_value arg(T i) {
  if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t)) {
    if (i > static_cast<T>(std::numeric_limits<int64_t>::max()))
      throw Error(KH_ERROR_INVALID_ARGUMENT,
                  "kh::arg: " + std::to_string(i) + " is larger than an int argument holds (INT64_MAX)");
  }
  kh_value v{};
  v.kind = KH_VALUE_INT;
  v.u.i = static_cast<int64_t>(i);
  return v;
}
template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline kh_value arg(T d) {
  kh_value v{};
  v.kind = KH_VALUE_DOUBLE;
  v.u.d = static_cast<double>(d);
  return v;
}
inline kh_value arg(const char* s) {
  kh_value v{};
  v.kind = s ? KH_VALUE_STRING : KH_VALUE_NONE;
  v.u.s = s;
  return v;
}
inline kh_value arg(char* s) { return arg(static_cast<const char*>(s)); }
inline kh_value arg(const std::string& s) { return arg(s.c_str()); }
kh_value arg(std::string&&) = delete;  // the value would point into a temporary
template <typename T>
kh_value arg(T*) = delete;  // a pointer that is neither a DLTensor* nor a C string
inline kh_value none() { return kh_value{}; }

// dtypes and devices as DLPack spells them, for TensorView.
namespace dtype {
constexpr DLDataType f16{kDLFloat, 16, 1}, bf16{kDLBfloat, 16, 1}, f32{kDLFloat, 32, 1}, f64{kDLFloat, 64, 1};
constexpr DLDataType i8{kDLInt, 8, 1}, i32{kDLInt, 32, 1}, i64{kDLInt, 64, 1}, u8{kDLUInt, 8, 1};
}  // namespace dtype
namespace device {
constexpr DLDevice cpu() { return DLDevice{kDLCPU, 0}; }
constexpr DLDevice cuda(int32_t id = 0) { return DLDevice{kDLCUDA, id}; }
constexpr DLDevice rocm(int32_t id = 0) { return DLDevice{kDLROCM, id}; }
}  // namespace device

// A DLTensor describing memory the host owns (an engine's buffer, a framework tensor's
// storage): data pointer, shape, strides (in elements; none: compact row-major), dtype,
// device. It owns nothing but its shape and strides (up to kMaxRank dimensions), so it may
// be built from temporaries; the memory must stay valid while a call uses it. A copy
// describes the same memory with its own shape and strides.
//   kh::TensorView q(q_ptr, {batch, seqlen, heads, 128}, kh::dtype::bf16, kh::device::cuda(0));
//   kh::TensorView k(k_ptr, {batch, seqlen, kv_heads, 128}, kh::dtype::bf16, kh::device::cuda(0));
//   k.strides({seqlen * kv_heads * 256, kv_heads * 256, 256, 1});   // a padded layout
//   attention({kh::arg(out), nullptr, kh::arg(q), kh::arg(k), ...});
class TensorView {
 public:
  static constexpr int kMaxRank = 8;

  TensorView(const void* data, std::initializer_list<int64_t> shape, DLDataType dtype, DLDevice device = device::cpu())
      : TensorView(data, shape.begin(), static_cast<int>(shape.size()), dtype, device) {}
  TensorView(const void* data, const int64_t* shape, int ndim, DLDataType dtype, DLDevice device = device::cpu()) {
    if (ndim < 0 || ndim > kMaxRank || (ndim > 0 && shape == nullptr))
      throw Error(KH_ERROR_INVALID_ARGUMENT, "kh::TensorView: " + std::to_string(ndim) + " dimensions; 0 to " +
                                                 std::to_string(kMaxRank) + " are supported");
    t_.data = const_cast<void*>(data);
    t_.device = device;
    t_.ndim = ndim;
    t_.dtype = dtype;
    for (int d = 0; d < ndim; ++d) shape_[d] = shape[d];
    t_.shape = shape_;
  }
  TensorView(const TensorView& o) : t_(o.t_) { copy_from(o); }
  TensorView& operator=(const TensorView& o) {
    t_ = o.t_;
    copy_from(o);
    return *this;
  }

  // Strides in elements, one per dimension (kh::Error otherwise).
  TensorView& strides(std::initializer_list<int64_t> strides) {
    if (static_cast<int>(strides.size()) != t_.ndim)
      throw Error(KH_ERROR_INVALID_ARGUMENT, "kh::TensorView: " + std::to_string(strides.size()) + " strides for " +
                                                 std::to_string(t_.ndim) + " dimensions");
    int d = 0;
    for (int64_t s : strides) strides_[d++] = s;
    t_.strides = strides_;
    return *this;
  }
  TensorView& byte_offset(uint64_t offset) {
    t_.byte_offset = offset;
    return *this;
  }

  DLTensor* get() noexcept { return &t_; }
  const DLTensor* get() const noexcept { return &t_; }

 private:
  void copy_from(const TensorView& o) {
    for (int d = 0; d < kMaxRank; ++d) {
      shape_[d] = o.shape_[d];
      strides_[d] = o.strides_[d];
    }
    t_.shape = shape_;
    t_.strides = o.t_.strides != nullptr ? strides_ : nullptr;
  }

  DLTensor t_{};
  int64_t shape_[kMaxRank] = {};
  int64_t strides_[kMaxRank] = {};
};
inline kh_value arg(TensorView& view) { return arg(view.get()); }
inline kh_value arg(const TensorView& view) { return arg(view.get()); }
kh_value arg(TensorView&&) = delete;  // the value would point into a temporary

// A non-owning view of one op; valid while its Kernel lives.
class Op {
 public:
  explicit Op(const kh_op* op) : op_(op) {}
  std::string name() const { return kh_op_name(op_); }
  std::string schema() const { return kh_op_schema(op_); }
  void call(const std::vector<kh_value>& args, void* stream = nullptr) const {
    check(kh_op_call(op_, args.data(), static_cast<uint32_t>(args.size()), stream));
  }
  void operator()(std::initializer_list<kh_value> args, void* stream = nullptr) const {
    call(std::vector<kh_value>(args), stream);
  }
  // The workspace bytes a call with these arguments needs (kh_op_workspace_size: data may be
  // NULL, the workspace argument kh::arg(nullptr)); throws kh::Error (KH_ERROR_UNSUPPORTED
  // when the op does not answer).
  uint64_t workspace_size(const std::vector<kh_value>& args) const {
    uint64_t bytes = 0;
    check(kh_op_workspace_size(op_, args.data(), static_cast<uint32_t>(args.size()), &bytes));
    return bytes;
  }
  uint64_t workspace_size(std::initializer_list<kh_value> args) const {
    return workspace_size(std::vector<kh_value>(args));
  }
  // The schema index of the workspace argument, -1 when none.
  int32_t workspace_arg() const { return kh_op_workspace_arg(op_); }
  const kh_op* get() const noexcept { return op_; }

 private:
  const kh_op* op_;
};

// Owns a loaded kernel package; move-only.
class Kernel {
 public:
  explicit Kernel(kh_kernel* k) noexcept : k_(k) {}
  Kernel(Kernel&& other) noexcept : k_(std::exchange(other.k_, nullptr)) {}
  Kernel& operator=(Kernel&& other) noexcept {
    if (this != &other) {
      kh_kernel_release(k_);
      k_ = std::exchange(other.k_, nullptr);
    }
    return *this;
  }
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  ~Kernel() { kh_kernel_release(k_); }

  std::string name() const { return kh_kernel_name(k_); }
  std::string version() const { return kh_kernel_version(k_); }
  std::string variant() const { return kh_kernel_variant(k_); }
  std::string path() const { return kh_kernel_path(k_); }
  std::vector<Op> ops() const {
    std::vector<Op> result;
    for (uint32_t i = 0; i < kh_kernel_num_ops(k_); ++i) result.emplace_back(kh_kernel_op_at(k_, i));
    return result;
  }
  Op op(const std::string& name) const {
    const kh_op* op = nullptr;
    check(kh_kernel_find_op(k_, name.c_str(), &op));
    return Op(op);
  }
  kh_kernel* get() const noexcept { return k_; }

 private:
  kh_kernel* k_;
};

inline Kernel load_kernel(const std::string& spec, const kh_load_options* options = nullptr) {
  kh_kernel* k = nullptr;
  check(kh_load_kernel(spec.c_str(), options, &k));
  return Kernel(k);
}

inline Kernel load_kernel_library(const std::string& path) {
  kh_kernel* k = nullptr;
  check(kh_load_kernel_library(path.c_str(), &k));
  return Kernel(k);
}

}  // namespace kh

#endif  // KH_KH_HPP
