// pointwise_emulate.cpp: runs the gfx942 activation and rotary kernels
// (kernels-src/{activation,rotary}/src/*_kernels.inl through hip/*_hip.hpp) on the host through
// the SIMT emulator (simt.hpp), with the thread layout their launchers pick (make_launch), and
// compares every output with a float64 reference written here:
//   activation  silu / gelu / gelu_tanh / fatrelu x fp32 / fp16 / bf16 x 16-byte and element
//               packs; several rows a block, rows past the grid (the row loop), odd d, padded
//               rows, in place; nothing written past a row.
//   rotary      NeoX / GPT-J x dtype x cache fp32 or the dtype x 16-byte and element packs; key
//               present and absent, int32 / int64 positions, rotary_dim < head_size (the rest
//               untouched), padded heads and tokens, several tokens a block, tokens past the
//               grid, a position outside the cache (its token left untouched).
// Tolerance: one unit of the output dtype's rounding (relative) plus the fp32 evaluation error
// 2^-18 (1 + |s|) relative, s the argument of the exponential (the function amplifies its
// rounding), plus one unit of absolute spacing (2^-24 for fp16; 2^-126 otherwise, where fp32
// flushes), as tests/gpu/pointwise/ uses on the CUDA builds. No AMD GPU is needed.
//
// Build and run: tests/hip/emulate/run_emulate.sh (clang-19, host only).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#define KH_GFX942_EMULATION 1
#include "activation_hip.hpp"
#include "rotary_hip.hpp"

namespace {

using kh_pointwise::Bf16;
using F16 = _Float16;

template <typename T> T from_double(double x);
template <> float from_double<float>(double x) { return static_cast<float>(x); }
template <> F16 from_double<F16>(double x) { return static_cast<F16>(static_cast<float>(x)); }
template <> Bf16 from_double<Bf16>(double x) { return kh_pointwise::from_f32<Bf16>(static_cast<float>(x)); }
double to_double(float x) { return x; }
double to_double(F16 x) { return static_cast<double>(x); }
double to_double(Bf16 x) { return simt::bf16_bits_to_float(x.bits); }
template <typename T> double ulp() { return sizeof(T) == 4 ? 0x1p-23 : (std::is_same_v<T, F16> ? 0x1p-10 : 0x1p-7); }
template <typename T> const char* name() { return sizeof(T) == 4 ? "f32 " : (std::is_same_v<T, F16> ? "f16 " : "bf16"); }
template <typename T> kh_kernels::DType dtype() {
  return sizeof(T) == 4 ? kh_kernels::DType::kF32 : std::is_same_v<T, F16> ? kh_kernels::DType::kF16 : kh_kernels::DType::kBF16;
}
template <typename T> T poison() { return from_double<T>(12288.0); }  // 1.5 * 2^13: exact in every dtype

// Below this magnitude a result may be 0 or a subnormal: fp32's smallest normal (the GPU's
// approximate exp2 flushes subnormal results; expf overflows past |a| = 88).
constexpr double kTiny = 0x1p-126;

// |got - want| within one unit of T's rounding and the fp32 evaluation error; where T's
// spacing is absolute (f16 subnormals), one unit of it.
template <typename T>
bool within(double got, double want, double s) {
  const double quantum = std::is_same_v<T, F16> ? 0x1p-24 : kTiny;
  const double tol = (ulp<T>() + std::ldexp(1.0, -18) * (1 + std::fabs(s))) * std::fabs(want) + quantum;
  return std::fabs(got - want) <= tol;
}

// ---- activation ----------------------------------------------------------------------------

using kh_activation::ActKind;

// act(a) in float64 from the definitions (no cancellation), and the exponential's argument.
double act_ref(ActKind k, double a, double threshold, double* s) {
  const double two_u = 2 * std::sqrt(2 / 3.14159265358979323846) * (a + 0.044715 * a * a * a);
  switch (k) {
    case ActKind::kSilu: *s = a; return a / (1 + std::exp(-a));
    case ActKind::kGelu: *s = a * a / 2; return 0.5 * a * std::erfc(-a / std::sqrt(2.0));
    case ActKind::kGeluTanh: *s = two_u; return a / (1 + std::exp(-two_u));
    case ActKind::kFatRelu: *s = 0; return a > threshold ? a : 0.0;
  }
  return 0;
}

struct ActShape {
  int64_t rows, d, x_stride, out_stride;  // strides >= 2 d and >= d (padded rows)
  bool in_place;                          // out = x[..., :d]
  unsigned grid;                          // 0: as the launcher sizes it; else fewer blocks (the row loop)
};

template <ActKind K, typename T, int VEC>
bool run_act(const ActShape& s, std::mt19937& rng) {
  std::uniform_real_distribution<double> uni(-8, 8);
  std::vector<T> x(static_cast<size_t>(s.rows * s.x_stride)), out(static_cast<size_t>(s.rows * s.out_stride), poison<T>());
  for (auto& e : x) e = from_double<T>(uni(rng));
  const std::vector<T> x0 = x;
  const double threshold = 0.3;
  kh_activation::ActivationParams p;
  p.x = x.data();
  p.out = s.in_place ? static_cast<void*>(x.data()) : out.data();
  for (auto* l : {&p.x_rows, &p.out_rows}) {
    l->ndim = 1;
    l->size[0] = s.rows;
  }
  p.x_rows.stride[0] = s.x_stride;
  p.out_rows.stride[0] = s.in_place ? s.x_stride : s.out_stride;
  p.rows = s.rows;
  p.d = s.d;
  p.dtype = dtype<T>();
  p.kind = K;
  p.threshold = threshold;
  p.threshold_f32 = static_cast<float>(threshold);  // 0.3f < 0.3: the rounded-down float
  const bool vec_ok = kh_activation::gpu::vector_path<T>(p);
  if (vec_ok != (VEC > 1)) {
    std::printf("FAIL activation: vector_path says %d for a VEC %d case\n", vec_ok, VEC);
    return false;
  }
  const kh_activation::gpu::ActLaunch a = kh_activation::gpu::make_launch(p, s.d / VEC);
  const unsigned grid = s.grid ? s.grid : static_cast<unsigned>(kh_activation::gpu::blocks_needed(a));
  simt::launch(simt::Dim3{grid, 1, 1}, kh_activation::gpu::kThreads, &kh_activation::gpu::act_and_mul_kernel<K, T, VEC>, a);

  double worst = 0;
  bool ok = true, pad_ok = true;
  const T* o = s.in_place ? x.data() : out.data();
  const int64_t os = s.in_place ? s.x_stride : s.out_stride;
  for (int64_t r = 0; r < s.rows; ++r) {
    for (int64_t i = 0; i < s.d; ++i) {
      double arg = 0;
      const double want = act_ref(K, to_double(x0[r * s.x_stride + i]), threshold, &arg) * to_double(x0[r * s.x_stride + s.d + i]);
      const double got = to_double(o[r * os + i]);
      if (!within<T>(got, want, arg) && ok) {
        ok = false;
        std::printf("  row %lld col %lld: a %g gate %g got %g want %g\n", (long long)r, (long long)i,
                    to_double(x0[r * s.x_stride + i]), to_double(x0[r * s.x_stride + s.d + i]), got, want);
      }
      if (want != 0) worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
    }
    for (int64_t i = s.d; i < os; ++i)  // the gate half (in place) or the padding: untouched
      pad_ok = pad_ok && (s.in_place ? to_double(x[r * os + i]) == to_double(x0[r * os + i]) : to_double(o[r * os + i]) == 12288.0);
  }
  static const char* kNames[] = {"silu", "gelu", "gelu_tanh", "fatrelu"};
  std::printf("%s activation %-9s %s vec %d rows %-4lld d %-5lld strides %lld/%lld%s grid %-3u threads/row %-3d  max rel err %.2e%s\n",
              ok && pad_ok ? "ok  " : "FAIL", kNames[static_cast<int>(K)], name<T>(), VEC, (long long)s.rows,
              (long long)s.d, (long long)s.x_stride, (long long)os, s.in_place ? " in place" : "", grid,
              1 << a.row_threads_log2, worst, pad_ok ? "" : "  wrote outside out");
  return ok && pad_ok;
}

// act_fast and act_accurate on a dense grid of a in [-10, 10] against float64, with the host's
// exact 2^x and 1/x in place of the hardware's (which add 1-2 ulp): what is left is the
// formulas' own error, which the op's documentation bounds by 2^-19 relative, plus 2^-22 |s| where
// the function amplifies the rounding of its fp32 argument (and fp32's flush below 2^-126).
template <ActKind K>
bool act_accuracy(const char* what) {
  double worst_fast = 0, worst_accurate = 0;
  bool ok = true;
  for (int i = -200000; i <= 200000; ++i) {
    const float a = static_cast<float>(i) * 5e-5f;
    double s = 0;
    const double want = act_ref(K, a, 0.3, &s);
    const double bound = (0x1p-19 + 0x1p-22 * std::fabs(s)) * std::fabs(want) + kTiny;
    const double fast = kh_activation::gpu::act_fast<K>(a, 0.3f), accurate = kh_activation::gpu::act_accurate<K>(a, 0.3f);
    ok = ok && std::fabs(fast - want) <= bound && std::fabs(accurate - want) <= bound;
    if (std::fabs(want) > kTiny) {
      worst_fast = std::max(worst_fast, std::fabs(fast - want) / std::fabs(want));
      worst_accurate = std::max(worst_accurate, std::fabs(accurate - want) / std::fabs(want));
    }
  }
  std::printf("%s accuracy %-9s a in [-10, 10] step 5e-5: max rel err fast %.2e (2^%.1f), accurate %.2e (2^%.1f)\n",
              ok ? "ok  " : "FAIL", what, worst_fast, std::log2(worst_fast + 1e-300), worst_accurate,
              std::log2(worst_accurate + 1e-300));
  return ok;
}

template <typename T, int VEC>
int run_act_kinds(const ActShape& s, std::mt19937& rng) {
  return !run_act<ActKind::kSilu, T, VEC>(s, rng) + !run_act<ActKind::kGelu, T, VEC>(s, rng) +
         !run_act<ActKind::kGeluTanh, T, VEC>(s, rng) + !run_act<ActKind::kFatRelu, T, VEC>(s, rng);
}

// ---- rotary --------------------------------------------------------------------------------

struct RotShape {
  int64_t tokens, heads_q, heads_kv, head_size, rotary_dim, pad;  // pad: after each head and token
  bool neox, cache_f32, positions_i64, vec;
  unsigned grid;  // 0: as the launcher sizes it
};

template <typename T, typename C>
bool run_rotary_typed(const RotShape& s, std::mt19937& rng) {
  std::uniform_real_distribution<double> uni(-2, 2);
  const int64_t hs = s.head_size + s.pad;
  const int64_t qts = s.heads_q * hs + s.pad, kts = s.heads_kv * hs + s.pad;
  std::vector<T> q(static_cast<size_t>(s.tokens * qts)), k(static_cast<size_t>(std::max<int64_t>(1, s.tokens * kts)));
  for (auto& e : q) e = from_double<T>(uni(rng));
  for (auto& e : k) e = from_double<T>(uni(rng));
  const std::vector<T> q0 = q, k0 = k;
  const int64_t max_position = 40, half = s.rotary_dim / 2;
  std::vector<C> cache(static_cast<size_t>(max_position * s.rotary_dim));
  for (int64_t p = 0; p < max_position; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = p * std::pow(10000.0, -2.0 * i / s.rotary_dim);
      cache[p * s.rotary_dim + i] = from_double<C>(std::cos(angle));
      cache[p * s.rotary_dim + half + i] = from_double<C>(std::sin(angle));
    }
  std::vector<int64_t> pos(static_cast<size_t>(s.tokens));
  for (auto& e : pos) e = static_cast<int64_t>(rng() % max_position);
  if (s.tokens > 2) pos[1] = max_position;  // outside the cache: token 1 is left untouched
  if (s.tokens > 3) pos[3] = -1;
  std::vector<int32_t> pos32(pos.begin(), pos.end());

  kh_rotary::RotaryParams p;
  p.query = q.data();
  p.key = s.heads_kv > 0 ? k.data() : nullptr;
  p.positions = s.positions_i64 ? static_cast<const void*>(pos.data()) : pos32.data();
  p.cache = cache.data();
  p.tokens = s.tokens;
  p.heads_q = s.heads_q;
  p.heads_kv = s.heads_kv;
  p.head_size = s.head_size;
  p.rotary_dim = s.rotary_dim;
  p.max_position = max_position;
  p.q_token_stride = qts, p.q_head_stride = hs, p.k_token_stride = kts, p.k_head_stride = hs;
  p.positions_stride = 1;
  p.cache_row_stride = s.rotary_dim;
  p.dtype = dtype<T>();
  p.cache_dtype = s.cache_f32 ? kh_kernels::DType::kF32 : p.dtype;
  p.positions_i64 = s.positions_i64;
  p.neox = s.neox;
  using namespace kh_rotary::gpu;
  const bool vec_ok = s.neox ? vector_path<T, true>(p) : vector_path<T, false>(p);
  if (vec_ok != s.vec) {
    std::printf("FAIL rotary: vector_path says %d for a case built for %d\n", vec_ok, s.vec);
    return false;
  }
  constexpr int kPn = vector_pairs<T, true>(), kPg = vector_pairs<T, false>();
  const int P = !s.vec ? 1 : s.neox ? kPn : kPg;
  const RotaryLaunch a = make_launch(p, P);
  const unsigned grid = s.grid ? s.grid : static_cast<unsigned>(blocks_needed(a));
  const int threads = a.gx * a.hy * a.tz;
  if (s.neox) {
    if (s.vec) simt::launch(simt::Dim3{grid, 1, 1}, threads, &rotary_kernel<T, true, kPn>, a);
    else simt::launch(simt::Dim3{grid, 1, 1}, threads, &rotary_kernel<T, true, 1>, a);
  } else {
    if (s.vec) simt::launch(simt::Dim3{grid, 1, 1}, threads, &rotary_kernel<T, false, kPg>, a);
    else simt::launch(simt::Dim3{grid, 1, 1}, threads, &rotary_kernel<T, false, 1>, a);
  }

  bool ok = true;
  double worst = 0;
  auto check = [&](const std::vector<T>& now, const std::vector<T>& before, int64_t heads, int64_t ts) {
    for (int64_t t = 0; t < s.tokens; ++t) {
      const bool valid = pos[t] >= 0 && pos[t] < max_position;
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = t * ts + h * hs;
        for (int64_t e = 0; e < hs; ++e) {
          double want = to_double(before[base + e]);
          if (valid && e < s.rotary_dim) {
            const int64_t i = s.neox ? e % half : e / 2;
            const bool second = s.neox ? e >= half : e % 2 == 1;
            const int64_t ia = s.neox ? i : 2 * i, ib = s.neox ? half + i : 2 * i + 1;
            const double a0 = to_double(before[base + ia]), b0 = to_double(before[base + ib]);
            const double c = to_double(cache[pos[t] * s.rotary_dim + i]), sn = to_double(cache[pos[t] * s.rotary_dim + half + i]);
            want = second ? b0 * c + a0 * sn : a0 * c - b0 * sn;
            const double got = to_double(now[base + e]);
            // A rotated value may cancel: its fp32 error is relative to |a c| + |b s|.
            const double scale = std::fabs(a0 * c) + std::fabs(b0 * sn);
            const double quantum = std::is_same_v<T, F16> ? 0x1p-24 : kTiny;
            if (std::fabs(got - want) > ulp<T>() * std::fabs(want) + std::ldexp(1.0, -22) * scale + quantum) ok = false;
            if (want != 0) worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
          } else if (to_double(now[base + e]) != want) {
            ok = false;  // the rest of a head, padding, and tokens with a bad position: untouched
          }
        }
      }
      for (int64_t e = heads * hs; e < ts; ++e) ok = ok && to_double(now[t * ts + e]) == to_double(before[t * ts + e]);
    }
  };
  check(q, q0, s.heads_q, qts);
  if (s.heads_kv > 0) check(k, k0, s.heads_kv, kts);
  std::printf("%s rotary %s %s cache %s pos %s vec %d tokens %-3lld heads %lld/%lld head %-3lld rot %-3lld pad %lld grid %-3u "
              "block %dx%dx%d  max rel err %.2e\n",
              ok ? "ok  " : "FAIL", s.neox ? "neox" : "gptj", name<T>(), s.cache_f32 ? "f32 " : "same", s.positions_i64 ? "i64" : "i32",
              s.vec, (long long)s.tokens, (long long)s.heads_q, (long long)s.heads_kv, (long long)s.head_size,
              (long long)s.rotary_dim, (long long)s.pad, grid, a.gx, a.hy, a.tz, worst);
  return ok;
}

template <typename T>
int run_rotary(RotShape s, std::mt19937& rng) {
  int failed = 0;
  for (bool neox : {true, false}) {
    s.neox = neox;
    s.cache_f32 = true;
    failed += !run_rotary_typed<T, float>(s, rng);
    if (sizeof(T) == 2) {
      s.cache_f32 = false;
      failed += !run_rotary_typed<T, T>(s, rng);
    }
  }
  return failed;
}

}  // namespace

int main() {
  std::mt19937 rng(11);
  int failed = 0;
  failed += !act_accuracy<ActKind::kSilu>("silu") + !act_accuracy<ActKind::kGelu>("gelu") +
            !act_accuracy<ActKind::kGeluTanh>("gelu_tanh");
  // Activation: wide rows (256 threads a row, packs past one round), small rows (many rows a
  // block), odd d (element packs), padded and in-place rows, fewer blocks than row groups.
  const ActShape wide{3, 8 * 256 * 2 + 8 * 3, 2 * (8 * 256 * 2 + 8 * 3) + 16, 8 * 256 * 2 + 8 * 3 + 8, false, 0};
  failed += run_act_kinds<Bf16, 8>(wide, rng) + run_act_kinds<F16, 8>(wide, rng);
  const ActShape small{37, 24, 56, 32, false, 2};
  failed += run_act_kinds<Bf16, 8>(small, rng) + run_act_kinds<float, 4>(small, rng);
  const ActShape in_place{5, 64, 136, 0, true, 0};
  failed += run_act_kinds<F16, 8>(in_place, rng) + run_act_kinds<float, 4>(in_place, rng);
  const ActShape odd{9, 37, 75, 41, false, 3};
  failed += run_act_kinds<Bf16, 1>(odd, rng) + run_act_kinds<F16, 1>(odd, rng) + run_act_kinds<float, 1>(odd, rng);
  const ActShape one{1, 1, 2, 1, false, 0};
  failed += run_act_kinds<Bf16, 1>(one, rng);
  // Rotary: the bench's head layout at a few tokens (block of 8 x 14 x 2), partial rotation and
  // odd sizes on element packs, several tokens a block and tokens past the grid, bad positions.
  const RotShape gqa{6, 32, 8, 128, 128, 0, true, false, true, true, 0};
  failed += run_rotary<Bf16>(gqa, rng) + run_rotary<float>(gqa, rng);
  RotShape partial{9, 4, 2, 64, 32, 8, true, false, false, true, 2};
  failed += run_rotary<F16>(partial, rng);
  RotShape odd_rot{7, 3, 1, 65, 10, 1, true, false, true, false, 0};
  failed += run_rotary<Bf16>(odd_rot, rng) + run_rotary<float>(odd_rot, rng);
  RotShape no_key{5, 5, 0, 32, 32, 0, true, false, false, true, 0};
  failed += run_rotary<F16>(no_key, rng);
  std::printf("%s: %d pointwise cases failed\n", failed ? "FAIL" : "OK", failed);
  return failed ? 1 : 0;
}
