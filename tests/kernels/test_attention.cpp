// test_attention.cpp: the attention CPU library through the public host API: attention_fwd
// against a float64 computation written in the tests (attention_test_reference.hpp: MHA, GQA,
// MQA, causal with seqlen_q < and > seqlen_k, length 1, lengths off multiples of 64, lse
// present or not, packed and padded layouts, every head dim class from 32 to 256 and v's head
// dim 128 with q's 192), and bad arguments refused with a message naming them.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "attention_test_support.hpp"
#include "kernel_test_support.hpp"
#include "kh/kh.hpp"

using namespace kh_test;

namespace {

struct AttnCase {
  Dt dt = Dt::bf16;
  int64_t batch = 1, sq = 16, sk = 16, hq = 2, hkv = 2, d = 64;
  int64_t dv = 0;  // v's head dim; 0: d
  bool causal = false;
  bool lse = true;
  bool packed_qkv = false;  // q, k, v views into one (batch, seq, hq + 2 hkv, d) buffer (needs sq == sk, dv == d)
  int64_t out_pad = 0;      // extra elements per out row (seq) stride
};

void run_attention_case(const AttnCase& c, uint64_t seed) {
  const int64_t dv = c.dv ? c.dv : c.d;
  CAPTURE(dt_name(c.dt));
  CAPTURE(c.batch);
  CAPTURE(c.sq);
  CAPTURE(c.sk);
  CAPTURE(c.hq);
  CAPTURE(c.hkv);
  CAPTURE(c.d);
  CAPTURE(dv);
  CAPTURE(c.causal);
  CAPTURE(c.packed_qkv);
  Random rnd(seed);
  Tensor q, k, v, qkv;
  if (c.packed_qkv) {
    REQUIRE((c.sq == c.sk && dv == c.d));
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
    v = make_tensor(c.dt, {c.batch, c.sk, c.hkv, dv});
    rnd.fill(q);
    rnd.fill(k);
    rnd.fill(v);
  }
  const int64_t orow = c.hq * dv + c.out_pad;
  Tensor out = make_tensor(c.dt, {c.batch, c.sq, c.hq, dv}, {c.sq * orow, orow, dv, 1});
  Tensor lse = make_tensor(Dt::f32, {c.batch, c.hq, c.sq});
  AttnSemantics m;
  m.scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  m.causal = c.causal;

  const kh_status status = call(attention_kernel().op("attention_fwd"),
                                {targ(out), c.lse ? targ(lse) : kh::none(), targ(q), targ(k), targ(v),
                                 kh::arg(m.scale), kh::arg(c.causal)});
  INFO(kh_last_error());
  REQUIRE(status == KH_OK);

  int64_t bad = 0;
  for (int64_t b = 0; b < c.batch; ++b) {
    SeqInputs in;
    in.sq = c.sq, in.sk = c.sk, in.hq = c.hq, in.hkv = c.hkv, in.d = c.d, in.dv = dv;
    in.q = gather_rows(q, b, 0, c.sq);
    in.k = gather_rows(k, b, 0, c.sk);
    in.v = gather_rows(v, b, 0, c.sk);
    const SeqOutputs want = reference_attention(in, m);
    const std::function<double(int64_t, int64_t)> lse_at = [&](int64_t h, int64_t i) { return lse.get({b, h, i}); };
    bad += check_sequence(
        in, want, c.dt, [&](int64_t i, int64_t h, int64_t e) { return out.get({b, i, h, e}); },
        c.lse ? &lse_at : nullptr);
  }
  CHECK(bad == 0);
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
    {  // head dims across the range (1.1): multiples of 8 that are and are not powers of two
      for (int64_t d : {32, 40, 72, 80, 96, 104, 136, 160, 192, 200, 248}) {
        c = AttnCase{};
        c.dt = dt;
        c.d = d, c.sq = 19, c.sk = 23, c.hq = 4, c.hkv = 2, c.causal = d % 16 == 0;
        run_attention_case(c, seed++);
      }
    }
    {  // v's head dim 128 with q's 192 (1.1), causal and not, padded out rows
      c = AttnCase{};
      c.dt = dt;
      c.d = 192, c.dv = 128, c.sq = 21, c.sk = 30, c.hq = 4, c.hkv = 1, c.out_pad = 8;
      run_attention_case(c, seed++);
      c.causal = true, c.lse = false;
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
  SUBCASE("head dims off the grid, and v's head dim not q's") {
    for (int64_t d : {36, 24, 264}) {  // 1.0 also refused 96; 1.1 takes every multiple of 8 in [32, 256]
      Tensor qd = make_tensor(Dt::bf16, {1, 8, 4, d});
      Tensor kd = make_tensor(Dt::bf16, {1, 8, 2, d});
      Tensor od = make_tensor(Dt::bf16, {1, 8, 4, d});
      CHECK(call_with(od, kh::none(), qd, kd, kd, scale, causal) == KH_ERROR_UNSUPPORTED);
      CHECK(std::string(kh_last_error()).find("head_dim " + std::to_string(d)) != std::string::npos);
      CHECK(error_names("q"));
    }
    // v's head dim must be q's, or 128 with q's 192
    Tensor q128 = make_tensor(Dt::bf16, {1, 8, 4, 128});
    Tensor k128 = make_tensor(Dt::bf16, {1, 8, 2, 128});
    Tensor v64 = make_tensor(Dt::bf16, {1, 8, 2, 64});
    Tensor o64 = make_tensor(Dt::bf16, {1, 8, 4, 64});
    CHECK(call_with(o64, kh::none(), q128, k128, v64, scale, causal) == KH_ERROR_UNSUPPORTED);
    CHECK(error_names("v"));
    Tensor q192 = make_tensor(Dt::bf16, {1, 8, 4, 192});
    Tensor k192 = make_tensor(Dt::bf16, {1, 8, 2, 192});
    Tensor v128 = make_tensor(Dt::bf16, {1, 8, 2, 128});
    Tensor o128 = make_tensor(Dt::bf16, {1, 8, 4, 128});
    rnd.fill(q192), rnd.fill(k192), rnd.fill(v128);
    CHECK(call_with(o128, kh::none(), q192, k192, v128, scale, causal) == KH_OK);
    // out must carry v's head dim, not q's
    Tensor o192 = make_tensor(Dt::bf16, {1, 8, 4, 192});
    CHECK(call_with(o192, kh::none(), q192, k192, v128, scale, causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("out"));
    // and v's other dims must be k's
    Tensor v128h = make_tensor(Dt::bf16, {1, 8, 4, 128});
    CHECK(call_with(o128, kh::none(), q192, k192, v128h, scale, causal) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("v"));
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
