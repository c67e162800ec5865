// activation_cpu.cpp: the CPU backend of the activation package, also its oracle: act() and the
// product with the gate are computed in double and each output element is rounded to its dtype
// exactly once.
//   out[..., i] = act(x[..., i]) * x[..., d + i]
// The forms below have no cancellation: 1 + erf(z) = erfc(-z), and
// 0.5 a (1 + tanh(u)) = a / (1 + exp(-2 u)).
#include <cmath>

#include "activation_args.hpp"
#include "activation_ops.hpp"
#include "kh_kernel/cpu_dispatch.hpp"

namespace kh_activation {
namespace {

using kh_kernels::from_double;
using kh_kernels::to_double;

double act(ActKind kind, double a, double threshold) {
  switch (kind) {
    case ActKind::kSilu: return a / (1.0 + std::exp(-a));
    case ActKind::kGelu: return 0.5 * a * std::erfc(-a * 0.70710678118654752440);
    case ActKind::kGeluTanh: {
      const double u = 0.79788456080286535588 * (a + 0.044715 * a * a * a);  // sqrt(2 / pi) (a + 0.044715 a^3)
      return a / (1.0 + std::exp(-2.0 * u));
    }
    case ActKind::kFatRelu: return a > threshold ? a : 0.0;
  }
  return 0.0;
}

template <typename T>
void act_and_mul_rows(const ActivationParams& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const T* x = static_cast<const T*>(p.x) + p.x_rows.offset(r);
    T* out = static_cast<T*>(p.out) + p.out_rows.offset(r);  // may be x itself: x[i] is read before out[i]
    for (int64_t i = 0; i < p.d; ++i) {
      const double a = to_double(x[i]), gate = to_double(x[p.d + i]);
      out[i] = from_double<T>(act(p.kind, a, p.threshold) * gate);
    }
  }
}

}  // namespace

kh_status run_activation(const kh_kernels::OpContext&, const ActivationParams& p) {
  if (p.rows == 0) return KH_OK;
  kh_kernels::dispatch_float(p.dtype, [&](auto tag) { act_and_mul_rows<typename decltype(tag)::type>(p); });
  return KH_OK;
}

}  // namespace kh_activation
