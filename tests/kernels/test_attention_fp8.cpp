// test_attention_fp8.cpp: the FP8 ops of attention 1.2.0 on the CPU library, through the public host
// API, against references written here from the documented semantics (docs/ops-attention-fp8.md),
// independently of kernels-src: an e4m3 decoder from the format's definition and a quantizer that
// searches every finite code for the nearest (ties to the even code, saturating at 448).
//  - paged_kv_cache_write: bf16/fp16 caches get the bytes as given; e4m3 caches the quantized bytes,
//    per-tensor and per-head scales far from 1, every rounding edge (ties at subnormals and normals,
//    448, the 464 boundary, overflow, infinities, NaN, -0), int32/int64 slot maps with skipped
//    tokens, strided caches and inputs, nothing written outside the mapped rows; refusals.
//  - attention_decode_paged_fp8: float64 attention on the dequantized cache (shuffled paged blocks,
//    lengths 0/1/odd, q_len 1 and 5, GQA/MQA, windows, soft-cap, head dims 32-256, values near 448 and
//    subnormal, scales far from 1, per head and per tensor); the same numbers as attention_decode_paged
//    on a bf16 cache holding the dequantized values; NaN bytes give NaN rows (the CPU's decoding);
//    refusals.
//  - attention_varlen_fwd_fp8: FP8 KV with a bf16/fp16 q, and an e4m3 q (FP8 prefill) with out bf16
//    or fp16, against the float64 reference; refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "attention_test_support.hpp"
#include "kernel_test_support.hpp"
#include "kh/kh.hpp"

using namespace kh_test;

namespace {

// --- e4m3fn, from the format's definition --------------------------------------------------------

double e4m3_value(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  const double sign = (b & 0x80) ? -1.0 : 1.0;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  if (e == 0) return sign * m * std::ldexp(1.0, -9);
  return sign * (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
}

// The nearest finite code to x (ties: the even code), saturating at +-448; NaN -> 0x7f | sign.
uint8_t e4m3_nearest(double x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return sign | 0x7f;
  const double a = std::fabs(x);
  if (a >= 448.0) return sign | 0x7e;
  int best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (int code = 0; code <= 0x7e; ++code) {
    const double err = std::fabs(e4m3_value(static_cast<uint8_t>(code)) - a);
    if (err < best_err || (err == best_err && (code & 1) == 0)) {
      best = code;
      best_err = err;
    }
  }
  return static_cast<uint8_t>(sign | best);
}

// What paged_kv_cache_write stores for x with descale s: x / s in float32, then the nearest code.
uint8_t quantize(double x, double s) {
  return e4m3_nearest(static_cast<double>(static_cast<float>(x) / static_cast<float>(s)));
}

// A uint8 host tensor (e4m3 bytes) over poisoned storage (0xa5, a finite code that no test writes
// by chance where it checks untouched bytes), any strides.
struct ByteTensor {
  std::vector<int64_t> shape, strides;
  std::vector<uint8_t> data;
  DLTensor dl{};
  explicit ByteTensor(std::vector<int64_t> shp, std::vector<int64_t> str = {}) : shape(std::move(shp)) {
    strides = str.empty() ? contiguous_strides(shape) : std::move(str);
    int64_t extent = 1;
    for (size_t d = 0; d < shape.size(); ++d) extent += std::max<int64_t>(shape[d] - 1, 0) * strides[d];
    data.assign(static_cast<size_t>(extent), kPoison);
    dl.data = data.data();
    dl.device = DLDevice{kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = DLDataType{kDLUInt, 8, 1};
    dl.shape = shape.data();
    dl.strides = strides.data();
  }
  ByteTensor(const ByteTensor&) = delete;
  ByteTensor& operator=(const ByteTensor&) = delete;
  static constexpr uint8_t kPoison = 0xa5;
  int64_t index(const std::vector<int64_t>& idx) const {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
    return off;
  }
  uint8_t& at(const std::vector<int64_t>& idx) { return data[static_cast<size_t>(index(idx))]; }
  double value(const std::vector<int64_t>& idx) const { return e4m3_value(data[static_cast<size_t>(index(idx))]); }
  kh_value arg() { return kh::arg(&dl); }
};

// Random e4m3 codes: magnitudes from codes [lo, hi] (never NaN), random sign.
void fill_codes(ByteTensor& t, std::mt19937_64& rng, int lo = 0, int hi = 0x7e) {
  std::uniform_int_distribution<int> code(lo, hi), sign(0, 1);
  for (auto& b : t.data) b = static_cast<uint8_t>(code(rng) | (sign(rng) ? 0x80 : 0));
}

Tensor scale_tensor(const std::vector<double>& values) {
  Tensor s = make_tensor(Dt::f32, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) s.set({static_cast<int64_t>(i)}, static_cast<float>(values[i]));
  return s;
}

double scale_of(const Tensor& s, int64_t head) { return s.get({s.shape[0] == 1 ? 0 : head}); }

const kh::Op& op_named(const char* name) {
  static const kh::Kernel& k = attention_kernel();
  static std::vector<kh::Op> ops = k.ops();
  for (const kh::Op& op : ops)
    if (op.name() == name) return op;
  FAIL("no op " << name);
  return ops.front();
}

// --- paged_kv_cache_write ------------------------------------------------------------------------

struct WriteCase {
  Dt dt = Dt::bf16;  // key/value
  bool fp8 = true;   // caches e4m3 (else key's dtype)
  int64_t tokens = 9, heads = 2, d = 32, block_size = 4, num_blocks = 7;
  bool slots_i64 = false;
  std::vector<double> k_scale = {0.5}, v_scale = {3.0, 0.0078125};
};

// Writes c's random key/value at a shuffled slot map (every third token skipped) and checks every
// cache byte: the mapped rows hold the reference, the rest the poison.
void run_write_case(const WriteCase& c, uint64_t seed) {
  CAPTURE(std::string(dt_name(c.dt)));
  CAPTURE(c.fp8);
  CAPTURE(c.d);
  CAPTURE(c.block_size);
  std::mt19937_64 rng(seed);
  Random rnd(seed + 1);
  const int64_t key_row = c.heads * c.d + 24;  // padded token rows
  Tensor key = make_tensor(c.dt, {c.tokens, c.heads, c.d}, {key_row, c.d, 1});
  Tensor value = make_tensor(c.dt, {c.tokens, c.heads, c.d});
  rnd.fill(key);
  rnd.fill(value);
  // Magnitudes up to ~2000 so that scaled values cross 448 and reach the subnormals.
  for_each_index(key.shape, [&](const std::vector<int64_t>& i) { key.set(i, round_to(key.get(i) * 600.0, c.dt)); });
  const int64_t capacity = c.num_blocks * c.block_size;
  std::vector<int64_t> perm(static_cast<size_t>(capacity));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int64_t> slot(static_cast<size_t>(c.tokens));
  for (int64_t t = 0; t < c.tokens; ++t) slot[static_cast<size_t>(t)] = t % 3 == 2 ? -1 - t : perm[static_cast<size_t>(t)];
  Tensor slots64 = make_tensor(Dt::f32, {1});  // placeholder, replaced below for int64
  IntTensor slots32({c.tokens}, {2});
  std::vector<int64_t> slots64_data(static_cast<size_t>(c.tokens));
  std::vector<int64_t> slots64_shape = {c.tokens};
  DLTensor slots64_dl{};
  for (int64_t t = 0; t < c.tokens; ++t) {
    slots32.at(t) = static_cast<int32_t>(slot[static_cast<size_t>(t)]);
    slots64_data[static_cast<size_t>(t)] = slot[static_cast<size_t>(t)];
  }
  slots64_dl.data = slots64_data.data();
  slots64_dl.device = DLDevice{kDLCPU, 0};
  slots64_dl.ndim = 1;
  slots64_dl.dtype = DLDataType{kDLInt, 64, 1};
  slots64_dl.shape = slots64_shape.data();
  const kh_value slot_arg = c.slots_i64 ? kh::arg(&slots64_dl) : slots32.arg();
  Tensor ks = scale_tensor(c.k_scale), vs = scale_tensor(c.v_scale);

  const std::vector<int64_t> cache_shape = {c.num_blocks, c.block_size, c.heads, c.d};
  // k_cache with padded head rows (16 bytes / elements more), v_cache packed.
  const int64_t hs = c.d + 16;
  const std::vector<int64_t> k_strides = {c.block_size * c.heads * hs, c.heads * hs, hs, 1};
  int64_t bad = 0, untouched_bad = 0;
  std::vector<char> mapped(static_cast<size_t>(capacity), 0);
  for (int64_t t = 0; t < c.tokens; ++t)
    if (slot[static_cast<size_t>(t)] >= 0) mapped[static_cast<size_t>(slot[static_cast<size_t>(t)])] = 1;
  if (c.fp8) {
    ByteTensor kc(cache_shape, k_strides), vc(cache_shape);
    const kh_status st = call(op_named("paged_kv_cache_write"),
                              {kc.arg(), vc.arg(), targ(key), targ(value), slot_arg, targ(ks), targ(vs)});
    INFO(kh_last_error());
    REQUIRE(st == KH_OK);
    for (int64_t t = 0; t < c.tokens; ++t) {
      const int64_t s = slot[static_cast<size_t>(t)];
      if (s < 0) continue;
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t e = 0; e < c.d; ++e) {
          const std::vector<int64_t> at = {s / c.block_size, s % c.block_size, h, e};
          const uint8_t wk = quantize(key.get({t, h, e}), scale_of(ks, h));
          const uint8_t wv = quantize(value.get({t, h, e}), scale_of(vs, h));
          if ((kc.at(at) != wk || vc.at(at) != wv) && bad++ < 3)
            MESSAGE("token " << t << " head " << h << " dim " << e << ": k " << int(kc.at(at)) << " want " << int(wk)
                             << " (x " << key.get({t, h, e}) << "), v " << int(vc.at(at)) << " want " << int(wv));
        }
    }
    // Every byte of an unmapped row, and the padding, keeps the poison.
    for (const ByteTensor* cache : {&kc, &vc}) {
      std::vector<char> written(cache->data.size(), 0);
      for (int64_t s = 0; s < capacity; ++s)
        if (mapped[static_cast<size_t>(s)])
          for (int64_t h = 0; h < c.heads; ++h)
            for (int64_t e = 0; e < c.d; ++e)
              written[static_cast<size_t>(cache->index({s / c.block_size, s % c.block_size, h, e}))] = 1;
      for (size_t i = 0; i < cache->data.size(); ++i)
        untouched_bad += !written[i] && cache->data[i] != ByteTensor::kPoison;
    }
  } else {
    Tensor kc = make_tensor(c.dt, cache_shape, k_strides), vc = make_tensor(c.dt, cache_shape);
    const kh_status st = call(op_named("paged_kv_cache_write"),
                              {targ(kc), targ(vc), targ(key), targ(value), slot_arg, kh::none(), kh::none()});
    INFO(kh_last_error());
    REQUIRE(st == KH_OK);
    for (int64_t t = 0; t < c.tokens; ++t) {
      const int64_t s = slot[static_cast<size_t>(t)];
      if (s < 0) continue;
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t e = 0; e < c.d; ++e) {
          const std::vector<int64_t> at = {s / c.block_size, s % c.block_size, h, e};
          bad += kc.get(at) != key.get({t, h, e}) || vc.get(at) != value.get({t, h, e});
        }
    }
    for (const Tensor* cache : {&kc, &vc})
      for_each_index(cache->shape, [&](const std::vector<int64_t>& i) {
        const bool row_mapped = mapped[static_cast<size_t>(i[0] * c.block_size + i[1])] != 0;
        if (!row_mapped) untouched_bad += !std::isnan(cache->get(i));
      });
    untouched_bad += count_gap_writes(kc);
  }
  CHECK(bad == 0);
  CHECK(untouched_bad == 0);
}

// One token of one head (16 dims, the rest zeros), scale s: the bytes of xs written to an e4m3 cache.
std::vector<uint8_t> write_one(Dt dt, const std::vector<double>& xs, double s) {
  const int64_t d = 16;
  Tensor key = make_tensor(dt, {1, 1, d}), value = make_tensor(dt, {1, 1, d});
  for (int64_t e = 0; e < d; ++e) {
    const double x = e < static_cast<int64_t>(xs.size()) ? xs[static_cast<size_t>(e)] : 0.0;
    if (std::isinf(x)) {  // Tensor::set takes finite values and NaN: the bits of +-inf by hand
      const uint16_t bits = static_cast<uint16_t>((dt == Dt::f16 ? 0x7c00 : 0x7f80) | (x < 0 ? 0x8000 : 0));
      std::memcpy(key.buffer->data() + key.index({0, 0, e}) * 2, &bits, 2);
    } else {
      key.set({0, 0, e}, x);
    }
    value.set({0, 0, e}, 0.0);
  }
  ByteTensor kc({1, 1, 1, d}), vc({1, 1, 1, d});
  IntTensor slots({1});
  slots.at(0) = 0;
  Tensor ks = scale_tensor({s}), vs = scale_tensor({1.0});
  const kh_status st =
      call(op_named("paged_kv_cache_write"), {kc.arg(), vc.arg(), targ(key), targ(value), slots.arg(), targ(ks), targ(vs)});
  INFO(kh_last_error());
  REQUIRE(st == KH_OK);
  return std::vector<uint8_t>(kc.data.begin(), kc.data.begin() + static_cast<int64_t>(xs.size()));
}

}  // namespace

TEST_CASE("attention 1.2: descriptor (1.0 and 1.1 ops unchanged, three FP8 ops added)") {
  const kh::Kernel& k = attention_kernel();
  CHECK(k.version() == "1.2.0");
  const std::vector<kh::Op> ops = k.ops();
  REQUIRE(ops.size() == 6);
  CHECK(ops[0].schema() ==
        "attention_fwd(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v, float scale, bool causal) -> ()");
  CHECK(ops[1].schema() ==
        "attention_decode_paged(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k_cache, Tensor v_cache, "
        "Tensor block_table, Tensor seq_lens, Tensor(c!) workspace, float scale, int window_left=-1, "
        "float softcap=0.0) -> ()");
  CHECK(ops[2].schema() ==
        "attention_varlen_fwd(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, "
        "Tensor cu_seqlens_k, int max_seqlen_q, int max_seqlen_k, float scale, bool causal, int window_left=-1, "
        "float softcap=0.0) -> ()");
  CHECK(ops[3].schema() ==
        "attention_decode_paged_fp8(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k_cache, Tensor v_cache, "
        "Tensor k_scale, Tensor v_scale, Tensor block_table, Tensor seq_lens, Tensor(c!) workspace, float scale, "
        "int window_left=-1, float softcap=0.0) -> ()");
  CHECK(ops[4].schema() ==
        "attention_varlen_fwd_fp8(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v, Tensor? q_scale, "
        "Tensor k_scale, Tensor v_scale, Tensor cu_seqlens_q, Tensor cu_seqlens_k, int max_seqlen_q, "
        "int max_seqlen_k, float scale, bool causal, int window_left=-1, float softcap=0.0, "
        "Tensor(c!)? workspace=None) -> ()");
  CHECK(ops[5].schema() ==
        "paged_kv_cache_write(Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor key, Tensor value, Tensor slot_mapping, "
        "Tensor? k_scale, Tensor? v_scale) -> ()");
}

TEST_CASE("e4m3 reference: the format's 254 finite values") {
  CHECK(e4m3_value(0x7e) == 448.0);
  CHECK(e4m3_value(0x01) == std::ldexp(1.0, -9));
  CHECK(e4m3_value(0x08) == std::ldexp(1.0, -6));
  CHECK(e4m3_value(0x38) == 1.0);
  CHECK(std::isnan(e4m3_value(0x7f)));
  CHECK(std::isnan(e4m3_value(0xff)));
  for (int code = 0; code < 0x7e; ++code) CHECK(e4m3_value(static_cast<uint8_t>(code)) < e4m3_value(static_cast<uint8_t>(code + 1)));
  for (int code = 0; code <= 0x7e; ++code) CHECK(e4m3_nearest(e4m3_value(static_cast<uint8_t>(code))) == code);
}

TEST_CASE("paged_kv_cache_write: e4m3 rounding edges") {
  const double sub = std::ldexp(1.0, -9);  // the smallest subnormal step
  struct Edge {
    double x;
    uint8_t want;
    const char* what;
  };
  const Edge edges[] = {
      {0.0, 0x00, "zero"},
      {-0.0, 0x80, "negative zero keeps its sign"},
      {sub, 0x01, "smallest subnormal"},
      {sub / 2, 0x00, "half the smallest subnormal: tie to even (0)"},
      {sub * 3 / 2, 0x02, "1.5 subnormal steps: tie to even (2)"},
      {sub * 5 / 2, 0x02, "2.5 subnormal steps: tie to even (2)"},
      {sub * 7.5, 0x08, "7.5 steps: tie to the even code 8, the smallest normal 2^-6"},
      {std::ldexp(1.0, -6), 0x08, "smallest normal"},
      {1.0 + 1.0 / 16, 0x38, "1 + half an ulp: tie to even (1.0)"},
      {1.0 + 3.0 / 16, 0x3a, "1 + 1.5 ulps: tie to even (1.25)"},
      {240.0, 0x77, "240"},
      {448.0, 0x7e, "448, the largest finite"},
      {440.0, 0x7e, "440 rounds to 448 (416 and 448 are the neighbours)"},
      {432.0, 0x7e, "432: tie between 416 (odd code) and 448 (even)"},
      {464.0, 0x7e, "464: saturates"},
      {480.0, 0x7e, "480: saturates, never the NaN code"},
      {57344.0, 0x7e, "far past 448: saturates"},
      {-57344.0, 0xfe, "negative: -448"},
      {std::numeric_limits<double>::infinity(), 0x7e, "+inf: 448"},
      {-std::numeric_limits<double>::infinity(), 0xfe, "-inf: -448"},
  };
  for (Dt dt : {Dt::bf16, Dt::f16}) {
    for (const Edge& edge : edges) {
      if (dt == Dt::f16 && std::isfinite(edge.x) && std::fabs(edge.x) > 65504) continue;
      CAPTURE(std::string(dt_name(dt)));
      CAPTURE(std::string(edge.what));
      const double x = std::isinf(edge.x) ? edge.x : round_to(edge.x, dt);
      REQUIRE(x == edge.x);  // the edge is exact in the input dtype
      CHECK(int(write_one(dt, {x}, 1.0)[0]) == int(edge.want));
      CHECK(int(e4m3_nearest(edge.x)) == int(edge.want));  // the reference agrees
    }
    // NaN: written as NaN.
    CHECK((write_one(dt, {std::nan("")}, 1.0)[0] & 0x7f) == 0x7f);
    // Scales divide in float32 first: 3 / 0.375 = 8 exactly; 1 / 3 in float32, then rounded.
    CHECK(int(write_one(dt, {3.0}, 0.375)[0]) == int(e4m3_nearest(8.0)));
    CHECK(int(write_one(dt, {1.0}, 3.0)[0]) == int(quantize(1.0, 3.0)));
    // A tiny scale: every value saturates; a huge one: everything underflows to (signed) zero.
    CHECK(int(write_one(dt, {-2.0}, 1e-3)[0]) == 0xfe);
    CHECK(int(write_one(dt, {2.0}, 1e6)[0]) == 0x00);
  }
}

TEST_CASE("paged_kv_cache_write: values, slots, strides") {
  uint64_t seed = 7100;
  for (Dt dt : {Dt::bf16, Dt::f16}) {
    WriteCase c;
    c.dt = dt;
    run_write_case(c, seed++);  // e4m3, per-tensor k scale, per-head v scales
    c.slots_i64 = true;
    c.k_scale = {1.0 / 448, 250.0};  // scales far from 1
    c.v_scale = {1e-4};
    run_write_case(c, seed++);
    c = WriteCase{};
    c.dt = dt, c.d = 128, c.heads = 3, c.block_size = 16, c.num_blocks = 3, c.tokens = 40;
    c.k_scale = {2.0, 0.25, 7.0}, c.v_scale = {0.001, 1.0, 1000.0};
    run_write_case(c, seed++);
    c = WriteCase{};
    c.dt = dt, c.fp8 = false, c.d = 24, c.block_size = 3;  // bf16/fp16 caches: the bytes as given
    run_write_case(c, seed++);
    c.slots_i64 = true, c.d = 256, c.heads = 1;
    run_write_case(c, seed++);
  }
}

TEST_CASE("paged_kv_cache_write: bad calls are refused, nothing written") {
  const int64_t d = 32;
  Tensor key = make_tensor(Dt::bf16, {2, 2, d}), value = make_tensor(Dt::bf16, {2, 2, d});
  Random(3).fill(key);
  Random(4).fill(value);
  ByteTensor kc({4, 2, 2, d}), vc({4, 2, 2, d});
  IntTensor slots({2});
  slots.at(0) = 7, slots.at(1) = 1;
  Tensor ks = scale_tensor({1.0}), vs = scale_tensor({1.0, 2.0}), bad_scale = scale_tensor({1.0, 2.0, 3.0});
  const kh::Op& op = op_named("paged_kv_cache_write");
  auto untouched = [&] {
    return std::all_of(kc.data.begin(), kc.data.end(), [](uint8_t b) { return b == ByteTensor::kPoison; }) &&
           std::all_of(vc.data.begin(), vc.data.end(), [](uint8_t b) { return b == ByteTensor::kPoison; });
  };
  auto refused = [&](std::vector<kh_value> args, kh_status want, const char* name) {
    const kh_status st = call(op, std::move(args));
    INFO(kh_last_error());
    CHECK(st == want);
    CHECK(error_names(name));
    CHECK(untouched());
  };
  REQUIRE(call(op, {kc.arg(), vc.arg(), targ(key), targ(value), slots.arg(), targ(ks), targ(vs)}) == KH_OK);
  std::fill(kc.data.begin(), kc.data.end(), ByteTensor::kPoison);
  std::fill(vc.data.begin(), vc.data.end(), ByteTensor::kPoison);
  slots.at(0) = 8;  // past the 4 x 2 slots: the CPU build refuses before writing token 1
  refused({kc.arg(), vc.arg(), targ(key), targ(value), slots.arg(), targ(ks), targ(vs)}, KH_ERROR_INVALID_ARGUMENT,
          "slot_mapping");
  slots.at(0) = -5;
  refused({kc.arg(), vc.arg(), targ(key), targ(value), slots.arg(), kh::none(), targ(vs)}, KH_ERROR_INVALID_ARGUMENT,
          "k_scale");
  refused({kc.arg(), vc.arg(), targ(key), targ(value), slots.arg(), targ(ks), targ(bad_scale)},
          KH_ERROR_INVALID_ARGUMENT, "v_scale");
  Tensor bf16_cache = make_tensor(Dt::bf16, {4, 2, 2, d});
  refused({kc.arg(), targ(bf16_cache), targ(key), targ(value), slots.arg(), targ(ks), targ(vs)},
          KH_ERROR_INVALID_ARGUMENT, "v_cache");
  Tensor f16_cache = make_tensor(Dt::f16, {4, 2, 2, d}), f16_cache2 = make_tensor(Dt::f16, {4, 2, 2, d});
  refused({targ(f16_cache), targ(f16_cache2), targ(key), targ(value), slots.arg(), targ(ks), targ(vs)},
          KH_ERROR_INVALID_ARGUMENT, "k_cache");
  ByteTensor kc3({4, 2, 3, d});
  refused({kc3.arg(), vc.arg(), targ(key), targ(value), slots.arg(), targ(ks), targ(vs)}, KH_ERROR_INVALID_ARGUMENT,
          "k_cache");
  IntTensor slots3({3});
  refused({kc.arg(), vc.arg(), targ(key), targ(value), slots3.arg(), targ(ks), targ(vs)}, KH_ERROR_INVALID_ARGUMENT,
          "slot_mapping");
  refused({kc.arg(), kc.arg(), targ(key), targ(value), slots.arg(), targ(ks), targ(vs)}, KH_ERROR_INVALID_ARGUMENT,
          "v_cache");
  Tensor key24 = make_tensor(Dt::bf16, {2, 2, 24}), value24 = make_tensor(Dt::bf16, {2, 2, 24});
  ByteTensor kc24({4, 2, 2, 24}), vc24({4, 2, 2, 24});
  const kh_status st24 = call(op, {kc24.arg(), vc24.arg(), targ(key24), targ(value24), slots.arg(), targ(ks), targ(vs)});
  CHECK(st24 == KH_ERROR_UNSUPPORTED);  // e4m3 caches take head dims in steps of 16
}

// --- attention_decode_paged_fp8 ------------------------------------------------------------------

namespace {

int64_t workspace_floats(int64_t batch, int64_t q_len, int64_t hq, int64_t hkv, int64_t d, int64_t max_kv) {
  auto cdiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t by_fill = batch * hkv > 0 ? cdiv(4096, batch * hkv) : 1;
  const int64_t s = std::max<int64_t>(std::min<int64_t>({64, cdiv(max_kv, 128), by_fill}), 1);
  return s > 1 ? batch * q_len * hq * s * (d + 1) : 0;
}

struct Fp8DecodeCase {
  Dt dt = Dt::bf16;
  int64_t batch = 3, q_len = 1, hq = 4, hkv = 2, d = 64, block_size = 16, max_blocks = 6;
  std::vector<int64_t> lens = {0, 1, 45};
  int64_t window_left = -1;
  double softcap = 0.0;
  std::vector<double> k_scale = {0.01}, v_scale = {0.03, 2.5};
  int code_lo = 0, code_hi = 0x7e;  // the caches' magnitudes
  double q_mult = 1.0;              // q's values times this (rounded to dt)
};

struct Fp8DecodeCall {
  Tensor q, out, lse, ws, ks, vs;
  ByteTensor kc, vc;
  IntTensor table, lens;
  Fp8DecodeCall(const Fp8DecodeCase& c, int64_t num_blocks)
      : kc({num_blocks, c.block_size, c.hkv, c.d}, {c.block_size * c.hkv * (c.d + 16), c.hkv * (c.d + 16), c.d + 16, 1}),
        vc({num_blocks, c.block_size, c.hkv, c.d}),
        table({c.batch, c.max_blocks}, {c.max_blocks + 3, 1}),
        lens({c.batch}) {}
};

void make_decode_call(const Fp8DecodeCase& c, uint64_t seed, Fp8DecodeCall& t) {
  std::mt19937_64 rng(seed);
  Random rnd(seed + 1);
  const int64_t num_blocks = t.kc.shape[0];
  t.q = make_tensor(c.dt, {c.batch, c.q_len, c.hq, c.d});
  rnd.fill(t.q);
  for_each_index(t.q.shape, [&](const std::vector<int64_t>& i) { t.q.set(i, round_to(t.q.get(i) * c.q_mult, c.dt)); });
  fill_codes(t.kc, rng, c.code_lo, c.code_hi);
  fill_codes(t.vc, rng, c.code_lo, c.code_hi);
  std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t j = 0; j < c.max_blocks; ++j) t.table.at(b, j) = perm[static_cast<size_t>(b * c.max_blocks + j)];
  for (int64_t b = 0; b < c.batch; ++b) t.lens.at(b) = static_cast<int32_t>(c.lens[static_cast<size_t>(b) % c.lens.size()]);
  t.out = make_tensor(c.dt, {c.batch, c.q_len, c.hq, c.d});
  t.lse = make_tensor(Dt::f32, {c.batch, c.hq, c.q_len});
  t.ws = make_tensor(Dt::f32, {workspace_floats(c.batch, c.q_len, c.hq, c.hkv, c.d, c.max_blocks * c.block_size)});
  t.ks = scale_tensor(c.k_scale);
  t.vs = scale_tensor(c.v_scale);
}

kh_status call_decode_fp8(Fp8DecodeCall& t, const Fp8DecodeCase& c, double scale) {
  return call(op_named("attention_decode_paged_fp8"),
              {targ(t.out), targ(t.lse), targ(t.q), t.kc.arg(), t.vc.arg(), targ(t.ks), targ(t.vs), t.table.arg(),
               t.lens.arg(), targ(t.ws), kh::arg(scale), kh::arg(c.window_left), kh::arg(c.softcap)});
}

// Sequence b of a call as the reference's dense inputs: q rows and the dequantized keys/values.
SeqInputs decode_inputs(const Fp8DecodeCase& c, Fp8DecodeCall& t, int64_t b) {
  SeqInputs in;
  in.sq = c.q_len, in.sk = t.lens.at(b), in.hq = c.hq, in.hkv = c.hkv, in.d = c.d, in.dv = c.d;
  in.q = gather_rows(t.q, b, 0, c.q_len);
  for (int64_t j = 0; j < in.sk; ++j) {
    const int64_t blk = t.table.at(b, j / c.block_size), off = j % c.block_size;
    for (int64_t h = 0; h < c.hkv; ++h)
      for (int64_t e = 0; e < c.d; ++e) {
        in.k.push_back(t.kc.value({blk, off, h, e}) * scale_of(t.ks, h));
        in.v.push_back(t.vc.value({blk, off, h, e}) * scale_of(t.vs, h));
      }
  }
  return in;
}

void run_decode_fp8_case(const Fp8DecodeCase& c, uint64_t seed) {
  CAPTURE(std::string(dt_name(c.dt)));
  CAPTURE(c.batch);
  CAPTURE(c.q_len);
  CAPTURE(c.hq);
  CAPTURE(c.hkv);
  CAPTURE(c.d);
  CAPTURE(c.block_size);
  CAPTURE(c.window_left);
  CAPTURE(c.softcap);
  Fp8DecodeCall t(c, c.batch * c.max_blocks + 2);
  make_decode_call(c, seed, t);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  const kh_status st = call_decode_fp8(t, c, scale);
  INFO(kh_last_error());
  REQUIRE(st == KH_OK);
  AttnSemantics m;
  m.scale = scale, m.causal = true, m.window_left = c.window_left, m.softcap = c.softcap;
  int64_t bad = 0;
  for (int64_t b = 0; b < c.batch; ++b) {
    CAPTURE(b);
    const SeqInputs in = decode_inputs(c, t, b);
    const SeqOutputs want = reference_attention(in, m);
    const std::function<double(int64_t, int64_t)> lse_at = [&](int64_t h, int64_t i) { return t.lse.get({b, h, i}); };
    bad += check_sequence(
        in, want, c.dt, [&](int64_t i, int64_t h, int64_t e) { return t.out.get({b, i, h, e}); }, &lse_at);
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("attention_decode_paged_fp8: values against float64 on the dequantized cache") {
  uint64_t seed = 7300;
  for (Dt dt : {Dt::bf16, Dt::f16}) {
    Fp8DecodeCase c;
    c.dt = dt;
    run_decode_fp8_case(c, seed++);  // GQA 4/2, lengths 0, 1, 45; per-tensor k, per-head v scales
    c.q_len = 5, c.batch = 5, c.lens = {0, 3, 5, 96, 77};
    run_decode_fp8_case(c, seed++);  // q_len 5: the oldest rows of short sequences see nothing
    c.window_left = 7, c.k_scale = {300.0, 0.5}, c.v_scale = {1e-3};
    c.code_hi = 0x20;  // small and subnormal codes, scaled up
    run_decode_fp8_case(c, seed++);
    c = Fp8DecodeCase{};
    c.dt = dt, c.hq = 4, c.hkv = 1, c.d = 128, c.block_size = 32, c.max_blocks = 5, c.lens = {160, 33, 32};
    c.softcap = 5.0, c.k_scale = {1.0 / 448}, c.v_scale = {1.0 / 448};
    c.code_lo = 0x70;  // every value near 448 (224-448), descaled to ~1
    run_decode_fp8_case(c, seed++);
    c = Fp8DecodeCase{};
    c.dt = dt, c.hq = 8, c.hkv = 2, c.d = 256, c.block_size = 256, c.max_blocks = 2, c.lens = {300, 256, 511};
    c.q_len = 2, c.window_left = 100, c.k_scale = {0.002, 0.004}, c.v_scale = {8.0, 0.125};
    run_decode_fp8_case(c, seed++);
    c = Fp8DecodeCase{};
    c.dt = dt, c.hq = 3, c.hkv = 3, c.d = 80, c.block_size = 1, c.max_blocks = 40, c.lens = {39, 1}, c.batch = 2;
    c.k_scale = {0.02, 0.01, 0.03}, c.v_scale = {1.0, 2.0, 4.0};
    run_decode_fp8_case(c, seed++);  // MHA, d 80, block size 1
    for (int64_t d : {32, 48, 96, 112, 144, 160, 176, 192, 208, 224, 240}) {
      c = Fp8DecodeCase{};
      c.dt = dt, c.d = d, c.lens = {50, 17, 1}, c.k_scale = {0.015}, c.v_scale = {0.7};
      run_decode_fp8_case(c, seed++);
    }
  }
}

TEST_CASE("attention_decode_paged_fp8: equals attention_decode_paged on a bf16 cache of the dequantized values") {
  for (Dt dt : {Dt::bf16, Dt::f16}) {
    Fp8DecodeCase c;
    c.dt = dt, c.batch = 2, c.lens = {70, 9}, c.q_len = 2, c.k_scale = {0.25, 0.0625}, c.v_scale = {4.0};
    Fp8DecodeCall t(c, c.batch * c.max_blocks + 2);
    make_decode_call(c, 7400, t);
    const double scale = 0.1;
    REQUIRE(call_decode_fp8(t, c, scale) == KH_OK);
    // Powers of two: every dequantized value is exact in bf16 and fp16.
    Tensor kc = make_tensor(dt, t.kc.shape), vc = make_tensor(dt, t.vc.shape);
    for_each_index(kc.shape, [&](const std::vector<int64_t>& i) {
      kc.set(i, t.kc.value(i) * scale_of(t.ks, i[2]));
      vc.set(i, t.vc.value(i) * scale_of(t.vs, i[2]));
    });
    Tensor out = make_tensor(dt, t.out.shape), lse = make_tensor(Dt::f32, t.lse.shape);
    REQUIRE(call(attention_kernel().op("attention_decode_paged"),
                 {targ(out), targ(lse), targ(t.q), targ(kc), targ(vc), t.table.arg(), t.lens.arg(), targ(t.ws),
                  kh::arg(scale), kh::arg(int64_t{-1}), kh::arg(0.0)}) == KH_OK);
    int64_t differ = 0;
    for_each_index(out.shape, [&](const std::vector<int64_t>& i) { differ += out.get(i) != t.out.get(i); });
    for_each_index(lse.shape, [&](const std::vector<int64_t>& i) { differ += lse.get(i) != t.lse.get(i); });
    CHECK(differ == 0);
  }
}

TEST_CASE("attention_decode_paged_fp8: NaN bytes give the rows that see them NaN on the CPU build") {
  Fp8DecodeCase c;
  c.batch = 2, c.lens = {20, 20}, c.q_len = 1;
  Fp8DecodeCall t(c, c.batch * c.max_blocks + 2);
  make_decode_call(c, 7500, t);
  t.kc.at({t.table.at(0, 0), 3, 1, 5}) = 0x7f;  // sequence 0, key 3, kv head 1
  REQUIRE(call_decode_fp8(t, c, 0.125) == KH_OK);
  CHECK(std::isnan(t.out.get({0, 0, 2, 0})));   // q head 2 reads kv head 1
  CHECK(std::isfinite(t.out.get({0, 0, 0, 0})));  // kv head 0 is clean
  CHECK(std::isfinite(t.out.get({1, 0, 2, 0})));  // so is sequence 1
}

TEST_CASE("attention_decode_paged_fp8: bad calls are refused") {
  Fp8DecodeCase c;
  Fp8DecodeCall t(c, c.batch * c.max_blocks + 2);
  make_decode_call(c, 7600, t);
  const kh::Op& op = op_named("attention_decode_paged_fp8");
  auto args = [&](kh_value kc, kh_value ks, kh_value vs) {
    return std::vector<kh_value>{targ(t.out),    targ(t.lse), targ(t.q),        kc,
                                 t.vc.arg(),     ks,          vs,               t.table.arg(),
                                 t.lens.arg(),   targ(t.ws),  kh::arg(0.125),   kh::arg(int64_t{-1}),
                                 kh::arg(0.0)};
  };
  auto refused = [&](std::vector<kh_value> a, kh_status want, const char* name) {
    const kh_status st = call(op, std::move(a));
    INFO(kh_last_error());
    CHECK(st == want);
    CHECK(error_names(name));
  };
  Tensor bf16_cache = make_tensor(Dt::bf16, t.kc.shape);
  refused(args(targ(bf16_cache), targ(t.ks), targ(t.vs)), KH_ERROR_INVALID_ARGUMENT, "k_cache");
  Tensor three = scale_tensor({1.0, 2.0, 3.0});
  refused(args(t.kc.arg(), targ(three), targ(t.vs)), KH_ERROR_INVALID_ARGUMENT, "k_scale");
  refused(args(t.kc.arg(), targ(t.ks), kh::none()), KH_ERROR_INVALID_ARGUMENT, "v_scale");
  Tensor f16_scale = make_tensor(Dt::f16, {1});
  refused(args(t.kc.arg(), targ(f16_scale), targ(t.vs)), KH_ERROR_INVALID_ARGUMENT, "k_scale");
  // Head dim 40: a multiple of 8 (attention_decode_paged takes it) but not of 16.
  Fp8DecodeCase c40 = c;
  c40.d = 40;
  Fp8DecodeCall t40(c40, c40.batch * c40.max_blocks + 2);
  make_decode_call(c40, 7601, t40);
  CHECK(call_decode_fp8(t40, c40, 0.125) == KH_ERROR_UNSUPPORTED);
  CHECK(error_names("q"));
  // A block id outside the cache that the call reads: the CPU build refuses it.
  t.table.at(2, 1) = 1000;
  refused(args(t.kc.arg(), targ(t.ks), targ(t.vs)), KH_ERROR_INVALID_ARGUMENT, "block_table");
}

// --- attention_varlen_fwd_fp8 --------------------------------------------------------------------

namespace {

struct Fp8VarlenCase {
  Dt out_dt = Dt::bf16;
  bool q_fp8 = false;
  std::vector<int64_t> lens_q = {5, 1, 0, 37}, lens_k = {9, 1, 4, 37};
  int64_t hq = 4, hkv = 2, d = 64;
  AttnSemantics m;
  std::vector<double> q_scale = {0.05}, k_scale = {0.02, 0.004}, v_scale = {3.0};
};

void run_varlen_fp8_case(const Fp8VarlenCase& c, uint64_t seed) {
  CAPTURE(std::string(dt_name(c.out_dt)));
  CAPTURE(c.q_fp8);
  CAPTURE(c.d);
  CAPTURE(c.m.causal);
  CAPTURE(c.m.window_left);
  CAPTURE(c.m.softcap);
  std::mt19937_64 rng(seed);
  Random rnd(seed + 1);
  const size_t batch = c.lens_q.size();
  IntTensor cu_q({static_cast<int64_t>(batch) + 1}), cu_k({static_cast<int64_t>(batch) + 1});
  cu_q.at(0) = 0, cu_k.at(0) = 0;
  for (size_t b = 0; b < batch; ++b) {
    cu_q.at(static_cast<int64_t>(b) + 1) = static_cast<int32_t>(cu_q.at(static_cast<int64_t>(b)) + c.lens_q[b]);
    cu_k.at(static_cast<int64_t>(b) + 1) = static_cast<int32_t>(cu_k.at(static_cast<int64_t>(b)) + c.lens_k[b]);
  }
  const int64_t total_q = cu_q.at(static_cast<int64_t>(batch)), total_k = cu_k.at(static_cast<int64_t>(batch));
  const int64_t max_q = *std::max_element(c.lens_q.begin(), c.lens_q.end());
  const int64_t max_k = *std::max_element(c.lens_k.begin(), c.lens_k.end());
  Tensor qt = make_tensor(c.out_dt, {total_q, c.hq, c.d});
  ByteTensor q8({total_q, c.hq, c.d}), k({total_k, c.hkv, c.d}, {c.d, total_k * c.d, 1}), v({total_k, c.hkv, c.d});
  rnd.fill(qt);
  fill_codes(q8, rng, 0, 0x60);
  fill_codes(k, rng);
  fill_codes(v, rng);
  Tensor out = make_tensor(c.out_dt, {total_q, c.hq, c.d}), lse = make_tensor(Dt::f32, {c.hq, total_q});
  Tensor qs = scale_tensor(c.q_scale), ks = scale_tensor(c.k_scale), vs = scale_tensor(c.v_scale);
  const kh_status st = call(op_named("attention_varlen_fwd_fp8"),
                            {targ(out), targ(lse), c.q_fp8 ? q8.arg() : targ(qt), k.arg(), v.arg(),
                             c.q_fp8 ? targ(qs) : kh::none(), targ(ks), targ(vs), cu_q.arg(), cu_k.arg(),
                             kh::arg(max_q), kh::arg(max_k), kh::arg(c.m.scale), kh::arg(c.m.causal),
                             kh::arg(c.m.window_left), kh::arg(c.m.softcap)});
  INFO(kh_last_error());
  REQUIRE(st == KH_OK);
  const int64_t group = c.hq / c.hkv;
  int64_t bad = 0;
  for (size_t b = 0; b < batch; ++b) {
    const int64_t q0 = cu_q.at(static_cast<int64_t>(b)), k0 = cu_k.at(static_cast<int64_t>(b));
    SeqInputs in;
    in.sq = c.lens_q[b], in.sk = c.lens_k[b], in.hq = c.hq, in.hkv = c.hkv, in.d = c.d, in.dv = c.d;
    for (int64_t i = 0; i < in.sq; ++i)
      for (int64_t h = 0; h < c.hq; ++h)
        for (int64_t e = 0; e < c.d; ++e)
          in.q.push_back(c.q_fp8 ? q8.value({q0 + i, h, e}) * scale_of(qs, h / group) : qt.get({q0 + i, h, e}));
    for (int64_t j = 0; j < in.sk; ++j)
      for (int64_t h = 0; h < c.hkv; ++h)
        for (int64_t e = 0; e < c.d; ++e) {
          in.k.push_back(k.value({k0 + j, h, e}) * scale_of(ks, h));
          in.v.push_back(v.value({k0 + j, h, e}) * scale_of(vs, h));
        }
    const SeqOutputs want = reference_attention(in, c.m);
    const std::function<double(int64_t, int64_t)> lse_at = [&](int64_t h, int64_t i) { return lse.get({h, q0 + i}); };
    bad += check_sequence(
        in, want, c.out_dt, [&](int64_t i, int64_t h, int64_t e) { return out.get({q0 + i, h, e}); }, &lse_at);
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("attention_varlen_fwd_fp8: FP8 KV and FP8 q against float64 on the dequantized inputs") {
  uint64_t seed = 7700;
  for (Dt dt : {Dt::bf16, Dt::f16})
    for (bool q_fp8 : {false, true}) {
      Fp8VarlenCase c;
      c.out_dt = dt, c.q_fp8 = q_fp8;
      run_varlen_fp8_case(c, seed++);
      c.m.causal = true, c.m.window_left = 3;
      run_varlen_fp8_case(c, seed++);
      c.m = AttnSemantics{};
      c.m.softcap = 8.0, c.hq = 6, c.hkv = 1, c.d = 128, c.q_scale = {0.5}, c.k_scale = {1.0 / 448}, c.v_scale = {100.0};
      run_varlen_fp8_case(c, seed++);
      c.d = 256, c.hkv = 3, c.q_scale = {0.01, 0.1, 1.0}, c.k_scale = {0.01, 0.02, 0.04}, c.v_scale = {1.0, 0.5, 0.25};
      run_varlen_fp8_case(c, seed++);
    }
}

TEST_CASE("attention_varlen_fwd_fp8: bad calls are refused") {
  const int64_t total = 8, hq = 2, hkv = 1, d = 32;
  Tensor q = make_tensor(Dt::bf16, {total, hq, d}), out = make_tensor(Dt::bf16, {total, hq, d});
  Tensor out16 = make_tensor(Dt::f16, {total, hq, d});
  ByteTensor q8({total, hq, d}), k({total, hkv, d}), v({total, hkv, d});
  Tensor kb = make_tensor(Dt::bf16, {total, hkv, d});
  IntTensor cu({2});
  cu.at(0) = 0, cu.at(1) = static_cast<int32_t>(total);
  Tensor s1 = scale_tensor({1.0}), s2 = scale_tensor({1.0, 1.0});
  const kh::Op& op = op_named("attention_varlen_fwd_fp8");
  auto run = [&](kh_value o, kh_value qq, kh_value kk, kh_value qs, kh_value ks) {
    return call(op, {o, kh::none(), qq, kk, v.arg(), qs, ks, targ(s1), cu.arg(), cu.arg(), kh::arg(total),
                     kh::arg(total), kh::arg(0.1), kh::arg(false), kh::arg(int64_t{-1}), kh::arg(0.0)});
  };
  CHECK(run(targ(out), targ(q), targ(kb), kh::none(), targ(s1)) == KH_ERROR_INVALID_ARGUMENT);
  CHECK(error_names("k"));
  CHECK(run(targ(out), targ(q), k.arg(), targ(s1), targ(s1)) == KH_ERROR_INVALID_ARGUMENT);  // q_scale with bf16 q
  CHECK(error_names("q_scale"));
  CHECK(run(targ(out), q8.arg(), k.arg(), kh::none(), targ(s1)) == KH_ERROR_INVALID_ARGUMENT);  // e4m3 q, no q_scale
  CHECK(error_names("q_scale"));
  CHECK(run(targ(out16), targ(q), k.arg(), kh::none(), targ(s1)) == KH_ERROR_INVALID_ARGUMENT);  // out not q's dtype
  CHECK(error_names("out"));
  CHECK(run(targ(out), targ(q), k.arg(), kh::none(), targ(s2)) == KH_ERROR_INVALID_ARGUMENT);  // 2 factors, 1 kv head
  CHECK(error_names("k_scale"));
  CHECK(run(targ(out16), q8.arg(), k.arg(), targ(s1), targ(s1)) == KH_OK);  // e4m3 q: out either dtype
}

TEST_CASE("attention_varlen_fwd_fp8: the optional workspace (the sm90a build's; none needed here)") {
  const int64_t total = 40, hq = 4, hkv = 2, d = 64;
  ByteTensor q8({total, hq, d}), k({total, hkv, d}), v({total, hkv, d});
  std::mt19937_64 rng(31);
  fill_codes(q8, rng, 0, 0x60);
  fill_codes(k, rng);
  fill_codes(v, rng);
  IntTensor cu({3});
  cu.at(0) = 0, cu.at(1) = 17, cu.at(2) = static_cast<int32_t>(total);
  Tensor s1 = scale_tensor({0.5}), out = make_tensor(Dt::bf16, {total, hq, d}), out2 = make_tensor(Dt::bf16, {total, hq, d});
  const kh::Op& op = op_named("attention_varlen_fwd_fp8");
  CHECK(op.workspace_arg() == 16);
  auto args = [&](Tensor& o, kh_value ws) {
    return std::vector<kh_value>{targ(o), kh::none(), q8.arg(), k.arg(), v.arg(), targ(s1), targ(s1), targ(s1),
                                 cu.arg(), cu.arg(), kh::arg(int64_t{23}), kh::arg(int64_t{23}), kh::arg(0.125),
                                 kh::arg(true), kh::arg(int64_t{-1}), kh::arg(0.0), ws};
  };
  // The CPU build transposes nothing: it asks for no bytes, and a call with or without a workspace
  // gives the same output.
  CHECK(op.workspace_size(args(out, kh::none())) == 0);
  ByteTensor ws({64});
  REQUIRE(call(op, args(out, kh::none())) == KH_OK);
  REQUIRE(call(op, args(out2, ws.arg())) == KH_OK);
  CHECK(*out.buffer == *out2.buffer);
  // A workspace of another dtype, or one that is the output itself, is refused.
  Tensor f32ws = make_tensor(Dt::f32, {64});
  CHECK(call(op, args(out, targ(f32ws))) == KH_ERROR_INVALID_ARGUMENT);
  CHECK(error_names("workspace"));
  DLTensor out_bytes = out.dl;
  int64_t out_len[1] = {total * hq * d * 2};
  out_bytes.ndim = 1, out_bytes.shape = out_len, out_bytes.strides = nullptr;
  out_bytes.dtype = DLDataType{kDLUInt, 8, 1};
  CHECK(call(op, args(out, kh::arg(&out_bytes))) == KH_ERROR_INVALID_ARGUMENT);
  CHECK(error_names("out"));
  CHECK(std::string(kh_last_error()).find("workspace") != std::string::npos);
}
