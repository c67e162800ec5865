// attention_cpu.cpp: the CPU backend of attention_fwd, attention_varlen_fwd and (1.2)
// attention_varlen_fwd_fp8 (e4m3 operands decoded exactly, times their descale), also the test
// oracle: scores, soft-cap, softmax and the weighted sum of v are computed in double; out is
// rounded to its dtype once, lse to float once. Plain loops: it is a reference, not a fast path.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention_args.hpp"
#include "attention_fp8.hpp"
#include "attention_ops.hpp"
#include "attention_visibility.hpp"
#include "kh_kernel/args.hpp"
#include "kh_kernel/cpu_dispatch.hpp"

namespace kh_attention {
namespace {

using kh_kernels::from_double;
using kh_kernels::to_double;

// An element in double: bf16/fp16 as stored; e4m3 (attention_varlen_fwd_fp8) decoded exactly and
// times its descale factor (NaN bytes stay NaN here: the oracle's decoding).
template <typename T>
double element_value(const T* x, double) {
  return to_double(*x);
}
double element_value(const uint8_t* x, double descale) { return static_cast<double>(e4m3_to_float(*x)) * descale; }

// A tensor's descale factor for KV head hkv (1 where the tensor is not e4m3).
double descale_of(const float* scale, int64_t stride, int64_t hkv) { return scale ? scale[hkv * stride] : 1.0; }

// T: out's type; QT, KVT: q's and k/v's (T, or uint8_t for e4m3).
template <typename T, typename QT, typename KVT>
void attention_prefill_cpu(const AttentionParams& p) {
  const int64_t d = p.head_dim, dv = p.head_dim_v;
  const int64_t group = p.heads_q / p.heads_kv;
  std::vector<double> k, v, q(static_cast<size_t>(d)), acc(static_cast<size_t>(dv)), score;
  const QT* q_base = static_cast<const QT*>(p.q);
  const KVT* k_base = static_cast<const KVT*>(p.k);
  const KVT* v_base = static_cast<const KVT*>(p.v);
  T* o_base = static_cast<T*>(p.out);

  for (int64_t b = 0; b < p.batch; ++b) {
    const SeqBounds s = seq_bounds(p.cu_seqlens_q, p.cu_seqlens_q_stride, p.cu_seqlens_k, p.cu_seqlens_k_stride,
                                   p.total_q, p.total_k, p.seqlen_q, p.seqlen_k, b);
    const int64_t sq = s.len_q, sk = s.len_k;
    if (sq == 0) continue;
    k.assign(static_cast<size_t>(sk * d), 0.0);
    v.assign(static_cast<size_t>(sk * dv), 0.0);
    score.assign(static_cast<size_t>(sk), 0.0);
    for (int64_t hkv = 0; hkv < p.heads_kv; ++hkv) {
      // This kv head in double, once for the whole group of q heads reading it.
      const double k_descale = descale_of(p.k_scale, p.k_scale_stride, hkv);
      const double v_descale = descale_of(p.v_scale, p.v_scale_stride, hkv);
      const double q_descale = descale_of(p.q_scale, p.q_scale_stride, hkv);
      for (int64_t j = 0; j < sk; ++j) {
        const KVT* kr = k_base + b * p.k_batch_stride + (s.k_start + j) * p.k_row_stride + hkv * p.k_head_stride;
        const KVT* vr = v_base + b * p.v_batch_stride + (s.k_start + j) * p.v_row_stride + hkv * p.v_head_stride;
        for (int64_t e = 0; e < d; ++e) k[j * d + e] = element_value(kr + e, k_descale);
        for (int64_t e = 0; e < dv; ++e) v[j * dv + e] = element_value(vr + e, v_descale);
      }
      for (int64_t h = hkv * group; h < (hkv + 1) * group; ++h) {
        for (int64_t i = 0; i < sq; ++i) {
          const int64_t row = s.q_start + i;
          const QT* qr = q_base + b * p.q_batch_stride + row * p.q_row_stride + h * p.q_head_stride;
          for (int64_t e = 0; e < d; ++e) q[e] = element_value(qr + e, q_descale);
          const KeyRange<int64_t> keys = visible_keys<int64_t>(i, sq, sk, p.causal, p.window_left);
          double row_max = -std::numeric_limits<double>::infinity();
          for (int64_t j = keys.lo; j < keys.end; ++j) {
            double x = 0;
            for (int64_t e = 0; e < d; ++e) x += q[e] * k[j * d + e];
            x *= p.scale;
            if (p.softcap > 0) x = p.softcap * std::tanh(x / p.softcap);
            score[j] = x;
            row_max = std::max(row_max, x);
          }
          std::fill(acc.begin(), acc.end(), 0.0);
          double denom = 0;
          for (int64_t j = keys.lo; j < keys.end; ++j) {
            const double w = std::exp(score[j] - row_max);
            denom += w;
            for (int64_t e = 0; e < dv; ++e) acc[e] += w * v[j * dv + e];
          }
          const bool any = keys.end > keys.lo;
          T* orow = o_base + b * p.o_batch_stride + row * p.o_row_stride + h * p.o_head_stride;
          for (int64_t e = 0; e < dv; ++e) orow[e] = from_double<T>(any ? acc[e] / denom : 0.0);
          if (p.lse) {
            const double lse = any ? row_max + std::log(denom) : -std::numeric_limits<double>::infinity();
            p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + row * p.lse_row_stride] = static_cast<float>(lse);
          }
        }
      }
    }
  }
}

template <typename Parse>
kh_status run_prefill(const char* op, const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx, Parse parse) {
  return kh_kernels::guarded({op, ctx, KH_DEVICE_TYPE}, [&] {
    AttentionParams p;
    KH_KERNEL_TRY(parse(args, nargs, ctx, &p));
    if (p.empty()) return KH_OK;
    kh_kernels::dispatch_float(p.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (p.q_fp8) attention_prefill_cpu<T, uint8_t, uint8_t>(p);
      else if (p.kv_fp8) attention_prefill_cpu<T, T, uint8_t>(p);
      else attention_prefill_cpu<T, T, T>(p);
    });
    return KH_OK;
  });
}

}  // namespace

kh_status attention_fwd_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return run_prefill("attention_fwd", args, nargs, ctx, parse_attention_fwd_args);
}

kh_status attention_varlen_fwd_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return run_prefill("attention_varlen_fwd", args, nargs, ctx, parse_attention_varlen_fwd_args);
}

// FP8 KV and FP8 prefill (an e4m3 q) alike: the oracle dequantizes every operand.
kh_status attention_varlen_fwd_fp8_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return run_prefill("attention_varlen_fwd_fp8", args, nargs, ctx, parse_attention_varlen_fwd_fp8_args);
}

}  // namespace kh_attention
