// attention_decode_cpu.cpp: the CPU backend of attention_decode_paged, also the test oracle:
// keys are gathered through the block table, scores, soft-cap, softmax and the weighted sum
// of v are computed in double; out is rounded to its dtype once, lse to float once. The
// workspace is checked (same rule as every backend) but not used: nothing is split here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention_decode_args.hpp"
#include "attention_ops.hpp"
#include "kh_kernel/args.hpp"
#include "kh_kernel/cpu_dispatch.hpp"

namespace kh_attention {
namespace {

using kh_kernels::from_double;
using kh_kernels::to_double;

template <typename T>
void attention_decode_cpu(const DecodeParams& p) {
  const int64_t d = p.head_dim, group = p.heads_q / p.heads_kv, max_kv = p.max_kv();
  const T* qb = static_cast<const T*>(p.q);
  const T* kb = static_cast<const T*>(p.k);
  const T* vb = static_cast<const T*>(p.v);
  T* ob = static_cast<T*>(p.out);
  std::vector<double> k, v, q(static_cast<size_t>(d)), acc(static_cast<size_t>(d)), score;
  for (int64_t b = 0; b < p.batch; ++b) {
    // Lengths outside [0, max_kv] are clamped (as on the GPU, which cannot refuse them).
    const int64_t len = std::min<int64_t>(std::max<int64_t>(p.seq_lens[b * p.seq_lens_stride], 0), max_kv);
    const int32_t* table = p.block_table + b * p.bt_batch_stride;
    for (int64_t hkv = 0; hkv < p.heads_kv; ++hkv) {
      k.assign(static_cast<size_t>(len * d), 0.0);
      v.assign(static_cast<size_t>(len * d), 0.0);
      for (int64_t j = 0; j < len; ++j) {
        const int64_t blk = table[j >> p.block_shift], off = j & (p.block_size - 1);
        const T* kr = kb + blk * p.k_block_stride + off * p.k_row_stride + hkv * p.k_head_stride;
        const T* vr = vb + blk * p.v_block_stride + off * p.v_row_stride + hkv * p.v_head_stride;
        for (int64_t e = 0; e < d; ++e) {
          k[j * d + e] = to_double(kr[e]);
          v[j * d + e] = to_double(vr[e]);
        }
      }
      score.assign(static_cast<size_t>(len), 0.0);
      for (int64_t h = hkv * group; h < (hkv + 1) * group; ++h) {
        for (int64_t i = 0; i < p.q_len; ++i) {
          const T* qr = qb + b * p.q_batch_stride + i * p.q_row_stride + h * p.q_head_stride;
          for (int64_t e = 0; e < d; ++e) q[e] = to_double(qr[e]);
          const int64_t pos = len - p.q_len + i;  // this query's own key position
          const int64_t hi = std::min(pos, len - 1);
          const int64_t lo = p.window_left >= 0 ? std::max<int64_t>(0, pos - p.window_left) : 0;
          double row_max = -std::numeric_limits<double>::infinity();
          for (int64_t j = lo; j <= hi; ++j) {
            double s = 0;
            for (int64_t e = 0; e < d; ++e) s += q[e] * k[j * d + e];
            s *= p.scale_f64;
            if (p.softcap_f64 > 0) s = p.softcap_f64 * std::tanh(s / p.softcap_f64);
            score[j] = s;
            row_max = std::max(row_max, s);
          }
          std::fill(acc.begin(), acc.end(), 0.0);
          double denom = 0;
          for (int64_t j = lo; j <= hi; ++j) {
            const double w = std::exp(score[j] - row_max);
            denom += w;
            for (int64_t e = 0; e < d; ++e) acc[e] += w * v[j * d + e];
          }
          const bool any = hi >= lo;
          T* orow = ob + b * p.o_batch_stride + i * p.o_row_stride + h * p.o_head_stride;
          for (int64_t e = 0; e < d; ++e) orow[e] = from_double<T>(any ? acc[e] / denom : 0.0);
          if (p.lse)
            p.lse[(b * p.heads_q + h) * p.q_len + i] =
                static_cast<float>(any ? row_max + std::log(denom) : -std::numeric_limits<double>::infinity());
        }
      }
    }
  }
}

}  // namespace

kh_status attention_decode_paged_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return kh_kernels::guarded({"attention_decode_paged", ctx, KH_DEVICE_TYPE}, [&] {
    DecodeParams p;
    KH_KERNEL_TRY(parse_attention_decode_args(args, nargs, ctx, &p));
    if (p.empty()) return KH_OK;
    kh_kernels::dispatch_float(kh_kernels::DType(p.dtype == ElementType::kBF16 ? kh_kernels::DType::kBF16
                                                                               : kh_kernels::DType::kF16),
                               [&](auto tag) { attention_decode_cpu<typename decltype(tag)::type>(p); });
    return KH_OK;
  });
}

}  // namespace kh_attention
