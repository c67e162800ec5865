// test_rms_norm.cpp: the rms-norm CPU library through the public host API: values against a
// float64 computation for every dtype, weight dtype, size, row layout and alias case, and
// each kind of bad argument refused with a message naming it.
#include <doctest/doctest.h>

#include "kernel_test_support.hpp"
#include "kh/kh.hpp"
#include "norm_test_harness.hpp"

using namespace kh_test;

namespace {
const kh::Kernel& rms_norm_kernel() {
  static const kh::Kernel kernel = kh::load_kernel_library(KH_RMS_NORM_CPU_LIB);
  return kernel;
}
}  // namespace

TEST_CASE("rms_norm: descriptor") {
  const kh::Kernel& k = rms_norm_kernel();
  CHECK(k.name() == "kernels-community/rms-norm");
  CHECK(k.version() == "1.0.0");
  CHECK(k.variant() == KH_EXPECTED_CPU_VARIANT);
  CHECK(kh_kernel_device_type(k.get()) == kDLCPU);
  CHECK(k.op("rms_norm").schema() == "rms_norm(Tensor(a!) out, Tensor x, Tensor weight, float eps) -> ()");
  CHECK(k.op("fused_add_rms_norm").schema() ==
        "fused_add_rms_norm(Tensor(a!) out, Tensor(b!) residual_out, Tensor x, Tensor residual, Tensor weight, "
        "float eps) -> ()");
}

TEST_CASE("rms_norm: values") {
  const kh::Kernel& k = rms_norm_kernel();
  uint64_t seed = 1;
  for (bool fused : {false, true}) {
    for (Dt dt : {Dt::f32, Dt::f16, Dt::bf16}) {
      for (Dt wdt : {Dt::f32, dt}) {
        if (dt == Dt::f32 && wdt != Dt::f32 && fused) continue;
        NormCase c;
        c.fused = fused;
        c.dt = dt;
        c.wdt = wdt;
        {  // hidden sizes
          for (int64_t hidden : {1, 7, 4096}) {
            c.hidden = hidden;
            c.lead = {3};
            run_norm_case(k, c, seed++);
          }
        }
        {  // hidden 65537, one row, 1-D x
          c.hidden = 65537;
          c.lead = {};
          run_norm_case(k, c, seed++);
        }
        {  // row counts 0, 1, odd
          for (int64_t rows : {0, 1, 17}) {
            c.lead = {rows};
            c.hidden = 33;
            run_norm_case(k, c, seed++);
          }
        }
        {  // strided rows, several leading dims
          c.hidden = 40;
          c.lead = {3, 5};
          c.pad = 3;
          run_norm_case(k, c, seed++);
          c.lead = {2, 1, 3};
          run_norm_case(k, c, seed++);
        }
        {  // out aliases x, residual_out aliases residual
          c.hidden = 100;
          c.lead = {4};
          c.pad = 2;
          c.out_is_x = true;
          c.residual_out_is_residual = fused;
          run_norm_case(k, c, seed++);
        }
      }
    }
  }
}

TEST_CASE("rms_norm: eps matters") {
  NormCase c;
  c.hidden = 16;
  c.lead = {2};
  c.eps = 0.5;
  run_norm_case(rms_norm_kernel(), c, 99);
}

TEST_CASE("rms_norm: bad arguments are refused and named") {
  const kh::Kernel& k = rms_norm_kernel();
  const kh::Op op = k.op("rms_norm");
  Random rnd(7);
  Tensor x = make_tensor(Dt::f16, {4, 2048});
  Tensor out = make_tensor(Dt::f16, {4, 2048});
  Tensor w = make_tensor(Dt::f16, {2048});
  rnd.fill(x);
  rnd.fill(w);
  auto expect_bad = [&](std::vector<kh_value> args, const char* arg_name) {
    CAPTURE(arg_name);
    CHECK(call(op, std::move(args)) == KH_ERROR_INVALID_ARGUMENT);
    INFO(kh_last_error());
    CHECK(error_names(arg_name));
  };
  SUBCASE("weight of the wrong length") {
    Tensor w4096 = make_tensor(Dt::f16, {4096});
    expect_bad({targ(out), targ(x), targ(w4096), kh::arg(1e-6)}, "weight");
    CHECK(std::string(kh_last_error()).find("[4096] does not match x's last dim 2048") != std::string::npos);
  }
  SUBCASE("weight of another half dtype") {
    Tensor wb = make_tensor(Dt::bf16, {2048});
    expect_bad({targ(out), targ(x), targ(wb), kh::arg(1e-6)}, "weight");
  }
  SUBCASE("weight missing") { expect_bad({targ(out), targ(x), kh::none(), kh::arg(1e-6)}, "weight"); }
  SUBCASE("x of an unsupported dtype") {
    Tensor x64 = make_tensor(Dt::f32, {4, 2048});
    x64.dl.dtype = DLDataType{kDLFloat, 64, 1};
    expect_bad({targ(out), targ(x64), targ(w), kh::arg(1e-6)}, "x");
  }
  SUBCASE("out of another dtype") {
    Tensor out32 = make_tensor(Dt::f32, {4, 2048});
    expect_bad({targ(out32), targ(x), targ(w), kh::arg(1e-6)}, "out");
  }
  SUBCASE("out of another shape") {
    Tensor out5 = make_tensor(Dt::f16, {5, 2048});
    expect_bad({targ(out5), targ(x), targ(w), kh::arg(1e-6)}, "out");
  }
  SUBCASE("x with a strided last dim") {
    Tensor xs = make_tensor(Dt::f16, {4, 2048}, {4096, 2});
    expect_bad({targ(out), targ(xs), targ(w), kh::arg(1e-6)}, "x");
  }
  SUBCASE("x with no data") {
    Tensor xn = make_tensor(Dt::f16, {4, 2048});
    xn.dl.data = nullptr;
    expect_bad({targ(out), targ(xn), targ(w), kh::arg(1e-6)}, "x");
  }
  SUBCASE("x with hidden size 0") {
    Tensor x0 = make_tensor(Dt::f16, {4, 0});
    Tensor o0 = make_tensor(Dt::f16, {4, 0});
    Tensor w0 = make_tensor(Dt::f16, {0});
    expect_bad({targ(o0), targ(x0), targ(w0), kh::arg(1e-6)}, "x");
  }
  SUBCASE("x on a GPU") {
    Tensor xg = make_tensor(Dt::f16, {4, 2048});
    xg.dl.device = DLDevice{kDLCUDA, 0};
    expect_bad({targ(out), targ(xg), targ(w), kh::arg(1e-6)}, "x");
  }
  SUBCASE("eps negative or NaN") {
    expect_bad({targ(out), targ(x), targ(w), kh::arg(-1e-6)}, "eps");
    expect_bad({targ(out), targ(x), targ(w), kh::arg(std::nan(""))}, "eps");
  }
  SUBCASE("out partly overlapping x") {
    Tensor big = make_tensor(Dt::f16, {5, 2048});
    Tensor xv = make_view(big, {4, 2048}, {2048, 1}, 0);
    Tensor ov = make_view(big, {4, 2048}, {2048, 1}, 2048);
    expect_bad({targ(ov), targ(xv), targ(w), kh::arg(1e-6)}, "out");
  }
  SUBCASE("fused: residual_out overlapping out") {
    const kh::Op fused = k.op("fused_add_rms_norm");
    Tensor r = make_tensor(Dt::f16, {4, 2048});
    CHECK(call(fused, {targ(out), targ(out), targ(x), targ(r), targ(w), kh::arg(1e-6)}) ==
          KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("out"));
  }
  SUBCASE("fused: residual of another shape") {
    const kh::Op fused = k.op("fused_add_rms_norm");
    Tensor r = make_tensor(Dt::f16, {4, 1024});
    Tensor ro = make_tensor(Dt::f16, {4, 2048});
    CHECK(call(fused, {targ(out), targ(ro), targ(x), targ(r), targ(w), kh::arg(1e-6)}) ==
          KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("residual"));
  }
  SUBCASE("wrong argument count") {
    CHECK(call(op, {targ(out), targ(x), targ(w)}) == KH_ERROR_INVALID_ARGUMENT);
  }
  // Nothing was written by any refused call.
  for (int64_t i = 0; i < out.storage_elems(); ++i) REQUIRE(std::isnan(out.get_at(i)));
}
