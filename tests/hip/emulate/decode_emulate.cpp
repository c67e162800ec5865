// decode_emulate.cpp: runs the gfx942 decode kernels of attention_decode_paged (the shared SIMT
// split kernel and the combine kernel, kernels-src/attention/src/attention_decode_kernel.inl,
// through kernels-src/attention/hip/attention_decode_gfx942.hpp) on the host SIMT emulator
// (simt.hpp: 64-lane wavefronts, so the half-wavefront rows of the combine kernel and the
// lane groups of the split kernel are exercised as gfx942 runs them) and compares out and lse
// with a float64 reference: paged caches with shuffled blocks, lengths 0, 1, off multiples of
// the block size, q_len 1 and 3 (causal among the new tokens), GQA and MQA, a window, a
// soft-cap, head dims 32, 64, 80 and 128, bf16 and fp16, one split and several; and (1.2) the same
// kernel over e4m3 caches with descale factors (attention_decode_paged_fp8's gfx942 path).
//
// Build and run: tests/hip/emulate/run_emulate.sh (clang-19, host only).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#define KH_GFX942_EMULATION 1
#include <hip/hip_runtime.h>

// The HIP vector types and bit casts the decode kernels use, for the host.
struct uint2 {
  uint32_t x, y;
};
struct uint4 {
  uint32_t x, y, z, w;
};
struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
inline uint2 make_uint2(uint32_t x, uint32_t y) { return {x, y}; }
inline uint4 make_uint4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) { return {x, y, z, w}; }
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline float __uint_as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t __float_as_uint(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

#include "attention_decode_gfx942.hpp"

namespace {

using kh_attention::DecodeParams;
using kh_attention::ElementType;
namespace dec = kh_attention::decode;

uint16_t to_bits(double x, bool bf16) {
  const float f = static_cast<float>(x);
  if (!bf16) {
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
  }
  const uint32_t u = __float_as_uint(f);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
double from_bits(uint16_t b, bool bf16) { return bf16 ? simt::bf16_bits_to_float(b) : simt::f16_bits_to_float(b); }

struct Case {
  int batch, q_len, hq, hkv, d, bs, max_blocks, window, splits;
  double softcap;
  bool bf16;
  std::vector<int> lens;
  // Table entries (sequence, block) set to ids outside [0, num_blocks) in turn: -1, num_blocks,
  // INT_MIN, INT_MAX. Their keys must be left out (decode_block_ok) and nothing read for them.
  std::vector<std::pair<int, int>> bad_blocks = {};
  // attention_decode_paged_fp8 (1.2): e4m3 caches (random codes, NaN excluded) with descale factors
  // per KV head (per tensor when fp8_one_scale), the E4m3Kv split kernel.
  bool fp8 = false;
  bool fp8_one_scale = false;
};

// An e4m3 byte's value from the format's definition (written here, not taken from kernels-src).
double e4m3_value(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  const double sign = (b & 0x80) ? -1.0 : 1.0;
  if (e == 0) return sign * m * std::ldexp(1.0, -9);
  return sign * (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
}

template <typename Tag, int TPR, typename Kv = Tag>
void launch(const DecodeParams& p, int splits) {
  const int total = p.q_len * (p.heads_q / p.heads_kv);
  const int rows = total <= 4 ? 4 : 8, row_tiles = (total + rows - 1) / rows;
  const simt::Dim3 grid{static_cast<unsigned>(splits), static_cast<unsigned>(p.heads_kv * row_tiles),
                        static_cast<unsigned>(p.batch)};
  if (rows == 4)
    simt::launch(grid, dec::kThreads,
                 [&](const DecodeParams& pp) { dec::decode_split_kernel<Tag, TPR, 4, Kv>(pp, row_tiles, splits); }, p);
  else
    simt::launch(grid, dec::kThreads,
                 [&](const DecodeParams& pp) { dec::decode_split_kernel<Tag, TPR, 8, Kv>(pp, row_tiles, splits); }, p);
  if (splits > 1) {
    const dec::CombineShape shape = dec::decode_combine_shape(p, splits);
    simt::launch(simt::Dim3{static_cast<unsigned>(shape.blocks), 1, 1}, dec::kCombineThreads,
                 [&](const DecodeParams& pp) { dec::decode_combine_kernel<Tag>(pp, splits, shape.warps_per_row); }, p);
  }
}

template <typename Tag, typename Kv = Tag>
void launch_tag(const DecodeParams& p, int splits) {
  const int d = p.head_dim;
  if (d <= 32) launch<Tag, 4, Kv>(p, splits);
  else if (d <= 64) launch<Tag, 8, Kv>(p, splits);
  else if (d <= 128) launch<Tag, 16, Kv>(p, splits);
  else launch<Tag, 32, Kv>(p, splits);
}

bool run_case(const Case& c, std::mt19937& rng) {
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  const int nb = c.batch * c.max_blocks + 2, max_kv = c.max_blocks * c.bs;
  std::vector<uint16_t> q(static_cast<size_t>(c.batch) * c.q_len * c.hq * c.d), kc(static_cast<size_t>(nb) * c.bs * c.hkv * c.d),
      vc(kc.size()), out(q.size(), 0x7fc0);
  for (auto* buf : {&q, &kc, &vc})
    for (auto& x : *buf) x = to_bits(uni(rng), c.bf16);
  // FP8: the caches as e4m3 codes and their descale factors (far from 1), and what they stand for.
  std::vector<uint8_t> kc8(c.fp8 ? kc.size() : 0), vc8(kc8.size());
  std::vector<float> k_scale(c.hkv), v_scale(c.hkv);
  if (c.fp8) {
    std::uniform_int_distribution<int> code(0, 0x7e), sign(0, 1);
    std::uniform_real_distribution<double> log_scale(std::log(1e-3), std::log(30.0));
    for (auto* buf : {&kc8, &vc8})
      for (auto& b : *buf) b = static_cast<uint8_t>(code(rng) | (sign(rng) ? 0x80 : 0));
    for (int h = 0; h < c.hkv; ++h) {
      k_scale[h] = static_cast<float>(std::exp(log_scale(rng)) / 64.0);  // keys' scores stay moderate
      v_scale[h] = static_cast<float>(std::exp(log_scale(rng)));
      if (c.fp8_one_scale) k_scale[h] = k_scale[0], v_scale[h] = v_scale[0];
    }
  }
  auto k_at = [&](size_t i, int head) {
    return c.fp8 ? e4m3_value(kc8[i]) * static_cast<double>(k_scale[head]) : from_bits(kc[i], c.bf16);
  };
  auto v_at = [&](size_t i, int head) {
    return c.fp8 ? e4m3_value(vc8[i]) * static_cast<double>(v_scale[head]) : from_bits(vc[i], c.bf16);
  };
  std::vector<int32_t> perm(nb);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int32_t> table(static_cast<size_t>(c.batch) * c.max_blocks), lens(c.batch);
  for (int b = 0; b < c.batch; ++b) {
    lens[b] = c.lens[b % c.lens.size()];
    for (int j = 0; j < c.max_blocks; ++j) table[b * c.max_blocks + j] = perm[b * c.max_blocks + j];
  }
  const int32_t bad_ids[] = {-1, nb, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  for (size_t n = 0; n < c.bad_blocks.size(); ++n)
    table[c.bad_blocks[n].first * c.max_blocks + c.bad_blocks[n].second] = bad_ids[n % 4];
  auto block_ok = [&](int b, int j) {
    const int32_t id = table[b * c.max_blocks + j / c.bs];
    return id >= 0 && id < nb;
  };
  std::vector<float> lse(static_cast<size_t>(c.batch) * c.hq * c.q_len, std::nanf(""));
  // Scratch for the requested split count (the kernels do not look at the op's bound).
  const int64_t ws_n = static_cast<int64_t>(c.batch) * c.q_len * c.hq * c.splits * (c.d + 1);
  std::vector<float> ws(static_cast<size_t>(ws_n), std::nanf(""));

  DecodeParams p;
  p.q = q.data(), p.k = kc.data(), p.v = vc.data(), p.out = out.data(), p.lse = lse.data();
  p.block_table = table.data(), p.seq_lens = lens.data(), p.workspace = ws.data();
  p.q_batch_stride = static_cast<int64_t>(c.q_len) * c.hq * c.d, p.q_row_stride = c.hq * c.d, p.q_head_stride = c.d;
  p.o_batch_stride = p.q_batch_stride, p.o_row_stride = p.q_row_stride, p.o_head_stride = p.q_head_stride;
  p.k_block_stride = static_cast<int64_t>(c.bs) * c.hkv * c.d, p.k_row_stride = c.hkv * c.d, p.k_head_stride = c.d;
  p.v_block_stride = p.k_block_stride, p.v_row_stride = p.k_row_stride, p.v_head_stride = p.k_head_stride;
  p.bt_batch_stride = c.max_blocks, p.seq_lens_stride = 1, p.workspace_floats = ws_n;
  p.batch = c.batch, p.q_len = c.q_len, p.heads_q = c.hq, p.heads_kv = c.hkv, p.head_dim = c.d;
  p.block_size = c.bs, p.block_shift = 0;
  while ((1 << p.block_shift) < c.bs) ++p.block_shift;
  p.max_blocks_per_seq = c.max_blocks, p.num_blocks = nb, p.window_left = c.window;
  p.scale = static_cast<float>(1.0 / std::sqrt(c.d)), p.softcap = static_cast<float>(c.softcap);
  p.dtype = c.bf16 ? ElementType::kBF16 : ElementType::kF16;
  if (c.fp8) {
    p.k = kc8.data(), p.v = vc8.data();
    p.kv_fp8 = true;
    p.k_scale = k_scale.data(), p.v_scale = v_scale.data();
    p.k_scale_stride = p.v_scale_stride = c.fp8_one_scale ? 0 : 1;
  }
  const int splits = c.splits;
  (void)max_kv;
  if (c.fp8 && c.bf16) launch_tag<dec::Bf16Tag, dec::E4m3Kv>(p, splits);
  else if (c.fp8) launch_tag<dec::F16Tag, dec::E4m3Kv>(p, splits);
  else if (c.bf16) launch_tag<dec::Bf16Tag>(p, splits);
  else launch_tag<dec::F16Tag>(p, splits);

  const double eps = c.bf16 ? 1.0 / 256 : 1.0 / 2048;
  int bad = 0;
  double max_err = 0;
  const int group = c.hq / c.hkv;
  for (int b = 0; b < c.batch; ++b)
    for (int i = 0; i < c.q_len; ++i)
      for (int h = 0; h < c.hq; ++h) {
        const int hk = h / group, pos = lens[b] - c.q_len + i;
        const int lo = c.window >= 0 ? std::max(0, pos - c.window) : 0;
        std::vector<double> s;
        double mx = -std::numeric_limits<double>::infinity();
        std::vector<int> keys;  // the keys the row sees
        for (int j = lo; j <= pos; ++j) {
          if (!block_ok(b, j)) continue;
          keys.push_back(j);
          const size_t krow = ((static_cast<size_t>(table[b * c.max_blocks + j / c.bs]) * c.bs + j % c.bs) * c.hkv + hk) * c.d;
          double dot = 0;
          for (int e = 0; e < c.d; ++e)
            dot += from_bits(q[((static_cast<size_t>(b) * c.q_len + i) * c.hq + h) * c.d + e], c.bf16) *
                   k_at(krow + e, hk);
          double x = dot * p.scale;
          if (c.softcap > 0) x = c.softcap * std::tanh(x / c.softcap);
          s.push_back(x);
          mx = std::max(mx, x);
        }
        double denom = 0;
        for (double x : s) denom += std::exp(x - mx);
        for (int e = 0; e < c.d; ++e) {
          double want = 0;
          for (size_t n = 0; n < s.size(); ++n) {
            const int j = keys[n];
            const size_t vrow = ((static_cast<size_t>(table[b * c.max_blocks + j / c.bs]) * c.bs + j % c.bs) * c.hkv + hk) * c.d;
            want += std::exp(s[n] - mx) / denom * v_at(vrow + e, hk);
          }
          const double got = from_bits(out[((static_cast<size_t>(b) * c.q_len + i) * c.hq + h) * c.d + e], c.bf16);
          const double err = std::fabs(got - want);
          max_err = std::max(max_err, std::isnan(err) ? 1e9 : err);
          if (!(err <= eps * std::fabs(want) + 1e-4) && bad++ < 3)
            std::printf("  out[%d,%d,%d,%d] = %g, want %g\n", b, i, h, e, got, want);
        }
        const double want_lse = s.empty() ? -std::numeric_limits<double>::infinity() : mx + std::log(denom);
        const double got_lse = lse[(static_cast<size_t>(b) * c.hq + h) * c.q_len + i];
        const bool lse_ok = s.empty() ? (std::isinf(got_lse) && got_lse < 0) : std::fabs(got_lse - want_lse) <= 1e-3;
        if (!lse_ok && bad++ < 3) std::printf("  lse[%d,%d,%d] = %g, want %g\n", b, h, i, got_lse, want_lse);
      }
  std::printf("%s d%d %s%s b%d q%d h%d/%d bs%d w%d cap%g splits %d: max err %.2e\n", bad ? "FAIL" : "ok  ", c.d,
              c.bf16 ? "bf16" : "fp16", c.fp8 ? (c.fp8_one_scale ? " e4m3 cache (one scale)" : " e4m3 cache") : "",
              c.batch, c.q_len, c.hq, c.hkv, c.bs, c.window, c.softcap, splits, max_err);
  return bad == 0;
}

}  // namespace

int main() {
  std::mt19937 rng(12);
  const Case cases[] = {
      // batch, q_len, hq, hkv, d, bs, max_blocks, window, splits, softcap, bf16, lens
      {3, 1, 4, 2, 64, 16, 5, -1, 1, 0.0, true, {0, 1, 70}},
      {3, 1, 4, 2, 64, 16, 5, -1, 3, 0.0, true, {0, 1, 70}},
      {2, 3, 4, 1, 128, 16, 3, -1, 2, 0.0, false, {2, 45}},
      {2, 3, 8, 2, 80, 32, 2, 20, 1, 5.0, true, {64, 50}},
      {2, 1, 2, 2, 32, 16, 4, -1, 4, 0.0, false, {33, 64}},
      {1, 1, 4, 1, 128, 16, 8, -1, 5, 0.0, true, {128}},
      // The combine's second batch of splits (> 32 a row: 4 warps a row) and second 128 dims, with
      // empty splits (1200 keys in 40 splits of 32: the last 2 see none) and one length 0.
      {2, 1, 2, 1, 256, 16, 80, -1, 40, 0.0, true, {1200, 0}},
      {1, 2, 4, 2, 96, 32, 40, -1, 37, 0.0, false, {1250}},
      // Rows sharing a combine CTA (4 a CTA up to 8 splits, 2 up to 16) with its last CTA part empty.
      {1, 1, 6, 2, 128, 16, 10, -1, 6, 0.0, false, {150}},
      {1, 3, 3, 1, 64, 16, 20, -1, 12, 0.0, true, {300}},
      // Bad block ids inside the lengths (left out: a split whose keys are all bad, a row left
      // with no key at all in sequence 1) and past them (never read), block sizes 16 and 1.
      {3, 2, 4, 2, 64, 16, 6, -1, 3, 0.0, true, {90, 16, 40}, {{0, 1}, {0, 5}, {1, 0}, {2, 2}, {2, 4}}},
      {2, 1, 4, 1, 128, 1, 40, 20, 2, 0.0, false, {40, 7}, {{0, 3}, {0, 30}, {0, 39}, {1, 6}}},
      // attention_decode_paged_fp8: e4m3 caches over the full code range (saturated 448s and
      // subnormals) with descale factors per KV head or per tensor; GQA/MQA, q_len 1 and 3, a window,
      // a soft-cap, head dims 32-256 in steps of 16, one split and several, a bad block id.
      {3, 1, 4, 2, 64, 16, 5, -1, 1, 0.0, true, {0, 1, 70}, {}, true},
      {3, 1, 4, 2, 64, 16, 5, -1, 3, 0.0, false, {0, 1, 70}, {}, true, true},
      {2, 3, 4, 1, 128, 16, 3, -1, 2, 0.0, false, {2, 45}, {}, true},
      {2, 3, 8, 2, 80, 32, 2, 20, 1, 5.0, true, {64, 50}, {}, true},
      {2, 1, 2, 2, 32, 16, 4, -1, 4, 0.0, false, {33, 64}, {}, true, true},
      {2, 1, 2, 1, 256, 16, 20, -1, 5, 0.0, true, {300, 0}, {}, true},
      {1, 2, 4, 2, 96, 32, 10, -1, 3, 0.0, false, {250}, {}, true},
      {3, 2, 4, 2, 48, 16, 6, -1, 3, 0.0, true, {90, 16, 40}, {{0, 1}, {2, 4}}, true},
  };
  int failed = 0;
  for (const Case& c : cases) failed += run_case(c, rng) ? 0 : 1;
  std::printf("decode_emulate: %d of %zu cases failed\n", failed, sizeof(cases) / sizeof(cases[0]));
  return failed ? 1 : 0;
}
