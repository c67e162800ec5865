// kh/kh.hpp: thin RAII wrappers over kh/kh.h for C++ hosts. Header-only; errors become
// kh::Error exceptions carrying the status and kh_last_error()'s message.
//
//   kh::Kernel k = kh::load_kernel("kernels-community/rms-norm@1");
//   k.op("rms_norm")({kh::arg(&out), kh::arg(&x), kh::arg(&w), kh::arg(1e-6)});
#ifndef KH_KH_HPP
#define KH_KH_HPP

#include <initializer_list>
#include <stdexcept>
#include <string>
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

inline kh_value arg(DLTensor* tensor) {
  kh_value v{};
  v.kind = tensor ? KH_VALUE_TENSOR : KH_VALUE_NONE;
  v.u.tensor = tensor;
  return v;
}
inline kh_value arg(double d) {
  kh_value v{};
  v.kind = KH_VALUE_DOUBLE;
  v.u.d = d;
  return v;
}
inline kh_value arg(int64_t i) {
  kh_value v{};
  v.kind = KH_VALUE_INT;
  v.u.i = i;
  return v;
}
inline kh_value arg(int i) { return arg(static_cast<int64_t>(i)); }
inline kh_value arg(bool b) {
  kh_value v{};
  v.kind = KH_VALUE_BOOL;
  v.u.b = b ? 1 : 0;
  return v;
}
inline kh_value arg(const char* s) {
  kh_value v{};
  v.kind = s ? KH_VALUE_STRING : KH_VALUE_NONE;
  v.u.s = s;
  return v;
}
inline kh_value none() { return kh_value{}; }

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
