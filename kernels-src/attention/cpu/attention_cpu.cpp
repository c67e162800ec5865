// attention_cpu.cpp: the CPU backend of attention_fwd, also the test oracle: scores, softmax
// and the weighted sum of v are computed in double; out is rounded to its dtype once, lse
// to float once. Plain loops: it is a reference, not a fast path.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention_args.hpp"
#include "attention_ops.hpp"
#include "kh_kernel/args.hpp"
#include "kh_kernel/cpu_dispatch.hpp"

namespace kh_attention {
namespace {

using kh_kernels::from_double;
using kh_kernels::to_double;

template <typename T>
void attention_fwd_cpu(const AttentionParams& p) {
  const int64_t d = p.head_dim, sq = p.seqlen_q, sk = p.seqlen_k;
  const int64_t group = p.heads_q / p.heads_kv;
  std::vector<double> k(static_cast<size_t>(sk * d)), v(static_cast<size_t>(sk * d));
  std::vector<double> q(static_cast<size_t>(d)), acc(static_cast<size_t>(d)), score(static_cast<size_t>(sk));
  const T* q_base = static_cast<const T*>(p.q);
  const T* k_base = static_cast<const T*>(p.k);
  const T* v_base = static_cast<const T*>(p.v);
  T* o_base = static_cast<T*>(p.out);

  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t hkv = 0; hkv < p.heads_kv; ++hkv) {
      // This kv head in double, once for the whole group of q heads reading it.
      for (int64_t j = 0; j < sk; ++j) {
        const T* kr = k_base + b * p.k_batch_stride + j * p.k_row_stride + hkv * p.k_head_stride;
        const T* vr = v_base + b * p.v_batch_stride + j * p.v_row_stride + hkv * p.v_head_stride;
        for (int64_t e = 0; e < d; ++e) {
          k[j * d + e] = to_double(kr[e]);
          v[j * d + e] = to_double(vr[e]);
        }
      }
      for (int64_t h = hkv * group; h < (hkv + 1) * group; ++h) {
        for (int64_t i = 0; i < sq; ++i) {
          const T* qr = q_base + b * p.q_batch_stride + i * p.q_row_stride + h * p.q_head_stride;
          for (int64_t e = 0; e < d; ++e) q[e] = to_double(qr[e]);
          // Keys [0, visible): bottom-right aligned causal mask.
          int64_t visible = sk;
          if (p.causal) visible = std::min<int64_t>(sk, std::max<int64_t>(0, i + sk - sq + 1));
          double row_max = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < visible; ++j) {
            double s = 0;
            for (int64_t e = 0; e < d; ++e) s += q[e] * k[j * d + e];
            score[j] = s * p.scale;
            row_max = std::max(row_max, score[j]);
          }
          std::fill(acc.begin(), acc.end(), 0.0);
          double denom = 0;
          for (int64_t j = 0; j < visible; ++j) {
            const double w = std::exp(score[j] - row_max);
            denom += w;
            for (int64_t e = 0; e < d; ++e) acc[e] += w * v[j * d + e];
          }
          T* orow = o_base + b * p.o_batch_stride + i * p.o_row_stride + h * p.o_head_stride;
          for (int64_t e = 0; e < d; ++e) orow[e] = from_double<T>(visible > 0 ? acc[e] / denom : 0.0);
          if (p.lse) {
            const double lse = visible > 0 ? row_max + std::log(denom) : -std::numeric_limits<double>::infinity();
            p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + i * p.lse_row_stride] = static_cast<float>(lse);
          }
        }
      }
    }
  }
}

}  // namespace

kh_status attention_fwd_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return kh_kernels::guarded({"attention_fwd", ctx, KH_DEVICE_TYPE}, [&] {
    AttentionParams p;
    KH_KERNEL_TRY(parse_attention_fwd_args(args, nargs, ctx, &p));
    if (p.empty()) return KH_OK;
    kh_kernels::dispatch_float(p.dtype, [&](auto tag) { attention_fwd_cpu<typename decltype(tag)::type>(p); });
    return KH_OK;
  });
}

}  // namespace kh_attention
