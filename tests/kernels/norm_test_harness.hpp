// norm_test_harness.hpp: one norm call (rms or layer, plain or fused) on random inputs with
// chosen dtypes, shapes, row strides and aliasing, checked against a float64 computation
// written here, independent of kernels-src.
#pragma once

#include <cmath>
#include <vector>

#include "kernel_test_support.hpp"

namespace kh_test {

struct NormCase {
  bool layer = false;  // layer-norm, else rms-norm
  bool fused = false;  // fused_add_*: residual_out = x + residual first
  Dt dt = Dt::f32;
  Dt wdt = Dt::f32;  // weight and bias dtype: f32 or dt
  bool has_weight = true;
  bool has_bias = false;  // layer-norm only
  int64_t hidden = 8;
  std::vector<int64_t> lead;  // leading (row) dims; empty: x is 1-D, one row
  int64_t pad = 0;            // extra elements after each row and each leading dim: strided rows
  bool out_is_x = false;      // out aliases x exactly
  bool residual_out_is_residual = false;
  double eps = 1e-5;
};

inline std::vector<int64_t> padded_strides(const std::vector<int64_t>& shape, int64_t pad) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = acc;
    acc = acc * shape[d] + pad;
  }
  return s;
}

inline void run_norm_case(const kh::Kernel& kernel, const NormCase& c, uint64_t seed) {
  CAPTURE(c.layer);
  CAPTURE(c.fused);
  CAPTURE(dt_name(c.dt));
  CAPTURE(dt_name(c.wdt));
  CAPTURE(c.hidden);
  CAPTURE(c.pad);
  CAPTURE(c.out_is_x);
  Random rnd(seed);
  std::vector<int64_t> shape = c.lead;
  shape.push_back(c.hidden);
  const std::vector<int64_t> strides = padded_strides(shape, c.pad);

  Tensor x = make_tensor(c.dt, shape, strides);
  rnd.fill(x);
  Tensor residual = make_tensor(c.dt, shape, padded_strides(shape, c.pad + 1));
  Tensor residual_out = make_tensor(c.dt, shape, padded_strides(shape, c.pad + 2));
  if (c.fused) rnd.fill(residual);
  Tensor out = make_tensor(c.dt, shape, padded_strides(shape, c.pad + 3));
  Tensor weight = make_tensor(c.wdt, {c.hidden});
  Tensor bias = make_tensor(c.wdt, {c.hidden});
  rnd.fill(weight);
  rnd.fill(bias);

  // Expected values, from the inputs as they are before the call (outputs may alias them).
  std::vector<int64_t> lead_shape = c.lead;
  std::vector<std::vector<double>> want_out, want_residual;
  std::vector<std::vector<int64_t>> row_indices;
  auto expect_row = [&](const std::vector<int64_t>& lead_idx) {
    std::vector<double> row(static_cast<size_t>(c.hidden)), sum_row;
    std::vector<int64_t> idx = lead_idx;
    idx.push_back(0);
    for (int64_t j = 0; j < c.hidden; ++j) {
      idx.back() = j;
      row[j] = x.get(idx);
      if (c.fused) row[j] = round_to(row[j] + residual.get(idx), c.dt);
    }
    if (c.fused) sum_row = row;
    std::vector<double> o(static_cast<size_t>(c.hidden));
    double mean = 0, ss = 0;
    if (c.layer) {
      for (double v : row) mean += v;
      mean /= c.hidden;
    }
    for (double v : row) ss += (v - mean) * (v - mean);
    const double inv = 1.0 / std::sqrt(ss / c.hidden + c.eps);
    for (int64_t j = 0; j < c.hidden; ++j) {
      const double w = c.has_weight ? weight.get({j}) : 1.0;
      const double b = c.has_bias ? bias.get({j}) : 0.0;
      o[j] = (row[j] - mean) * inv * w + b;
    }
    want_out.push_back(o);
    want_residual.push_back(sum_row);
    row_indices.push_back(lead_idx);
  };
  if (lead_shape.empty()) expect_row({});
  else for_each_index(lead_shape, expect_row);

  Tensor& out_t = c.out_is_x ? x : out;
  Tensor& res_out_t = c.residual_out_is_residual ? residual : residual_out;
  std::vector<kh_value> args = {targ(out_t)};
  if (c.fused) args.push_back(targ(res_out_t));
  args.push_back(targ(x));
  if (c.fused) args.push_back(targ(residual));
  args.push_back(c.has_weight ? targ(weight) : kh::none());
  if (c.layer) args.push_back(c.has_bias ? targ(bias) : kh::none());
  args.push_back(kh::arg(c.eps));
  const char* name = c.layer ? (c.fused ? "fused_add_layer_norm" : "layer_norm")
                             : (c.fused ? "fused_add_rms_norm" : "rms_norm");
  const kh_status status = call(kernel.op(name), args);
  INFO(kh_last_error());
  REQUIRE(status == KH_OK);

  int64_t bad_out = 0, bad_residual = 0;
  for (size_t r = 0; r < row_indices.size(); ++r) {
    std::vector<int64_t> idx = row_indices[r];
    idx.push_back(0);
    for (int64_t j = 0; j < c.hidden; ++j) {
      idx.back() = j;
      const double got = out_t.get(idx);
      if (!close(got, want_out[r][j], c.dt)) {
        if (bad_out++ < 3) MESSAGE("out row " << r << " col " << j << ": got " << got << " want " << want_out[r][j]);
      }
      if (c.fused && res_out_t.get(idx) != want_residual[r][j]) {
        if (bad_residual++ < 3)
          MESSAGE("residual_out row " << r << " col " << j << ": got " << res_out_t.get(idx) << " want "
                                      << want_residual[r][j]);
      }
    }
  }
  CHECK(bad_out == 0);
  CHECK(bad_residual == 0);
  CHECK(count_gap_writes(out_t) == 0);
  if (c.fused) CHECK(count_gap_writes(res_out_t) == 0);
}

}  // namespace kh_test
