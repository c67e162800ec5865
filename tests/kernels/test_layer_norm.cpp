// test_layer_norm.cpp: the layer-norm CPU library through the public host API: values
// against a float64 computation with and without weight and bias, fused and not, over
// dtypes, sizes and row layouts; bad arguments refused with a message naming them.
#include <doctest/doctest.h>

#include "kernel_test_support.hpp"
#include "kh/kh.hpp"
#include "norm_test_harness.hpp"

using namespace kh_test;

namespace {
const kh::Kernel& layer_norm_kernel() {
  static const kh::Kernel kernel = kh::load_kernel_library(KH_LAYER_NORM_CPU_LIB);
  return kernel;
}
}  // namespace

TEST_CASE("layer_norm: descriptor") {
  const kh::Kernel& k = layer_norm_kernel();
  CHECK(k.name() == "kernels-community/layer-norm");
  CHECK(k.version() == "1.0.0");
  CHECK(k.variant() == KH_EXPECTED_CPU_VARIANT);
  CHECK(k.op("layer_norm").schema() ==
        "layer_norm(Tensor(a!) out, Tensor x, Tensor? weight, Tensor? bias, float eps) -> ()");
  CHECK(k.ops().size() == 2);
}

TEST_CASE("layer_norm: values") {
  const kh::Kernel& k = layer_norm_kernel();
  uint64_t seed = 100;
  for (bool fused : {false, true}) {
    for (Dt dt : {Dt::f32, Dt::f16, Dt::bf16}) {
      for (Dt wdt : {Dt::f32, dt}) {
        NormCase c;
        c.layer = true;
        c.fused = fused;
        c.dt = dt;
        c.wdt = wdt;
        {  // weight and bias present or not
          for (int mask = 0; mask < 4; ++mask) {
            c.has_weight = mask & 1;
            c.has_bias = mask & 2;
            c.hidden = 257;
            c.lead = {3};
            run_norm_case(k, c, seed++);
          }
        }
        {  // hidden sizes
          c.has_bias = true;
          for (int64_t hidden : {1, 7, 4096}) {
            c.hidden = hidden;
            c.lead = {2};
            run_norm_case(k, c, seed++);
          }
          c.hidden = 65537;
          c.lead = {};
          run_norm_case(k, c, seed++);
        }
        {  // rows 0 and odd, strided
          c.has_bias = true;
          c.hidden = 48;
          c.pad = 5;
          for (int64_t rows : {0, 1, 9}) {
            c.lead = {rows};
            run_norm_case(k, c, seed++);
          }
          c.lead = {3, 3};
          run_norm_case(k, c, seed++);
        }
        {  // aliasing
          c.has_bias = true;
          c.hidden = 64;
          c.lead = {5};
          c.out_is_x = true;
          c.residual_out_is_residual = fused;
          run_norm_case(k, c, seed++);
        }
      }
    }
  }
}

TEST_CASE("layer_norm: bad arguments are refused and named") {
  const kh::Kernel& k = layer_norm_kernel();
  Random rnd(3);
  Tensor x = make_tensor(Dt::bf16, {2, 3, 64});
  Tensor out = make_tensor(Dt::bf16, {2, 3, 64});
  Tensor w = make_tensor(Dt::f32, {64});
  rnd.fill(x);
  rnd.fill(w);
  const kh::Op op = k.op("layer_norm");
  SUBCASE("bias of the wrong length") {
    Tensor b = make_tensor(Dt::f32, {63});
    CHECK(call(op, {targ(out), targ(x), targ(w), targ(b), kh::arg(1e-5)}) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("bias"));
  }
  SUBCASE("weight 2-D") {
    Tensor w2 = make_tensor(Dt::f32, {1, 64});
    CHECK(call(op, {targ(out), targ(x), targ(w2), kh::none(), kh::arg(1e-5)}) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("weight"));
  }
  SUBCASE("fused: residual_out of another dtype") {
    Tensor r = make_tensor(Dt::bf16, {2, 3, 64});
    Tensor ro = make_tensor(Dt::f16, {2, 3, 64});
    CHECK(call(k.op("fused_add_layer_norm"),
               {targ(out), targ(ro), targ(x), targ(r), kh::none(), kh::none(), kh::arg(1e-5)}) ==
          KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("residual_out"));
  }
  SUBCASE("eps infinite") {
    CHECK(call(op, {targ(out), targ(x), kh::none(), kh::none(), kh::arg(INFINITY)}) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("eps"));
  }
}
