// test_attention_varlen.cpp: attention_varlen_fwd of the attention CPU library through the
// public host API, against the float64 reference of attention_test_support.hpp per sequence:
// packed sequences of lengths 0, 1, odd and long, q and k lengths that differ (bottom-right
// aligned causal, rows that see nothing), sliding windows with and without causal, soft-cap,
// MHA/GQA/MQA, head dims across 32..256 and 192/128, lse present or not, strided (packed qkv)
// inputs, padded out rows, strided cu_seqlens, packed rows outside every sequence (never
// written); the same numbers as attention_fwd for equal lengths; offsets outside the rules
// clamped as documented; and bad calls refused with the argument named.
#include <doctest/doctest.h>

#include <climits>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "attention_test_support.hpp"
#include "kernel_test_support.hpp"
#include "kh/kh.hpp"

using namespace kh_test;

namespace {

struct VarlenCase {
  Dt dt = Dt::bf16;
  std::vector<int64_t> lens_q = {5, 1, 0, 37}, lens_k;  // lens_k empty: lens_q
  int64_t hq = 4, hkv = 2, d = 64, dv = 0;                 // dv 0: d
  AttnSemantics m;
  bool lse = true;
  bool packed_qkv = false;         // q, k, v views of one (total, hq + 2 hkv, d) buffer (lens_k == lens_q, dv == d)
  int64_t q_tail = 0, k_tail = 0;  // packed rows after the last sequence: neither read nor written
  int64_t out_pad = 0;             // extra elements per out row
  int64_t cu_stride = 1;           // cu_seqlens element stride
  int64_t max_extra = 0;           // max_seqlen_q/k above the longest sequence (an upper bound)
};

struct VarlenCall {
  Tensor q, k, v, out, lse, qkv;
  IntTensor cu_q, cu_k;
  int64_t total_q = 0, total_k = 0, max_q = 0, max_k = 0;
  VarlenCall(size_t batch, int64_t cu_stride)
      : cu_q({static_cast<int64_t>(batch) + 1}, {cu_stride}), cu_k({static_cast<int64_t>(batch) + 1}, {cu_stride}) {}
};

int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }
int64_t longest(const std::vector<int64_t>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

// Makes the tensors of case c (random inputs, NaN-poisoned outputs).
void make_call(const VarlenCase& c, uint64_t seed, VarlenCall* t) {
  const std::vector<int64_t>& lk = c.lens_k.empty() ? c.lens_q : c.lens_k;
  const int64_t dv = c.dv ? c.dv : c.d;
  t->total_q = sum(c.lens_q) + c.q_tail;
  t->total_k = sum(lk) + c.k_tail;
  t->max_q = longest(c.lens_q) + c.max_extra;
  t->max_k = longest(lk) + c.max_extra;
  t->cu_q.at(0) = 0, t->cu_k.at(0) = 0;
  for (size_t b = 0; b < c.lens_q.size(); ++b) {
    t->cu_q.at(static_cast<int64_t>(b) + 1) = static_cast<int32_t>(t->cu_q.at(static_cast<int64_t>(b)) + c.lens_q[b]);
    t->cu_k.at(static_cast<int64_t>(b) + 1) = static_cast<int32_t>(t->cu_k.at(static_cast<int64_t>(b)) + lk[b]);
  }
  Random rnd(seed);
  if (c.packed_qkv) {
    REQUIRE((t->total_q == t->total_k && dv == c.d));
    const int64_t heads = c.hq + 2 * c.hkv;
    t->qkv = make_tensor(c.dt, {t->total_q, heads, c.d});
    rnd.fill(t->qkv);
    const std::vector<int64_t> st = {heads * c.d, c.d, 1};
    t->q = make_view(t->qkv, {t->total_q, c.hq, c.d}, st, 0);
    t->k = make_view(t->qkv, {t->total_k, c.hkv, c.d}, st, c.hq * c.d);
    t->v = make_view(t->qkv, {t->total_k, c.hkv, c.d}, st, (c.hq + c.hkv) * c.d);
  } else {
    t->q = make_tensor(c.dt, {t->total_q, c.hq, c.d});
    // k with its heads outermost: (head, row, dim) memory order.
    t->k = make_tensor(c.dt, {t->total_k, c.hkv, c.d}, {c.d, t->total_k * c.d, 1});
    t->v = make_tensor(c.dt, {t->total_k, c.hkv, dv});
    rnd.fill(t->q), rnd.fill(t->k), rnd.fill(t->v);
  }
  const int64_t orow = c.hq * dv + c.out_pad;
  t->out = make_tensor(c.dt, {t->total_q, c.hq, dv}, {orow, dv, 1});
  t->lse = make_tensor(Dt::f32, {c.hq, t->total_q});
}

kh_status call_varlen(VarlenCall& t, const AttnSemantics& m, bool with_lse) {
  return call(attention_kernel().op("attention_varlen_fwd"),
              {targ(t.out), with_lse ? targ(t.lse) : kh::none(), targ(t.q), targ(t.k), targ(t.v), t.cu_q.arg(),
               t.cu_k.arg(), kh::arg(t.max_q), kh::arg(t.max_k), kh::arg(m.scale), kh::arg(m.causal),
               kh::arg(m.window_left), kh::arg(m.softcap)});
}

void run_varlen_case(const VarlenCase& c, uint64_t seed) {
  const std::vector<int64_t>& lk = c.lens_k.empty() ? c.lens_q : c.lens_k;
  const int64_t dv = c.dv ? c.dv : c.d;
  CAPTURE(dt_name(c.dt));
  CAPTURE(c.hq);
  CAPTURE(c.hkv);
  CAPTURE(c.d);
  CAPTURE(dv);
  CAPTURE(c.m.causal);
  CAPTURE(c.m.window_left);
  CAPTURE(c.m.softcap);
  VarlenCall t(c.lens_q.size(), c.cu_stride);
  make_call(c, seed, &t);
  const kh_status status = call_varlen(t, c.m, c.lse);
  INFO(kh_last_error());
  REQUIRE(status == KH_OK);

  int64_t bad = 0;
  std::vector<char> covered(static_cast<size_t>(t.total_q), 0);
  for (size_t b = 0; b < c.lens_q.size(); ++b) {
    const int64_t q0 = t.cu_q.at(static_cast<int64_t>(b)), k0 = t.cu_k.at(static_cast<int64_t>(b));
    CAPTURE(b);
    CAPTURE(c.lens_q[b]);
    CAPTURE(lk[b]);
    SeqInputs in;
    in.sq = c.lens_q[b], in.sk = lk[b], in.hq = c.hq, in.hkv = c.hkv, in.d = c.d, in.dv = dv;
    in.q = gather_rows(t.q, 0, q0, in.sq);
    in.k = gather_rows(t.k, 0, k0, in.sk);
    in.v = gather_rows(t.v, 0, k0, in.sk);
    const SeqOutputs want = reference_attention(in, c.m);
    const std::function<double(int64_t, int64_t)> lse_at = [&](int64_t h, int64_t i) { return t.lse.get({h, q0 + i}); };
    bad += check_sequence(
        in, want, c.dt, [&](int64_t i, int64_t h, int64_t e) { return t.out.get({q0 + i, h, e}); },
        c.lse ? &lse_at : nullptr);
    for (int64_t i = 0; i < in.sq; ++i) covered[static_cast<size_t>(q0 + i)] = 1;
  }
  CHECK(bad == 0);
  CHECK(count_gap_writes(t.out) == 0);
  // Rows outside every sequence, and lse where it was not asked for, stay as they were.
  int64_t written = 0;
  for (int64_t r = 0; r < t.total_q; ++r)
    for (int64_t h = 0; h < c.hq; ++h) {
      if (!covered[static_cast<size_t>(r)] || !c.lse) written += !std::isnan(t.lse.get({h, r}));
      if (!covered[static_cast<size_t>(r)])
        for (int64_t e = 0; e < dv; ++e) written += !std::isnan(t.out.get({r, h, e}));
    }
  CHECK(written == 0);
}

}  // namespace

TEST_CASE("attention_varlen_fwd: descriptor") {
  const kh::Kernel& k = attention_kernel();
  CHECK(k.version() == "1.2.0");
  CHECK(k.op("attention_varlen_fwd").schema() ==
        "attention_varlen_fwd(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, "
        "Tensor cu_seqlens_k, int max_seqlen_q, int max_seqlen_k, float scale, bool causal, int window_left=-1, "
        "float softcap=0.0) -> ()");
}

TEST_CASE("attention_varlen_fwd: values") {
  uint64_t seed = 7000;
  for (Dt dt : {Dt::bf16, Dt::f16}) {
    VarlenCase c;
    c.dt = dt;
    run_varlen_case(c, seed++);  // GQA 4/2, lengths 5, 1, 0, 37
    c.m.causal = true;
    run_varlen_case(c, seed++);
    c = VarlenCase{};  // q and k lengths differ: bottom-right causal, leading rows that see nothing
    c.dt = dt, c.lens_q = {5, 40, 0, 1, 3}, c.lens_k = {67, 9, 3, 1, 0}, c.m.causal = true;
    run_varlen_case(c, seed++);
    c.m.causal = false;
    run_varlen_case(c, seed++);
    c = VarlenCase{};  // sliding window, causal and not; a window of 0 (each row its own key)
    c.dt = dt, c.lens_q = {30, 1, 70}, c.lens_k = {30, 50, 70}, c.m.window_left = 7, c.m.causal = true;
    run_varlen_case(c, seed++);
    c.m.causal = false;
    run_varlen_case(c, seed++);
    c.m.causal = true, c.m.window_left = 0;
    run_varlen_case(c, seed++);
    c = VarlenCase{};  // soft-cap, MQA, no lse
    c.dt = dt, c.hq = 4, c.hkv = 1, c.lens_q = {33, 2}, c.m.softcap = 5.0, c.m.scale = 0.5, c.lse = false;
    run_varlen_case(c, seed++);
    c.lse = true, c.m.causal = true, c.m.window_left = 10;
    run_varlen_case(c, seed++);
    c = VarlenCase{};  // packed qkv, padded out rows, rows past the last sequence, strided cu_seqlens
    c.dt = dt, c.packed_qkv = true, c.lens_q = {17, 0, 64, 3}, c.q_tail = 5, c.k_tail = 5, c.out_pad = 8;
    c.cu_stride = 3, c.max_extra = 11, c.m.causal = true;
    run_varlen_case(c, seed++);
    c = VarlenCase{};  // head dims across the range
    for (int64_t d : {32, 80, 96, 136, 200, 256}) {
      c.dt = dt, c.d = d, c.lens_q = {9, 20}, c.lens_k = {25, 20}, c.m.causal = d % 32 == 0;
      run_varlen_case(c, seed++);
    }
    c = VarlenCase{};  // v's head dim 128 with q's 192
    c.dt = dt, c.d = 192, c.dv = 128, c.lens_q = {12, 1, 19}, c.lens_k = {30, 4, 19}, c.m.causal = true;
    run_varlen_case(c, seed++);
    c = VarlenCase{};  // no sequences; sequences of length 0 only
    c.dt = dt, c.lens_q = {};
    run_varlen_case(c, seed++);
    c.lens_q = {0, 0}, c.q_tail = 3, c.k_tail = 2;
    run_varlen_case(c, seed++);
  }
}

// Equal lengths: the same numbers as attention_fwd on the (batch, seqlen, heads, dim) view of
// the same buffers, bit for bit (one oracle, one rounding).
TEST_CASE("attention_varlen_fwd: equal lengths give attention_fwd's numbers") {
  const int64_t B = 3, S = 21, H = 4, HK = 2, D = 64;
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    VarlenCase c;
    c.lens_q = {S, S, S}, c.hq = H, c.hkv = HK, c.d = D, c.m.causal = causal;
    VarlenCall t(3, 1);
    make_call(c, 99, &t);
    REQUIRE(call_varlen(t, c.m, true) == KH_OK);
    auto view4 = [&](const Tensor& x, int64_t heads) {
      return make_view(x, {B, S, heads, x.shape[2]},
                       {S * x.strides[0], x.strides[0], x.strides[1], x.strides[2]}, x.offset_elems);
    };
    Tensor q4 = view4(t.q, H), k4 = view4(t.k, HK), v4 = view4(t.v, HK);
    Tensor out4 = make_tensor(Dt::bf16, {B, S, H, D});
    Tensor lse4 = make_tensor(Dt::f32, {B, H, S});
    REQUIRE(call(attention_kernel().op("attention_fwd"), {targ(out4), targ(lse4), targ(q4), targ(k4), targ(v4),
                                                          kh::arg(c.m.scale), kh::arg(causal)}) == KH_OK);
    int64_t differ = 0;
    for_each_index(out4.shape, [&](const std::vector<int64_t>& i) {
      differ += out4.get(i) != t.out.get({i[0] * S + i[1], i[2], i[3]});
    });
    for_each_index(lse4.shape, [&](const std::vector<int64_t>& i) {
      differ += lse4.get(i) != t.lse.get({i[1], i[0] * S + i[2]});
    });
    CHECK(differ == 0);
  }
}

// Offsets the host cannot refuse without reading them are clamped (docs): each start into
// [0, total], each end into [start, total], each length to max_seqlen; rows outside the
// clamped sequences are not written.
TEST_CASE("attention_varlen_fwd: offsets outside the rules are clamped") {
  VarlenCase c;
  c.lens_q = {10, 6, 8}, c.lens_k = {12, 6, 9}, c.m.causal = true;  // total_q 24, total_k 27
  VarlenCall t(3, 1);
  make_call(c, 5, &t);
  // A negative start, an end below its start (q's last), one past the tensor (k's second),
  // lengths over max_seqlen (q's first: 9 rows of 10 used, k's first and second: 11 keys).
  const int32_t cu_q[] = {-4, 9, 14, 11}, cu_k[] = {-1, 12, 500, 27};
  for (int b = 0; b < 4; ++b) t.cu_q.at(b) = cu_q[b], t.cu_k.at(b) = cu_k[b];
  t.max_q = 9, t.max_k = 11;
  REQUIRE(call_varlen(t, c.m, true) == KH_OK);
  // What the clamping makes of it: (q_start, len_q, k_start, len_k) per sequence.
  const int64_t seqs[][4] = {{0, 9, 0, 11}, {9, 5, 12, 11}, {14, 0, 27, 0}};
  int64_t bad = 0;
  for (const auto& s : seqs) {
    CAPTURE(s[0]);
    SeqInputs in;
    in.sq = s[1], in.sk = s[3], in.hq = c.hq, in.hkv = c.hkv, in.d = c.d, in.dv = c.d;
    in.q = gather_rows(t.q, 0, s[0], in.sq);
    in.k = gather_rows(t.k, 0, s[2], in.sk);
    in.v = gather_rows(t.v, 0, s[2], in.sk);
    const SeqOutputs want = reference_attention(in, c.m);
    const std::function<double(int64_t, int64_t)> lse_at = [&](int64_t h, int64_t i) { return t.lse.get({h, s[0] + i}); };
    bad += check_sequence(
        in, want, c.dt, [&](int64_t i, int64_t h, int64_t e) { return t.out.get({s[0] + i, h, e}); }, &lse_at);
  }
  CHECK(bad == 0);
  int64_t written = 0;  // rows 14..23 belong to no clamped sequence
  for (int64_t r = 14; r < 24; ++r)
    for (int64_t h = 0; h < c.hq; ++h) {
      written += !std::isnan(t.lse.get({h, r}));
      for (int64_t e = 0; e < c.d; ++e) written += !std::isnan(t.out.get({r, h, e}));
    }
  CHECK(written == 0);
}

TEST_CASE("attention_varlen_fwd: bad arguments are refused and named") {
  const kh::Op op = attention_kernel().op("attention_varlen_fwd");
  const int64_t T = 12, H = 4, HK = 2, D = 64;
  Tensor q = make_tensor(Dt::bf16, {T, H, D});
  Tensor k = make_tensor(Dt::bf16, {T, HK, D});
  Tensor v = make_tensor(Dt::bf16, {T, HK, D});
  Tensor out = make_tensor(Dt::bf16, {T, H, D});
  Tensor lse = make_tensor(Dt::f32, {H, T});
  Random rnd(3);
  rnd.fill(q), rnd.fill(k), rnd.fill(v);
  IntTensor cu_q({3}), cu_k({3});
  cu_q.at(0) = 0, cu_q.at(1) = 5, cu_q.at(2) = 12;
  cu_k.at(0) = 0, cu_k.at(1) = 7, cu_k.at(2) = 12;
  auto base = [&]() {
    return std::vector<kh_value>{targ(out),       targ(lse),       targ(q),       targ(k),         targ(v),
                                 cu_q.arg(),      cu_k.arg(),      kh::arg(int64_t{7}), kh::arg(int64_t{7}),
                                 kh::arg(0.125),  kh::arg(true),   kh::arg(int64_t{-1}), kh::arg(0.0)};
  };
  auto refused = [&](std::vector<kh_value> args, const char* name, kh_status want = KH_ERROR_INVALID_ARGUMENT) {
    const kh_status s = call(op, std::move(args));
    INFO(kh_last_error());
    CHECK(s == want);
    CHECK(error_names(name));
    CHECK(std::isnan(out.get({0, 0, 0})));  // refused before anything ran
  };
  SUBCASE("valid call for reference") {
    CHECK(call(op, base()) == KH_OK);
    CHECK(!std::isnan(out.get({0, 0, 0})));
  }
  SUBCASE("argument count: the defaulted window_left and softcap may be left out, causal may not") {
    auto a = base();
    a.resize(11);
    CHECK(call(op, a) == KH_OK);
    a.resize(10);
    CHECK(call(op, a) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("causal"));
    CHECK(std::string(kh_last_error()).find("left out, and it has no default") != std::string::npos);
  }
  SUBCASE("q of the wrong rank, dtype or head dim") {
    Tensor q4 = make_tensor(Dt::bf16, {1, T, H, D});
    auto a = base();
    a[2] = targ(q4);
    refused(a, "q");
    Tensor q32 = make_tensor(Dt::f32, {T, H, D});
    a[2] = targ(q32);
    refused(a, "q");
    Tensor q36 = make_tensor(Dt::bf16, {T, H, 36});
    Tensor k36 = make_tensor(Dt::bf16, {T, HK, 36});
    a[2] = targ(q36), a[3] = targ(k36), a[4] = targ(k36);
    refused(a, "q", KH_ERROR_UNSUPPORTED);
  }
  SUBCASE("k and v that do not fit q") {
    Tensor k80 = make_tensor(Dt::bf16, {T, HK, 80});
    auto a = base();
    a[3] = targ(k80);
    refused(a, "k");
    Tensor k3 = make_tensor(Dt::bf16, {T, 3, D});
    a = base();
    a[3] = targ(k3), a[4] = targ(k3);
    refused(a, "k");
    Tensor v11 = make_tensor(Dt::bf16, {T - 1, HK, D});
    a = base();
    a[4] = targ(v11);
    refused(a, "v");
    Tensor v32 = make_tensor(Dt::bf16, {T, HK, 32});
    a = base();
    a[4] = targ(v32);
    refused(a, "v", KH_ERROR_UNSUPPORTED);
    Tensor k16 = make_tensor(Dt::f16, {T, HK, D});
    a = base();
    a[3] = targ(k16);
    refused(a, "k");
  }
  SUBCASE("out and lse of the wrong shape, dtype or layout") {
    Tensor o2 = make_tensor(Dt::bf16, {T + 1, H, D});
    auto a = base();
    a[0] = targ(o2);
    refused(a, "out");
    Tensor l2 = make_tensor(Dt::f32, {T, H});
    a = base();
    a[1] = targ(l2);
    refused(a, "lse");
    Tensor l3 = make_tensor(Dt::bf16, {H, T});
    a[1] = targ(l3);
    refused(a, "lse");
    Tensor l4 = make_tensor(Dt::f32, {H, T}, {1, H});
    a[1] = targ(l4);
    refused(a, "lse");
  }
  SUBCASE("cu_seqlens of the wrong dtype, rank or length") {
    Tensor cf = make_tensor(Dt::f32, {3});
    auto a = base();
    a[5] = targ(cf);
    refused(a, "cu_seqlens_q");
    IntTensor c2({3, 1});
    a[5] = c2.arg();
    refused(a, "cu_seqlens_q");
    IntTensor c0({0});
    a[5] = c0.arg();
    refused(a, "cu_seqlens_q");
    IntTensor c4({4});
    a = base();
    a[6] = c4.arg();
    refused(a, "cu_seqlens_k");
    a[6] = kh::none();
    refused(a, "cu_seqlens_k");
  }
  SUBCASE("max lengths, scale, causal, window and soft-cap out of range or of the wrong kind") {
    auto a = base();
    a[7] = kh::arg(int64_t{-1});
    refused(a, "max_seqlen_q");
    a = base();
    a[8] = kh::arg(7.0);
    refused(a, "max_seqlen_k");
    a = base();
    a[8] = kh::arg(int64_t{INT_MAX} + 1);
    refused(a, "max_seqlen_k");
    a = base();
    a[9] = kh::arg(std::nan(""));
    refused(a, "scale");
    a = base();
    a[10] = kh::arg(int64_t{1});
    refused(a, "causal");
    a = base();
    a[11] = kh::arg(int64_t{-2});
    refused(a, "window_left");
    a[11] = kh::arg(0.5);
    refused(a, "window_left");
    a = base();
    a[12] = kh::arg(-1.0);
    refused(a, "softcap");
    a[12] = kh::arg(INFINITY);
    refused(a, "softcap");
  }
  SUBCASE("outputs that share memory with an input") {
    auto a = base();
    a[0] = targ(q);
    CHECK(call(op, a) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("out"));
    Tensor both = make_tensor(Dt::bf16, {2, T, HK, D});
    Tensor kv0 = make_view(both, {T, HK, D}, {HK * D, D, 1}, 0);
    Tensor o_on_k = make_view(both, {T, H, D}, {H * D, D, 1}, 0);  // out overlapping k
    a = base();
    a[3] = targ(kv0), a[4] = targ(kv0), a[0] = targ(o_on_k);
    CHECK(call(op, a) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("out"));
  }
}
