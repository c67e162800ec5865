// attention_decode_cpu.cpp: the CPU backend of attention_decode_paged and (1.2)
// attention_decode_paged_fp8 (e4m3 caches decoded exactly, times their descale), also the test oracle:
// keys are gathered through the block table, scores, soft-cap, softmax and the weighted sum
// of v are computed in double; out is rounded to its dtype once, lse to float once. The
// workspace is checked (same rule as every backend) but not used: nothing is split here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention_decode_args.hpp"
#include "attention_fp8.hpp"
#include "attention_ops.hpp"
#include "kh_kernel/args.hpp"
#include "kh_kernel/cpu_dispatch.hpp"

namespace kh_attention {
namespace {

using kh_kernels::from_double;
using kh_kernels::to_double;

// Lengths outside [0, max_kv] are clamped (as on the GPU, which cannot refuse them).
int64_t clamped_len(const DecodeParams& p, int64_t b) {
  return std::min<int64_t>(std::max<int64_t>(p.seq_lens[b * p.seq_lens_stride], 0), p.max_kv());
}

// The first key any query row of sequence b can see: the window's start for the oldest token
// (0 without a window). Keys before it are not read, nor are their table entries.
int64_t first_visible_key(const DecodeParams& p, int64_t len) {
  return p.window_left >= 0 ? std::max<int64_t>(0, len - p.q_len - p.window_left) : 0;
}

// The table is on the host here, so an entry the call would read that lies outside
// [0, num_blocks) refuses the call before anything is written (a GPU build, which cannot read it
// without a host synchronisation, leaves that block's keys out instead: decode_block_ok).
kh_status check_block_table(const kh_kernels::OpContext& c, const DecodeParams& p) {
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t len = clamped_len(p, b);
    if (len == 0) continue;
    const int32_t* table = p.block_table + b * p.bt_batch_stride;
    for (int64_t j = first_visible_key(p, len) >> p.block_shift; j <= (len - 1) >> p.block_shift; ++j)
      if (!decode_block_ok(table[j], p.num_blocks))
        return kh_kernels::arg_error(c, "block_table",
                                     "block_table[%lld, %lld] = %d is outside [0, num_blocks = k_cache.shape[0] = %d) "
                                     "and holds keys sequence %lld reads (length %lld); nothing was written",
                                     (long long)b, (long long)j, table[j], p.num_blocks, (long long)b, (long long)len);
  }
  return KH_OK;
}

// A cache element in double: bf16/fp16 as stored; e4m3 (attention_decode_paged_fp8) decoded and
// times its kv head's descale factor (NaN bytes stay NaN here: the oracle's decoding).
template <typename T>
double cache_value(const T* x, double) {
  return to_double(*x);
}
double cache_value(const uint8_t* x, double descale) { return static_cast<double>(e4m3_to_float(*x)) * descale; }

// T: q's and out's type; KV: the caches' (T, or uint8_t for e4m3).
template <typename T, typename KV>
void attention_decode_cpu(const DecodeParams& p) {
  const int64_t d = p.head_dim, group = p.heads_q / p.heads_kv;
  const T* qb = static_cast<const T*>(p.q);
  const KV* kb = static_cast<const KV*>(p.k);
  const KV* vb = static_cast<const KV*>(p.v);
  T* ob = static_cast<T*>(p.out);
  std::vector<double> k, v, q(static_cast<size_t>(d)), acc(static_cast<size_t>(d)), score;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t len = clamped_len(p, b), first = first_visible_key(p, len);
    const int32_t* table = p.block_table + b * p.bt_batch_stride;
    for (int64_t hkv = 0; hkv < p.heads_kv; ++hkv) {
      const double k_descale = p.kv_fp8 ? p.k_scale[hkv * p.k_scale_stride] : 1.0;
      const double v_descale = p.kv_fp8 ? p.v_scale[hkv * p.v_scale_stride] : 1.0;
      k.assign(static_cast<size_t>(len * d), 0.0);
      v.assign(static_cast<size_t>(len * d), 0.0);
      for (int64_t j = first; j < len; ++j) {
        const int64_t blk = table[j >> p.block_shift], off = j & (p.block_size - 1);
        const KV* kr = kb + blk * p.k_block_stride + off * p.k_row_stride + hkv * p.k_head_stride;
        const KV* vr = vb + blk * p.v_block_stride + off * p.v_row_stride + hkv * p.v_head_stride;
        for (int64_t e = 0; e < d; ++e) {
          k[j * d + e] = cache_value(kr + e, k_descale);
          v[j * d + e] = cache_value(vr + e, v_descale);
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

template <typename Parse>
kh_status run_decode(const char* op, const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx, Parse parse) {
  return kh_kernels::guarded({op, ctx, KH_DEVICE_TYPE}, [&] {
    DecodeParams p;
    KH_KERNEL_TRY(parse(args, nargs, ctx, &p));
    if (p.empty()) return KH_OK;
    KH_KERNEL_TRY(check_block_table({op, ctx, KH_DEVICE_TYPE}, p));
    kh_kernels::dispatch_float(kh_kernels::DType(p.dtype == ElementType::kBF16 ? kh_kernels::DType::kBF16
                                                                               : kh_kernels::DType::kF16),
                               [&](auto tag) {
                                 using T = typename decltype(tag)::type;
                                 if (p.kv_fp8) attention_decode_cpu<T, uint8_t>(p);
                                 else attention_decode_cpu<T, T>(p);
                               });
    return KH_OK;
  });
}

}  // namespace

kh_status attention_decode_paged_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return run_decode("attention_decode_paged", args, nargs, ctx, parse_attention_decode_args);
}

kh_status attention_decode_paged_fp8_invoke(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx) {
  return run_decode("attention_decode_paged_fp8", args, nargs, ctx, parse_attention_decode_fp8_args);
}

}  // namespace kh_attention
