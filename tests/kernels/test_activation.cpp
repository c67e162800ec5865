// test_activation.cpp: the activation CPU library through the public host API: every op's
// values against a float64 computation written here (independent of kernels-src), for every
// dtype, odd and even d, leading dims, strided rows (out's and x's strides independent), in
// place; the fatrelu threshold decided as a double; and each kind of bad argument refused
// with a message naming it, nothing written.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "kh/kh.hpp"
#include "norm_test_harness.hpp"  // padded_strides

using namespace kh_test;

namespace {

const kh::Kernel& activation_kernel() {
  static const kh::Kernel kernel = kh::load_kernel_library(KH_ACTIVATION_CPU_LIB);
  return kernel;
}

enum class Act { silu, gelu, gelu_tanh, fatrelu };
const char* op_name(Act a) {
  return a == Act::silu ? "silu_and_mul" : a == Act::gelu ? "gelu_and_mul" : a == Act::gelu_tanh ? "gelu_tanh_and_mul"
                                                                                               : "fatrelu_and_mul";
}

// act(a) in double from the definitions, written so that nothing cancels:
// 1 + erf(z) = erfc(-z), and 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2 u)).
double act_ref(Act act, double a, double threshold) {
  const double pi = 3.14159265358979323846;
  switch (act) {
    case Act::silu: return a / (1.0 + std::exp(-a));
    case Act::gelu: return 0.5 * a * std::erfc(-a / std::sqrt(2.0));
    case Act::gelu_tanh: return a / (1.0 + std::exp(-2.0 * std::sqrt(2.0 / pi) * (a + 0.044715 * a * a * a)));
    case Act::fatrelu: return a > threshold ? a : 0.0;
  }
  return 0.0;
}

// The CPU build computes in double and rounds once: within half a unit in the last place of
// the dtype (plus half the smallest subnormal, where the spacing is absolute).
bool correctly_rounded(double got, double want, Dt dt) {
  const double half_subnormal = std::ldexp(1.0, dt == Dt::f16 ? -25 : dt == Dt::bf16 ? -134 : -150);
  return close(got, want, dt, 0.5 + 1e-6, half_subnormal);
}

// Inputs in [-8, 8] on a grid the dtype holds exactly, so the tails of every act() are reached.
void fill_wide(Tensor& t, Random& rnd) {
  for_each_index(t.shape, [&](const std::vector<int64_t>& i) { t.set(i, 8.0 * rnd.value(t.dt)); });
}

struct ActCase {
  Act act = Act::silu;
  Dt dt = Dt::f32;
  int64_t d = 8;
  std::vector<int64_t> lead;  // leading dims; empty: x is 1-D (one row)
  int64_t x_pad = 0;          // extra elements after each row of x (and after each leading dim)
  int64_t out_pad = 0;        // the same for out, independently
  bool in_place = false;      // out = x[..., :d] (x's strides)
  double threshold = 0.0;
};

void run_case(const ActCase& c, uint64_t seed) {
  CAPTURE(op_name(c.act));
  CAPTURE(dt_name(c.dt));
  CAPTURE(c.d);
  CAPTURE(c.lead.size());
  CAPTURE(c.x_pad);
  CAPTURE(c.out_pad);
  CAPTURE(c.in_place);
  CAPTURE(c.threshold);
  Random rnd(seed);
  std::vector<int64_t> xs = c.lead, os = c.lead;
  xs.push_back(2 * c.d);
  os.push_back(c.d);
  Tensor x = make_tensor(c.dt, xs, padded_strides(xs, c.x_pad));
  fill_wide(x, rnd);
  Tensor separate = make_tensor(c.dt, os, padded_strides(os, c.out_pad));
  Tensor out = c.in_place ? make_view(x, os, x.strides, 0) : std::move(separate);

  // Expected values from x as it is before the call (out may be x's first half).
  std::vector<double> want, gate_before;
  for_each_index(os, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> g = i;
    g.back() += c.d;
    want.push_back(act_ref(c.act, x.get(i), c.threshold) * x.get(g));
    gate_before.push_back(x.get(g));
  });
  std::vector<kh_value> args = {targ(out), targ(x)};
  if (c.act == Act::fatrelu) args.push_back(kh::arg(c.threshold));
  const kh_status status = call(activation_kernel().op(op_name(c.act)), args);
  INFO(kh_last_error());
  REQUIRE(status == KH_OK);

  int64_t bad = 0, n = 0, gate_changed = 0;
  for_each_index(os, [&](const std::vector<int64_t>& i) {
    const double got = out.get(i);
    if (!correctly_rounded(got, want[n], c.dt) && bad++ < 3)
      MESSAGE("out element " << n << ": got " << got << " want " << want[n]);
    std::vector<int64_t> g = i;
    g.back() += c.d;
    if (x.get(g) != gate_before[n]) ++gate_changed;
    ++n;
  });
  CHECK(bad == 0);
  CHECK(gate_changed == 0);  // the gate half is read, never written
  if (!c.in_place) CHECK(count_gap_writes(out) == 0);
}

}  // namespace

TEST_CASE("activation: descriptor") {
  const kh::Kernel& k = activation_kernel();
  const std::string identity = std::string(k.name()) + " " + k.version() + " " + k.variant();
  CHECK(identity == std::string("kernels-community/activation 1.0.0 ") + KH_EXPECTED_CPU_VARIANT);
  CHECK(kh_kernel_device_type(k.get()) == kDLCPU);
  // The op table in kernel.json's order, each schema exactly as kernel.json documents it.
  const char* const schemas[] = {"silu_and_mul(Tensor(a!) out, Tensor x) -> ()",
                                 "gelu_and_mul(Tensor(a!) out, Tensor x) -> ()",
                                 "gelu_tanh_and_mul(Tensor(a!) out, Tensor x) -> ()",
                                 "fatrelu_and_mul(Tensor(a!) out, Tensor x, float threshold) -> ()"};
  REQUIRE(kh_kernel_num_ops(k.get()) == 4);
  for (uint32_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(std::string(kh_op_schema(kh_kernel_op_at(k.get(), i))) == schemas[i]);
  }
}

TEST_CASE("activation: values") {
  uint64_t seed = 1;
  for (Act act : {Act::silu, Act::gelu, Act::gelu_tanh, Act::fatrelu}) {
    for (Dt dt : {Dt::f32, Dt::f16, Dt::bf16}) {
      ActCase c;
      c.act = act;
      c.dt = dt;
      c.threshold = act == Act::fatrelu ? 0.25 : 0.0;
      for (int64_t d : {1, 7, 8, 64, 1000}) {  // odd and even d, one row and several
        c.d = d;
        c.lead = {3};
        run_case(c, seed++);
      }
      c.d = 4099;  // one long row, x 1-D
      c.lead = {};
      run_case(c, seed++);
      for (int64_t rows : {0, 1, 17}) {
        c.d = 33;
        c.lead = {rows};
        run_case(c, seed++);
      }
      c.d = 40;  // several leading dims, strided rows, out's and x's strides independent
      c.lead = {3, 5};
      c.x_pad = 3;
      c.out_pad = 5;
      run_case(c, seed++);
      c.lead = {2, 1, 3};
      c.x_pad = 0;
      run_case(c, seed++);
      c.d = 100;  // in place: out = x[..., :d]
      c.lead = {4};
      c.x_pad = 2;
      c.in_place = true;
      run_case(c, seed++);
    }
  }
}

TEST_CASE("activation: fatrelu's threshold is compared as a double") {
  uint64_t seed = 100;
  for (Dt dt : {Dt::f32, Dt::f16, Dt::bf16}) {
    // 0.1 is exact in none of the dtypes; 0.5 and -1 are exact in all (an input equal to the
    // threshold gives 0: the rule is a > threshold); 100 is above every input.
    for (double threshold : {0.1, 0.5, -1.0, 100.0, -100.0}) {
      ActCase c;
      c.act = Act::fatrelu;
      c.dt = dt;
      c.d = 257;
      c.lead = {5};
      c.threshold = threshold;
      run_case(c, seed++);
    }
  }
  SUBCASE("an input equal to the threshold gives 0; the next value above passes") {
    Tensor x = make_tensor(Dt::bf16, {1, 4});
    Tensor out = make_tensor(Dt::bf16, {1, 2});
    x.set({0, 0}, 0.5);
    x.set({0, 1}, 0.50390625);  // the bf16 after 0.5
    x.set({0, 2}, 2.0);
    x.set({0, 3}, 2.0);
    REQUIRE(call(activation_kernel().op("fatrelu_and_mul"), {targ(out), targ(x), kh::arg(0.5)}) == KH_OK);
    CHECK(out.get({0, 0}) == 0.0);
    CHECK(out.get({0, 1}) == 0.50390625 * 2.0);
  }
}

TEST_CASE("activation: bad arguments are refused and named, nothing written") {
  const kh::Op silu = activation_kernel().op("silu_and_mul"), fat = activation_kernel().op("fatrelu_and_mul");
  Tensor x = make_tensor(Dt::bf16, {4, 256}), out = make_tensor(Dt::bf16, {4, 128});
  Random(7).fill(x);
  auto expect_bad = [&](const kh::Op& op, std::vector<kh_value> args, const char* arg_name) {
    CAPTURE(arg_name);
    CHECK(call(op, std::move(args)) == KH_ERROR_INVALID_ARGUMENT);
    INFO(kh_last_error());
    if (arg_name) CHECK(error_names(arg_name));
  };
  SUBCASE("x's last dim odd") {
    Tensor x5 = make_tensor(Dt::bf16, {4, 255});
    expect_bad(silu, {targ(out), targ(x5)}, "x");
    CHECK(std::string(kh_last_error()).find("2 d with d >= 1") != std::string::npos);
  }
  SUBCASE("x's last dim 0") {
    Tensor x0 = make_tensor(Dt::bf16, {4, 0});
    Tensor o0 = make_tensor(Dt::bf16, {4, 0});
    expect_bad(silu, {targ(o0), targ(x0)}, "x");
  }
  SUBCASE("out's last dim is not d") {
    Tensor o = make_tensor(Dt::bf16, {4, 256});
    expect_bad(silu, {targ(o), targ(x)}, "out");
    CHECK(std::string(kh_last_error()).find("d = 128") != std::string::npos);
  }
  SUBCASE("out's leading dims differ") {
    Tensor o = make_tensor(Dt::bf16, {2, 2, 128});
    expect_bad(silu, {targ(o), targ(x)}, "out");
  }
  SUBCASE("out of another dtype") {
    Tensor o = make_tensor(Dt::f16, {4, 128});
    expect_bad(silu, {targ(o), targ(x)}, "out");
  }
  SUBCASE("x of an unsupported dtype") {
    Tensor x64 = make_tensor(Dt::f32, {4, 256});
    x64.dl.dtype = DLDataType{kDLFloat, 64, 1};
    expect_bad(silu, {targ(out), targ(x64)}, "x");
  }
  SUBCASE("x's last dim strided") {
    Tensor xs = make_tensor(Dt::bf16, {4, 256}, {512, 2});
    expect_bad(silu, {targ(out), targ(xs)}, "x");
  }
  SUBCASE("out's last dim strided") {
    Tensor os = make_tensor(Dt::bf16, {4, 128}, {256, 2});
    expect_bad(silu, {targ(os), targ(x)}, "out");
  }
  SUBCASE("out overlapping x other than as x[..., :d]") {
    Tensor ov = make_view(x, {4, 128}, {256, 1}, 1);
    expect_bad(silu, {targ(ov), targ(x)}, "out");
    Tensor gate_half = make_view(x, {4, 128}, {256, 1}, 128);
    expect_bad(silu, {targ(gate_half), targ(x)}, "out");
  }
  SUBCASE("out broadcast over rows (stride 0)") {
    Tensor one = make_tensor(Dt::bf16, {1, 128});
    Tensor b = make_view(one, {4, 128}, {0, 1}, 0);
    expect_bad(silu, {targ(b), targ(x)}, "out");
    for (int64_t i = 0; i < one.storage_elems(); ++i) REQUIRE(std::isnan(one.get_at(i)));
  }
  SUBCASE("out on a GPU") {
    Tensor og = make_tensor(Dt::bf16, {4, 128});
    og.dl.device = DLDevice{kDLCUDA, 0};
    expect_bad(silu, {targ(og), targ(x)}, "out");
  }
  SUBCASE("threshold not finite, or not a float") {
    expect_bad(fat, {targ(out), targ(x), kh::arg(std::nan(""))}, "threshold");
    expect_bad(fat, {targ(out), targ(x), kh::arg(std::numeric_limits<double>::infinity())}, "threshold");
    expect_bad(fat, {targ(out), targ(x), kh::arg(int64_t{1})}, "threshold");
    expect_bad(fat, {targ(out), targ(x)}, nullptr);
  }
  SUBCASE("wrong argument count") { expect_bad(silu, {targ(out), targ(x), kh::arg(0.5)}, nullptr); }
  for (int64_t i = 0; i < out.storage_elems(); ++i) REQUIRE(std::isnan(out.get_at(i)));
}
