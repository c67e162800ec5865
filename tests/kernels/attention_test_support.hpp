// attention_test_support.hpp: what the attention package's tests share: int32 host tensors
// (block tables, lengths, cu_seqlens), the prefill attention of one sequence in float64 written
// from the documented semantics (docs/ops-attention-prefill.md) independently of kernels-src,
// and the check of a kernel's out and lse against it. Used by test_attention.cpp
// (attention_fwd), test_attention_varlen.cpp (attention_varlen_fwd) and test_attention_decode.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "kernel_test_support.hpp"

namespace kh_test {

// The attention package's CPU library (KH_ATTENTION_CPU_LIB, set by tests/kernels/CMakeLists.txt),
// loaded once for a test program.
inline const kh::Kernel& attention_kernel() {
  static const kh::Kernel kernel = kh::load_kernel_library(KH_ATTENTION_CPU_LIB);
  return kernel;
}

// An int32 host tensor (block tables, lengths) with any strides.
struct IntTensor {
  std::vector<int64_t> shape, strides;
  std::vector<int32_t> data;
  DLTensor dl{};
  IntTensor(std::vector<int64_t> shp, std::vector<int64_t> str = {}) : shape(std::move(shp)) {
    strides = str.empty() ? contiguous_strides(shape) : std::move(str);
    int64_t extent = 1;
    for (size_t d = 0; d < shape.size(); ++d) extent += std::max<int64_t>(shape[d] - 1, 0) * strides[d];
    data.assign(static_cast<size_t>(extent), -7);  // poison: never a valid block id or length
    dl.data = data.data();
    dl.device = DLDevice{kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = DLDataType{kDLInt, 32, 1};
    dl.shape = shape.data();
    dl.strides = strides.data();
  }
  IntTensor(const IntTensor&) = delete;
  IntTensor& operator=(const IntTensor&) = delete;
  int32_t& at(int64_t i) { return data[static_cast<size_t>(i * strides[0])]; }
  int32_t& at(int64_t i, int64_t j) { return data[static_cast<size_t>(i * strides[0] + j * strides[1])]; }
  kh_value arg() { return kh::arg(&dl); }
};

// What a call computes besides its tensors.
struct AttnSemantics {
  double scale = 0.125;
  bool causal = false;
  int64_t window_left = -1;  // -1: none
  double softcap = 0.0;      // 0: none
};

// One sequence: q (sq, hq, d), k (sk, hkv, d), v (sk, hkv, dv) as flat row-major arrays.
struct SeqInputs {
  int64_t sq = 0, sk = 0, hq = 1, hkv = 1, d = 64, dv = 64;
  std::vector<double> q, k, v;
};

// out (sq, hq, dv) and lse (hq, sq) of one sequence: query i sits at key position
// i + sk - sq; causal: it sees keys j <= that position; a window: keys j >= position - window;
// scores scale * q.k, then softcap * tanh(score / softcap); a row that sees nothing: 0, -inf.
struct SeqOutputs {
  std::vector<double> out, lse;
};

inline SeqOutputs reference_attention(const SeqInputs& in, const AttnSemantics& m) {
  SeqOutputs r;
  r.out.assign(static_cast<size_t>(in.sq * in.hq * in.dv), 0.0);
  r.lse.assign(static_cast<size_t>(in.hq * in.sq), -std::numeric_limits<double>::infinity());
  const int64_t group = in.hq / in.hkv;
  std::vector<double> s(static_cast<size_t>(in.sk));
  for (int64_t h = 0; h < in.hq; ++h)
    for (int64_t i = 0; i < in.sq; ++i) {
      const int64_t hk = h / group, pos = i + in.sk - in.sq;
      const int64_t newest = m.causal ? std::min(pos, in.sk - 1) : in.sk - 1;
      const int64_t oldest = m.window_left >= 0 ? std::max<int64_t>(0, pos - m.window_left) : 0;
      if (newest < oldest) continue;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = oldest; j <= newest; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < in.d; ++e)
          dot += in.q[static_cast<size_t>((i * in.hq + h) * in.d + e)] *
                 in.k[static_cast<size_t>((j * in.hkv + hk) * in.d + e)];
        double x = dot * m.scale;
        if (m.softcap > 0) x = m.softcap * std::tanh(x / m.softcap);
        s[static_cast<size_t>(j)] = x;
        mx = std::max(mx, x);
      }
      double denom = 0;
      for (int64_t j = oldest; j <= newest; ++j) denom += std::exp(s[static_cast<size_t>(j)] - mx);
      for (int64_t e = 0; e < in.dv; ++e) {
        double o = 0;
        for (int64_t j = oldest; j <= newest; ++j)
          o += std::exp(s[static_cast<size_t>(j)] - mx) / denom * in.v[static_cast<size_t>((j * in.hkv + hk) * in.dv + e)];
        r.out[static_cast<size_t>((i * in.hq + h) * in.dv + e)] = o;
      }
      r.lse[static_cast<size_t>(h * in.sq + i)] = mx + std::log(denom);
    }
  return r;
}

// Rows [row0, row0 + rows) x heads x dims of a rank-3 or rank-4 tensor (the leading index
// `lead` fixed for rank 4) as a flat (rows, heads, dims) array.
inline std::vector<double> gather_rows(const Tensor& t, int64_t lead, int64_t row0, int64_t rows) {
  const bool r4 = t.shape.size() == 4;
  const int64_t heads = t.shape[r4 ? 2 : 1], dims = t.shape[r4 ? 3 : 2];
  std::vector<double> a;
  a.reserve(static_cast<size_t>(rows * heads * dims));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t e = 0; e < dims; ++e)
        a.push_back(r4 ? t.get({lead, row0 + i, h, e}) : t.get({row0 + i, h, e}));
  return a;
}

// Compares a kernel's out rows (through `out_at(i, h, e)`) and lse (through `lse_at(h, i)`, or
// none) with the reference of one sequence; returns the number of mismatches, printing a few.
inline int64_t check_sequence(const SeqInputs& in, const SeqOutputs& want, Dt dt,
                              const std::function<double(int64_t, int64_t, int64_t)>& out_at,
                              const std::function<double(int64_t, int64_t)>* lse_at) {
  int64_t bad = 0;
  for (int64_t i = 0; i < in.sq; ++i)
    for (int64_t h = 0; h < in.hq; ++h) {
      for (int64_t e = 0; e < in.dv; ++e) {
        const double w = want.out[static_cast<size_t>((i * in.hq + h) * in.dv + e)], got = out_at(i, h, e);
        if (!close(got, w, dt) && bad++ < 3) MESSAGE("out[" << i << "," << h << "," << e << "] = " << got << ", want " << w);
      }
      if (lse_at != nullptr) {
        const double w = want.lse[static_cast<size_t>(h * in.sq + i)], got = (*lse_at)(h, i);
        if (!close(got, w, Dt::f32, 4.0) && bad++ < 3) MESSAGE("lse[" << h << "," << i << "] = " << got << ", want " << w);
      }
    }
  return bad;
}

}  // namespace kh_test
