// test_rotary.cpp: the rotary CPU library through the public host API: rotary_embedding's
// values against a float64 rotation written here (independent of kernels-src) on a real RoPE
// cache, for every dtype and cache dtype, NeoX and GPT-J, rotary_dim below head_size (the rest
// of each head untouched), key present and absent, int32 and int64 positions, strided tokens,
// heads and positions; positions outside the cache refused before anything is written; each
// kind of bad argument refused with a message naming it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "kh/kh.hpp"

using namespace kh_test;

namespace {

const kh::Kernel& rotary_kernel() {
  static const kh::Kernel kernel = kh::load_kernel_library(KH_ROTARY_CPU_LIB);
  return kernel;
}

// A RoPE cos/sin cache: row p = cos(p f_0) .. cos(p f_{r/2-1}), sin(p f_0) .. sin(p f_{r/2-1}),
// f_i = 10000^(-2i/r), each value rounded to the cache's dtype (the stored values are what the
// reference uses).
Tensor make_cache(Dt dt, int64_t max_position, int64_t rotary_dim, int64_t row_pad = 0) {
  Tensor cache = make_tensor(dt, {max_position, rotary_dim}, {rotary_dim + row_pad, 1});
  const int64_t half = rotary_dim / 2;
  for (int64_t p = 0; p < max_position; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(i) / rotary_dim);
      cache.set({p, i}, round_to(std::cos(angle), dt));
      cache.set({p, half + i}, round_to(std::sin(angle), dt));
    }
  return cache;
}

// Positions as int32 or int64, with element stride `stride` (a strided view of a larger array).
struct Positions {
  std::vector<int64_t> values;
  std::vector<unsigned char> storage;
  std::vector<int64_t> shape, strides;
  DLTensor dl{};
  Positions(std::vector<int64_t> v, bool i64, int64_t stride) : values(std::move(v)) {
    const size_t esize = i64 ? 8 : 4;
    storage.assign(std::max<size_t>(1, values.size()) * stride * esize, 0xff);
    for (size_t t = 0; t < values.size(); ++t) {
      const int64_t v64 = values[t];
      const int32_t v32 = static_cast<int32_t>(v64);
      std::memcpy(storage.data() + t * stride * esize, i64 ? static_cast<const void*>(&v64) : &v32, esize);
    }
    shape = {static_cast<int64_t>(values.size())};
    strides = {stride};
    dl.data = storage.data();
    dl.device = DLDevice{kDLCPU, 0};
    dl.ndim = 1;
    dl.dtype = DLDataType{kDLInt, static_cast<uint8_t>(i64 ? 64 : 32), 1};
    dl.shape = shape.data();
    dl.strides = strides.data();
  }
  Positions(const Positions&) = delete;
  kh_value arg() { return kh::arg(&dl); }
};

// The CPU build rotates in double and rounds once: within half a unit in the last place.
bool correctly_rounded(double got, double want, Dt dt) {
  const double half_subnormal = std::ldexp(1.0, dt == Dt::f16 ? -25 : dt == Dt::bf16 ? -134 : -150);
  return close(got, want, dt, 0.5 + 1e-6, half_subnormal);
}

struct RotaryCase {
  Dt dt = Dt::f32;
  Dt cache_dt = Dt::f32;
  bool neox = true;
  int64_t tokens = 5, heads_q = 4, heads_kv = 2, head_size = 64, rotary_dim = 64;
  bool has_key = true;
  bool positions_i64 = true;
  int64_t positions_stride = 1;
  int64_t pad = 0;  // extra elements after each head and each token: strided heads and tokens
  int64_t max_position = 50;
  bool packed = false;  // query and key as head slices of one (tokens, (hq + 2 hkv) head) qkv buffer
};

// The float64 rotation of one head (a copy of its values before the call).
std::vector<double> rotated(const RotaryCase& c, const std::vector<double>& head, const Tensor& cache, int64_t pos) {
  std::vector<double> out = head;
  const int64_t half = c.rotary_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t ia = c.neox ? i : 2 * i, ib = c.neox ? half + i : 2 * i + 1;
    const double cs = cache.get({pos, i}), sn = cache.get({pos, half + i});
    out[ia] = head[ia] * cs - head[ib] * sn;
    out[ib] = head[ib] * cs + head[ia] * sn;
  }
  return out;
}

std::vector<double> head_values(const Tensor& x, int64_t t, int64_t h) {
  std::vector<double> v(static_cast<size_t>(x.shape[2]));
  for (int64_t e = 0; e < x.shape[2]; ++e) v[e] = x.get({t, h, e});
  return v;
}

// Random query (tokens, heads_q, head) and key (tokens, heads_kv, head), contiguous.
struct Heads {
  Tensor q, k;
  Heads(int64_t tokens, int64_t heads_q, int64_t heads_kv, int64_t head, uint64_t seed)
      : q(make_tensor(Dt::bf16, {tokens, heads_q, head})), k(make_tensor(Dt::bf16, {tokens, heads_kv, head})) {
    Random rnd(seed);
    rnd.fill(q);
    rnd.fill(k);
  }
};

void run_case(const RotaryCase& c, uint64_t seed) {
  CAPTURE(dt_name(c.dt));
  CAPTURE(dt_name(c.cache_dt));
  CAPTURE(c.neox);
  CAPTURE(c.tokens);
  CAPTURE(c.head_size);
  CAPTURE(c.rotary_dim);
  CAPTURE(c.has_key);
  CAPTURE(c.positions_i64);
  CAPTURE(c.pad);
  Random rnd(seed);
  auto strides = [&](int64_t heads) {
    return std::vector<int64_t>{heads * (c.head_size + c.pad) + c.pad, c.head_size + c.pad, 1};
  };
  const int64_t qkv_row = (c.heads_q + 2 * c.heads_kv) * c.head_size;
  Tensor qkv = make_tensor(c.dt, {c.packed ? c.tokens : 0, qkv_row});  // v's heads stay NaN
  Tensor q = c.packed ? make_view(qkv, {c.tokens, c.heads_q, c.head_size}, {qkv_row, c.head_size, 1}, 0)
                      : make_tensor(c.dt, {c.tokens, c.heads_q, c.head_size}, strides(c.heads_q));
  Tensor k = c.packed ? make_view(qkv, {c.tokens, c.heads_kv, c.head_size}, {qkv_row, c.head_size, 1},
                                  c.heads_q * c.head_size)
                      : make_tensor(c.dt, {c.tokens, c.heads_kv, c.head_size}, strides(c.heads_kv));
  rnd.fill(q);
  rnd.fill(k);
  Tensor cache = make_cache(c.cache_dt, c.max_position, c.rotary_dim, c.pad);
  std::vector<int64_t> pos_values;
  for (int64_t t = 0; t < c.tokens; ++t)
    pos_values.push_back(static_cast<int64_t>(rnd.rng() % static_cast<uint64_t>(c.max_position)));
  if (c.tokens > 2) pos_values[1] = pos_values[0];                       // repeated positions
  if (c.tokens > 3) pos_values[2] = 0, pos_values[3] = c.max_position - 1;  // both ends of the cache
  Positions pos(pos_values, c.positions_i64, c.positions_stride);

  std::vector<std::vector<double>> want_q, want_k;
  for (int64_t t = 0; t < c.tokens; ++t) {
    for (int64_t h = 0; h < c.heads_q; ++h) want_q.push_back(rotated(c, head_values(q, t, h), cache, pos_values[t]));
    for (int64_t h = 0; h < c.heads_kv; ++h)
      want_k.push_back(c.has_key ? rotated(c, head_values(k, t, h), cache, pos_values[t]) : head_values(k, t, h));
  }
  const kh_status status =
      call(rotary_kernel().op("rotary_embedding"),
           {targ(q), c.has_key ? targ(k) : kh::none(), pos.arg(), targ(cache), kh::arg(c.neox)});
  INFO(kh_last_error());
  REQUIRE(status == KH_OK);

  int64_t bad = 0;
  auto compare = [&](const Tensor& x, const std::vector<std::vector<double>>& want, int64_t heads, const char* name) {
    for (int64_t t = 0; t < c.tokens; ++t)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t e = 0; e < c.head_size; ++e) {
          const double got = x.get({t, h, e}), w = want[t * heads + h][e];
          // Rotated elements within half an ulp; the rest of each head (and an absent key)
          // exactly as they were.
          const bool ok = e < c.rotary_dim && (name[0] == 'q' || c.has_key) ? correctly_rounded(got, w, c.dt) : got == w;
          if (!ok && bad++ < 3) MESSAGE(name << " token " << t << " head " << h << " elem " << e << ": got " << got << " want " << w);
        }
  };
  compare(q, want_q, c.heads_q, "query");
  compare(k, want_k, c.heads_kv, "key");
  CHECK(bad == 0);
  if (c.packed) {  // nothing of qkv but q's and k's heads written: v's heads are still NaN
    int64_t v_written = 0;
    for (int64_t t = 0; t < c.tokens; ++t)
      for (int64_t e = (c.heads_q + c.heads_kv) * c.head_size; e < qkv_row; ++e) v_written += !std::isnan(qkv.get({t, e}));
    CHECK(v_written == 0);
  } else {
    CHECK(count_gap_writes(q) == 0);
    CHECK(count_gap_writes(k) == 0);
  }
}

}  // namespace

TEST_CASE("rotary: descriptor") {
  const kh::Kernel& k = rotary_kernel();
  CHECK(std::string(k.name()) + " " + k.version() == "kernels-community/rotary 1.0.0");
  CHECK(k.variant() == KH_EXPECTED_CPU_VARIANT);
  CHECK(kh_kernel_device_type(k.get()) == kDLCPU);
  REQUIRE(kh_kernel_num_ops(k.get()) == 1);  // the op as kernel.json documents it
  CHECK(std::string(kh_op_schema(kh_kernel_op_at(k.get(), 0))) ==
        "rotary_embedding(Tensor(a!) query, Tensor(b!)? key, Tensor positions, Tensor cos_sin_cache, bool is_neox) -> ()");
}

TEST_CASE("rotary: values") {
  uint64_t seed = 1;
  for (Dt dt : {Dt::f32, Dt::f16, Dt::bf16}) {
    for (Dt cache_dt : {Dt::f32, dt}) {
      if (dt == Dt::f32 && cache_dt != Dt::f32) continue;
      for (bool neox : {true, false}) {
        RotaryCase c;
        c.dt = dt;
        c.cache_dt = cache_dt;
        c.neox = neox;
        run_case(c, seed++);  // full rotation, GQA, int64 positions
        c.rotary_dim = 32;    // partial rotation: the rest of each head untouched
        c.positions_i64 = false;
        run_case(c, seed++);
        c.head_size = 65;  // an odd head size (strides not multiples of anything)
        c.rotary_dim = 10;
        c.has_key = false;  // key absent
        run_case(c, seed++);
        c.head_size = 2;  // the smallest: one pair
        c.rotary_dim = 2;
        c.has_key = true;
        c.heads_q = 1;
        c.heads_kv = 1;
        run_case(c, seed++);
        c.head_size = 128;  // strided tokens, heads, cache rows and positions
        c.rotary_dim = 96;
        c.heads_q = 8;
        c.heads_kv = 1;
        c.pad = 3;
        c.positions_stride = 3;
        c.positions_i64 = true;
        run_case(c, seed++);
        for (int64_t tokens : {0, 1}) {  // no token, one token
          c.tokens = tokens;
          run_case(c, seed++);
        }
        RotaryCase p = c;  // query and key sliced out of one packed qkv tensor, as engines pass them
        p.packed = true;
        p.tokens = 7;
        p.pad = 0;
        p.positions_stride = 1;
        p.heads_q = 8;
        p.heads_kv = 2;
        run_case(p, seed++);
      }
    }
  }
}

TEST_CASE("rotary: a position outside the cache is refused before anything is written") {
  const kh::Op op = rotary_kernel().op("rotary_embedding");
  Heads heads(3, 2, 1, 16, 3);
  Tensor &q = heads.q, &k = heads.k;
  const std::vector<double> q_before = head_values(q, 0, 0), k_before = head_values(k, 0, 0);
  Tensor cache = make_cache(Dt::f32, 8, 16);
  for (int64_t bad_position : {int64_t{8}, int64_t{-1}, int64_t{1} << 40}) {
    for (bool i64 : {true, false}) {
      if (!i64 && bad_position > INT32_MAX) continue;
      CAPTURE(bad_position);
      CAPTURE(i64);
      Positions pos({0, 7, bad_position}, i64, 1);
      CHECK(call(op, {targ(q), targ(k), pos.arg(), targ(cache), kh::arg(true)}) == KH_ERROR_INVALID_ARGUMENT);
      INFO(kh_last_error());
      CHECK(error_names("positions"));
      CHECK(std::string(kh_last_error()).find("positions[2] = " + std::to_string(bad_position)) != std::string::npos);
      CHECK(head_values(q, 0, 0) == q_before);  // token 0 comes first and is valid: still untouched
      CHECK(head_values(k, 0, 0) == k_before);
    }
  }
}

TEST_CASE("rotary: bad arguments are refused and named") {
  const kh::Op op = rotary_kernel().op("rotary_embedding");
  Heads heads(4, 8, 2, 64, 7);
  Tensor &q = heads.q, &k = heads.k;
  Tensor cache = make_cache(Dt::bf16, 16, 64);
  Positions pos({0, 1, 2, 3}, true, 1);
  const std::vector<double> q_before = head_values(q, 3, 7);
  auto expect_bad = [&](std::vector<kh_value> args, const char* arg_name) {
    CAPTURE(arg_name);
    CHECK(call(op, std::move(args)) == KH_ERROR_INVALID_ARGUMENT);
    INFO(kh_last_error());
    if (arg_name) CHECK(error_names(arg_name));
  };
  auto args = [&](kh_value qv, kh_value kv, kh_value pv, kh_value cv, kh_value nv) {
    return std::vector<kh_value>{qv, kv, pv, cv, nv};
  };
  const kh_value Q = targ(q), K = targ(k), P = pos.arg(), C = targ(cache), N = kh::arg(true);
  SUBCASE("query not 3-D") {
    Tensor q2 = make_tensor(Dt::bf16, {4, 512});
    expect_bad(args(targ(q2), K, P, C, N), "query");
  }
  SUBCASE("query's last dim strided") {
    Tensor qs = make_tensor(Dt::bf16, {4, 8, 64}, {1024, 128, 2});
    expect_bad(args(targ(qs), K, P, C, N), "query");
  }
  SUBCASE("query with a head of 2^30 elements (refused before any element is read)") {
    Tensor qh = make_tensor(Dt::bf16, {1, 1, 64});
    qh.shape = {1, 1, int64_t{1} << 30};
    qh.strides = {int64_t{1} << 30, int64_t{1} << 30, 1};
    qh.dl.shape = qh.shape.data();
    qh.dl.strides = qh.strides.data();
    expect_bad(args(targ(qh), K, P, C, N), "query");
    CHECK(std::string(kh_last_error()).find("< 2^30") != std::string::npos);
  }
  SUBCASE("query broadcast over tokens") {
    Tensor qb = make_view(q, {4, 8, 64}, {0, 64, 1}, 0);
    expect_bad(args(targ(qb), K, P, C, N), "query");
  }
  SUBCASE("key of another dtype, token count or head size") {
    Tensor kf = make_tensor(Dt::f16, {4, 2, 64});
    expect_bad(args(Q, targ(kf), P, C, N), "key");
    Tensor kt = make_tensor(Dt::bf16, {3, 2, 64});
    expect_bad(args(Q, targ(kt), P, C, N), "key");
    Tensor kh = make_tensor(Dt::bf16, {4, 2, 32});
    expect_bad(args(Q, targ(kh), P, C, N), "key");
  }
  SUBCASE("key overlapping query") {
    Tensor kq = make_view(q, {4, 2, 64}, {512, 64, 1}, 0);
    expect_bad(args(Q, targ(kq), P, C, N), "query");
  }
  SUBCASE("positions of a float dtype, of another length, 2-D") {
    Tensor pf = make_tensor(Dt::f32, {4});
    expect_bad(args(Q, K, targ(pf), C, N), "positions");
    Positions p3({0, 1, 2}, true, 1);
    expect_bad(args(Q, K, p3.arg(), C, N), "positions");
    Tensor p2 = make_tensor(Dt::f32, {4, 1});
    p2.dl.dtype = DLDataType{kDLInt, 64, 1};
    expect_bad(args(Q, K, targ(p2), C, N), "positions");
  }
  SUBCASE("cos_sin_cache of another half dtype") {
    Tensor ch = make_cache(Dt::f16, 16, 64);
    expect_bad(args(Q, K, P, targ(ch), N), "cos_sin_cache");
  }
  SUBCASE("rotary_dim odd, above head_size, or 0") {
    for (int64_t r : {int64_t{63}, int64_t{66}, int64_t{0}}) {
      Tensor cr = make_tensor(Dt::bf16, {16, r});
      expect_bad(args(Q, K, P, targ(cr), N), "cos_sin_cache");
    }
  }
  SUBCASE("cos_sin_cache with no rows, or a strided last dim") {
    Tensor c0 = make_tensor(Dt::bf16, {0, 64});
    expect_bad(args(Q, K, P, targ(c0), N), "cos_sin_cache");
    Tensor cs = make_tensor(Dt::bf16, {16, 64}, {128, 2});
    expect_bad(args(Q, K, P, targ(cs), N), "cos_sin_cache");
  }
  SUBCASE("query overlapping the cache") {
    Tensor big = make_tensor(Dt::bf16, {4, 9, 64});
    Tensor qv = make_view(big, {4, 8, 64}, {576, 64, 1}, 0);
    Tensor cv = make_view(big, {1, 64}, {64, 1}, 8 * 64);
    expect_bad(args(targ(qv), K, P, targ(cv), N), "query");
  }
  SUBCASE("is_neox not a bool") { expect_bad(args(Q, K, P, C, kh::arg(int64_t{1})), "is_neox"); }
  SUBCASE("query on a GPU") {
    Tensor qg = make_tensor(Dt::bf16, {4, 8, 64});
    qg.dl.device = DLDevice{kDLCUDA, 0};
    expect_bad(args(targ(qg), K, P, C, N), "query");
  }
  SUBCASE("wrong argument count") { expect_bad({Q, K, P, C}, nullptr); }
  CHECK(head_values(q, 3, 7) == q_before);
}
