// test_attention.cpp: the attention CPU library through the public host API: attention_fwd
// against a float64 computation written here (MHA, GQA, MQA, causal with seqlen_q < and >
// seqlen_k, length 1, lengths off multiples of 64, lse present or not, packed and padded
// layouts), and bad arguments refused with a message naming them.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "kernel_test_support.hpp"
#include "kh/kh.hpp"

using namespace kh_test;

namespace {

const kh::Kernel& attention_kernel() {
  static const kh::Kernel kernel = kh::load_kernel_library(KH_ATTENTION_CPU_LIB);
  return kernel;
}

struct AttnCase {
  Dt dt = Dt::bf16;
  int64_t batch = 1, sq = 16, sk = 16, hq = 2, hkv = 2, d = 64;
  bool causal = false;
  bool lse = true;
  bool packed_qkv = false;  // q, k, v views into one (batch, seq, hq + 2 hkv, d) buffer (needs sq == sk)
  int64_t out_pad = 0;      // extra elements per out row (seq) stride
};

void run_attention_case(const AttnCase& c, uint64_t seed) {
  CAPTURE(dt_name(c.dt));
  CAPTURE(c.batch);
  CAPTURE(c.sq);
  CAPTURE(c.sk);
  CAPTURE(c.hq);
  CAPTURE(c.hkv);
  CAPTURE(c.d);
  CAPTURE(c.causal);
  CAPTURE(c.packed_qkv);
  Random rnd(seed);
  Tensor q, k, v, qkv;
  if (c.packed_qkv) {
    REQUIRE(c.sq == c.sk);
    const int64_t heads = c.hq + 2 * c.hkv;
    qkv = make_tensor(c.dt, {c.batch, c.sq, heads, c.d});
    rnd.fill(qkv);
    const std::vector<int64_t> st = {c.sq * heads * c.d, heads * c.d, c.d, 1};
    q = make_view(qkv, {c.batch, c.sq, c.hq, c.d}, st, 0);
    k = make_view(qkv, {c.batch, c.sk, c.hkv, c.d}, st, c.hq * c.d);
    v = make_view(qkv, {c.batch, c.sk, c.hkv, c.d}, st, (c.hq + c.hkv) * c.d);
  } else {
    q = make_tensor(c.dt, {c.batch, c.sq, c.hq, c.d});
    // k and v in (batch, head, seq, dim) memory order, i.e. transposed strides.
    k = make_tensor(c.dt, {c.batch, c.sk, c.hkv, c.d}, {c.hkv * c.sk * c.d, c.d, c.sk * c.d, 1});
    v = make_tensor(c.dt, {c.batch, c.sk, c.hkv, c.d});
    rnd.fill(q);
    rnd.fill(k);
    rnd.fill(v);
  }
  const int64_t orow = c.hq * c.d + c.out_pad;
  Tensor out = make_tensor(c.dt, {c.batch, c.sq, c.hq, c.d}, {c.sq * orow, orow, c.d, 1});
  Tensor lse = make_tensor(Dt::f32, {c.batch, c.hq, c.sq});
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));

  const kh_status status = call(attention_kernel().op("attention_fwd"),
                                {targ(out), c.lse ? targ(lse) : kh::none(), targ(q), targ(k), targ(v),
                                 kh::arg(scale), kh::arg(c.causal)});
  INFO(kh_last_error());
  REQUIRE(status == KH_OK);

  // Inputs as flat float64 arrays (b, seq, head, dim), read once: the reference loops below
  // stay cheap under sanitizers.
  auto flat = [](const Tensor& t) {
    std::vector<double> a;
    a.reserve(static_cast<size_t>(t.numel()));
    for_each_index(t.shape, [&](const std::vector<int64_t>& i) { a.push_back(t.get(i)); });
    return a;
  };
  const std::vector<double> qd = flat(q), kd = flat(k), vd = flat(v), od = flat(out);
  auto qi = [&](int64_t b, int64_t i, int64_t h) { return ((b * c.sq + i) * c.hq + h) * c.d; };
  auto ki = [&](int64_t b, int64_t j, int64_t h) { return ((b * c.sk + j) * c.hkv + h) * c.d; };

  const int64_t group = c.hq / c.hkv;
  int64_t bad = 0, bad_lse = 0;
  std::vector<double> s(static_cast<size_t>(c.sk));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.hq; ++h)
      for (int64_t i = 0; i < c.sq; ++i) {
        const int64_t hk = h / group;
        const int64_t last = c.causal ? i + c.sk - c.sq : c.sk - 1;  // newest visible key
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < c.sk && j <= last; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < c.d; ++e) dot += qd[qi(b, i, h) + e] * kd[ki(b, j, hk) + e];
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        double denom = 0;
        for (int64_t j = 0; j < c.sk && j <= last; ++j) denom += std::exp(s[j] - mx);
        for (int64_t e = 0; e < c.d; ++e) {
          double want = 0;
          for (int64_t j = 0; j < c.sk && j <= last; ++j) want += std::exp(s[j] - mx) / denom * vd[ki(b, j, hk) + e];
          const double got = od[qi(b, i, h) + e];
          if (!close(got, want, c.dt) && bad++ < 3)
            MESSAGE("out[" << b << "," << i << "," << h << "," << e << "] = " << got << ", want " << want);
        }
        if (c.lse) {
          const double want = denom > 0 ? mx + std::log(denom) : -std::numeric_limits<double>::infinity();
          const double got = lse.get({b, h, i});
          if (!close(got, want, Dt::f32, 4.0) && bad_lse++ < 3)
            MESSAGE("lse[" << b << "," << h << "," << i << "] = " << got << ", want " << want);
        }
      }
  CHECK(bad == 0);
  CHECK(bad_lse == 0);
  CHECK(count_gap_writes(out) == 0);
  if (!c.lse) {  // not passed: untouched
    int64_t written = 0;
    for (int64_t i = 0; i < lse.storage_elems(); ++i) written += !std::isnan(lse.get_at(i));
    CHECK(written == 0);
  }
}

}  // namespace

TEST_CASE("attention_fwd: descriptor") {
  const kh::Kernel& k = attention_kernel();
  CHECK(k.name() == "kernels-community/attention");
  CHECK(k.variant() == KH_EXPECTED_CPU_VARIANT);
  CHECK(k.op("attention_fwd").schema() ==
        "attention_fwd(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v, float scale, bool causal) -> ()");
}

TEST_CASE("attention_fwd: values") {
  AttnCase c;
  uint64_t seed = 1000;
  for (Dt dt : {Dt::bf16, Dt::f16}) {
    {  // MHA, lengths off multiples of 64
      c = AttnCase{};
      c.dt = dt;
      c.batch = 2, c.sq = 37, c.sk = 37;
      run_attention_case(c, seed++);
      c.causal = true;
      run_attention_case(c, seed++);
    }
    {  // GQA, head dim 128, causal
      c = AttnCase{};
      c.dt = dt;
      c.hq = 4, c.hkv = 2, c.d = 128, c.sq = 70, c.sk = 70, c.causal = true;
      run_attention_case(c, seed++);
    }
    {  // MQA, causal, seqlen_q < seqlen_k
      c = AttnCase{};
      c.dt = dt;
      c.hq = 4, c.hkv = 1, c.sq = 5, c.sk = 67, c.causal = true;
      run_attention_case(c, seed++);
      c.causal = false;
      run_attention_case(c, seed++);
    }
    {  // causal, seqlen_q > seqlen_k: leading rows see nothing
      c = AttnCase{};
      c.dt = dt;
      c.sq = 40, c.sk = 9, c.causal = true;
      run_attention_case(c, seed++);
    }
    {  // length 1 and decode
      c = AttnCase{};
      c.dt = dt;
      c.sq = 1, c.sk = 1;
      run_attention_case(c, seed++);
      c.sk = 100, c.causal = true;
      run_attention_case(c, seed++);
    }
    {  // head dim 256, no lse
      c = AttnCase{};
      c.dt = dt;
      c.d = 256, c.sq = 9, c.sk = 13, c.lse = false;
      run_attention_case(c, seed++);
    }
    {  // packed qkv, padded out, GQA
      c = AttnCase{};
      c.dt = dt;
      c.packed_qkv = true, c.hq = 4, c.hkv = 2, c.sq = 33, c.sk = 33, c.causal = true, c.out_pad = 8;
      c.batch = 2;
      run_attention_case(c, seed++);
    }
    {  // empty: seqlen_k 0, seqlen_q 0, batch 0
      c = AttnCase{};
      c.dt = dt;
      c.sk = 0;
      run_attention_case(c, seed++);
      c.sk = 4, c.sq = 0;
      run_attention_case(c, seed++);
      c.sq = 4, c.batch = 0;
      run_attention_case(c, seed++);
    }
  }
}

TEST_CASE("attention_fwd: bad arguments are refused and named") {
  const kh::Op op = attention_kernel().op("attention_fwd");
  Tensor q = make_tensor(Dt::bf16, {1, 8, 4, 64});
  Tensor k = make_tensor(Dt::bf16, {1, 8, 2, 64});
  Tensor v = make_tensor(Dt::bf16, {1, 8, 2, 64});
  Tensor out = make_tensor(Dt::bf16, {1, 8, 4, 64});
  Tensor lse = make_tensor(Dt::f32, {1, 4, 8});
  Random rnd(5);
  rnd.fill(q), rnd.fill(k), rnd.fill(v);
  auto call_with = [&](Tensor& o, kh_value l, Tensor& qq, Tensor& kk, Tensor& vv, kh_value scale, kh_value causal) {
    return call(op, {targ(o), l, targ(qq), targ(kk), targ(vv), scale, causal});
  };
  const kh_value scale = kh::arg(0.125), causal = kh::arg(true);
  SUBCASE("valid call for reference") { CHECK(call_with(out, targ(lse), q, k, v, scale, causal) == KH_OK); }
  SUBCASE("unsupported head dim") {
    Tensor q96 = make_tensor(Dt::bf16, {1, 8, 4, 96});
    Tensor k96 = make_tensor(Dt::bf16, {1, 8, 2, 96});
    Tensor v96 = make_tensor(Dt::bf16, {1, 8, 2, 96});
    Tensor o96 = make_tensor(Dt::bf16, {1, 8, 4, 96});
    CHECK(call_with(o96, kh::none(), q96, k96, v96, scale, causal) == KH_ERROR_UNSUPPORTED);
    CHECK(std::string(kh_last_error()).find("head_dim 96") != std::string::npos);
    CHECK(error_names("q"));
  }
  SUBCASE("heads_kv does not divide heads_q") {
    Tensor k3 = make_tensor(Dt::bf16, {1, 8, 3, 64});
    Tensor v3 = make_tensor(Dt::bf16, {1, 8, 3, 64});
    CHECK(call_with(out, kh::none(), q, k3, v3, scale, causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("k"));
  }
  SUBCASE("k of another batch") {
    Tensor k2 = make_tensor(Dt::bf16, {2, 8, 2, 64});
    CHECK(call_with(out, kh::none(), q, k2, v, scale, causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("k"));
  }
  SUBCASE("v of another length") {
    Tensor v9 = make_tensor(Dt::bf16, {1, 9, 2, 64});
    CHECK(call_with(out, kh::none(), q, k, v9, scale, causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("v"));
  }
  SUBCASE("out of another dtype") {
    Tensor o16 = make_tensor(Dt::f16, {1, 8, 4, 64});
    CHECK(call_with(o16, kh::none(), q, k, v, scale, causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("out"));
  }
  SUBCASE("q in fp32") {
    Tensor q32 = make_tensor(Dt::f32, {1, 8, 4, 64});
    CHECK(call_with(out, kh::none(), q32, k, v, scale, causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("q"));
  }
  SUBCASE("q with a strided last dim") {
    Tensor qs = make_tensor(Dt::bf16, {1, 8, 4, 64}, {8 * 4 * 128, 4 * 128, 128, 2});
    CHECK(call_with(out, kh::none(), qs, k, v, scale, causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("q"));
  }
  SUBCASE("lse of the wrong shape, dtype or layout") {
    Tensor l1 = make_tensor(Dt::f32, {1, 8, 4});
    CHECK(call_with(out, targ(l1), q, k, v, scale, causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("lse"));
    Tensor l2 = make_tensor(Dt::f16, {1, 4, 8});
    CHECK(call_with(out, targ(l2), q, k, v, scale, causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("lse"));
    Tensor l3 = make_tensor(Dt::f32, {1, 4, 8}, {32, 1, 4});
    CHECK(call_with(out, targ(l3), q, k, v, scale, causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("lse"));
  }
  SUBCASE("scale not finite") {
    CHECK(call_with(out, kh::none(), q, k, v, kh::arg(std::nan("")), causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("scale"));
    CHECK(call_with(out, kh::none(), q, k, v, kh::arg(INFINITY), causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("scale"));
  }
  SUBCASE("out is q") {
    CHECK(call_with(q, kh::none(), q, k, v, scale, causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("out"));
  }
  SUBCASE("causal not a bool") {
    CHECK(call_with(out, kh::none(), q, k, v, scale, kh::arg(1.0)) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("causal"));
  }
}
