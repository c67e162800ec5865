// norms_emulate.cpp: runs the gfx942 row-norm kernels (kernels-src/common/include/
// kh_kernel/row_norm_engine_hip.hpp over row_norm_kernels.inl) on the host through the SIMT emulator
// (simt.hpp) and compares out and residual_out with a float64 reference: every row-size rung
// of the launcher's ladder (a wavefront per row, a workgroup per row, the streaming kernel),
// 16-byte and scalar packs with a tail, fp32/fp16/bf16, RMS and layer norm, fused or not,
// padded row strides, more rows than workgroups (the row loop). No AMD GPU is needed.
//
// Build and run: tests/hip/emulate/run_emulate.sh (clang-19, host only).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#define KH_GFX942_EMULATION 1
#include "kh_kernel/row_norm_engine_hip.hpp"

namespace {

using kh_row_norm::Bf16;
using kh_row_norm::NormKind;
using kh_row_norm::ParamKind;
using kh_row_norm::RowNormArgs;

template <typename T> T from_float(float x);
template <> float from_float<float>(float x) { return x; }
template <> _Float16 from_float<_Float16>(float x) { return static_cast<_Float16>(x); }
template <> Bf16 from_float<Bf16>(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return Bf16{static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
double to_double(float x) { return x; }
double to_double(_Float16 x) { return static_cast<double>(x); }
double to_double(Bf16 x) { return simt::bf16_bits_to_float(x.bits); }
template <typename T> double ulp() { return sizeof(T) == 4 ? 1.2e-7 : (std::is_same_v<T, _Float16> ? 9.8e-4 : 7.8e-3); }
template <typename T> const char* name() { return sizeof(T) == 4 ? "f32 " : (std::is_same_v<T, _Float16> ? "f16 " : "bf16"); }

struct Shape {
  int64_t rows, hidden, stride;  // stride >= hidden: padded rows (a multiple of VEC, as the launcher picks)
  unsigned grid;                 // fewer workgroups than row groups: the row loop runs
};

// Runs `kernel` (a row_norm_registers or row_norm_streaming instantiation) on one shape.
template <NormKind K, typename T, bool FUSED>
bool run(const char* what, void (*kernel)(RowNormArgs), int threads, const Shape& s, std::mt19937& rng) {
  std::uniform_real_distribution<float> uni(-2.f, 2.f);
  const size_t n = static_cast<size_t>(s.rows * s.stride);
  std::vector<T> x(n), res(n), out(n, from_float<T>(777.f)), res_out(n, from_float<T>(777.f));
  for (auto& e : x) e = from_float<T>(uni(rng));
  for (auto& e : res) e = from_float<T>(uni(rng));
  std::vector<float> weight(s.hidden);  // fp32 weight
  std::vector<T> bias(s.hidden);        // bias of the input dtype (layer norm)
  for (auto& e : weight) e = uni(rng);
  for (auto& e : bias) e = from_float<T>(uni(rng));

  RowNormArgs a{};
  a.out = out.data(), a.x = x.data(), a.weight = weight.data();
  a.residual_out = FUSED ? res_out.data() : nullptr, a.residual = FUSED ? res.data() : nullptr;
  a.bias = K == NormKind::kLayer ? bias.data() : nullptr;
  for (auto* l : {&a.out_rows, &a.x_rows, &a.residual_rows, &a.residual_out_rows}) {
    l->ndim = 1;
    l->size[0] = s.rows;
    l->stride[0] = s.stride;
  }
  a.rows = s.rows, a.hidden = s.hidden, a.eps = 1e-5f;
  a.weight_kind = ParamKind::kF32;
  a.bias_kind = K == NormKind::kLayer ? ParamKind::kSameAsInput : ParamKind::kNone;
  simt::launch(simt::Dim3{s.grid, 1, 1}, threads, kernel, a);

  double err = 0, res_err = 0;
  bool pad_ok = true;
  std::vector<double> h(s.hidden);
  for (int64_t r = 0; r < s.rows; ++r) {
    const size_t base = static_cast<size_t>(r * s.stride);
    for (int64_t i = 0; i < s.hidden; ++i) {
      h[i] = to_double(x[base + i]);
      if (FUSED) {
        const T rounded = from_float<T>(static_cast<float>(h[i] + to_double(res[base + i])));
        res_err = std::max(res_err, std::fabs(to_double(res_out[base + i]) - to_double(rounded)));
        h[i] = to_double(rounded);
      }
    }
    double mean = 0, sq = 0;
    for (double v : h) mean += v;
    mean /= s.hidden;
    if (K == NormKind::kRms) mean = 0;
    for (double v : h) sq += (v - mean) * (v - mean);
    const double scale = 1.0 / std::sqrt(sq / s.hidden + 1e-5);
    for (int64_t i = 0; i < s.hidden; ++i) {
      double ref = (h[i] - mean) * scale * weight[i];
      if (K == NormKind::kLayer) ref += to_double(bias[i]);
      const double e = std::fabs(to_double(out[base + i]) - ref) / std::max(1.0, std::fabs(ref));
      err = std::isnan(e) ? INFINITY : std::max(err, e);
    }
    for (int64_t i = s.hidden; i < s.stride; ++i) pad_ok = pad_ok && to_double(out[base + i]) == to_double(from_float<T>(777.f));
  }
  const double tol = 4 * ulp<T>() + 1e-5;  // one rounding of out, fp32 statistics
  const bool ok = err <= tol && res_err == 0 && pad_ok;
  std::printf("%s %-5s %s %-5s %-32s rows %-4lld hidden %-6lld stride %-6lld grid %-3u  rel err %.2e (tol %.2e)%s%s\n",
              ok ? "ok  " : "FAIL", K == NormKind::kRms ? "rms" : "layer", name<T>(), FUSED ? "fused" : "", what,
              (long long)s.rows, (long long)s.hidden, (long long)s.stride, s.grid, err, tol,
              res_err == 0 ? "" : "  residual_out differs", pad_ok ? "" : "  wrote past the row");
  return ok;
}

#define KH_REG(K, T, VEC, NT, RT, IT, F)                                                                \
  run<K, T, F>("registers<" #VEC "," #NT "," #RT "," #IT ">", &kh_row_norm::row_norm_registers<K, T, VEC, NT, RT, IT, F>, \
               NT, shape, rng)
#define KH_STREAM(K, T, VEC, F) \
  run<K, T, F>("streaming<" #VEC ",1024>", &kh_row_norm::row_norm_streaming<K, T, VEC, 1024, F>, 1024, shape, rng)

}  // namespace

int main() {
  std::mt19937 rng(7);
  int failed = 0;
  Shape shape;
  constexpr NormKind R = NormKind::kRms, L = NormKind::kLayer;
  // A wavefront per row (4 rows a workgroup), 16-byte packs with a tail, padded rows; 9 rows on
  // 2 workgroups: the row loop and a partial last group.
  shape = {9, 64 * 8 - 3, 520, 2};
  failed += !KH_REG(R, Bf16, 8, 256, 64, 1, false);
  failed += !KH_REG(L, _Float16, 8, 256, 64, 1, true);
  shape = {5, 64 * 8 * 4 - 5, 2048, 1};
  failed += !KH_REG(R, Bf16, 8, 256, 64, 4, true);
  failed += !KH_REG(L, Bf16, 8, 256, 64, 4, false);
  // A workgroup per row.
  shape = {3, 256 * 4 * 2 - 1, 2048, 2};
  failed += !KH_REG(L, float, 4, 256, 256, 2, true);
  failed += !KH_REG(R, _Float16, 8, 256, 256, 2, false);
  shape = {2, 512 * 8 * 4 - 7, 512 * 8 * 4, 1};
  failed += !KH_REG(L, Bf16, 8, 512, 512, 4, true);
  shape = {2, 1024 * 4 * 4 - 1, 1024 * 4 * 4, 1};
  failed += !KH_REG(R, float, 4, 1024, 1024, 4, true);
  // Scalar accesses (VEC 1: unaligned layouts), odd sizes.
  shape = {7, 37, 41, 3};
  failed += !KH_REG(L, float, 1, 256, 64, 1, false);
  failed += !KH_REG(R, Bf16, 1, 256, 64, 1, true);
  shape = {2, 1500, 1503, 1};
  failed += !KH_REG(L, _Float16, 1, 512, 512, 4, true);
  // Streaming (rows too large for registers), tail and scalar variants.
  shape = {2, 1024 * 8 * 4 + 13, 1024 * 8 * 4 + 16, 1};
  failed += !KH_STREAM(L, Bf16, 8, true);
  failed += !KH_STREAM(R, _Float16, 8, false);
  shape = {2, 5000, 5001, 1};
  failed += !KH_STREAM(L, float, 1, false);
  shape = {3, 1024 * 4 * 4 + 2, 1024 * 4 * 4 + 4, 2};
  failed += !KH_STREAM(R, float, 4, true);
  std::printf("%s: %d norm cases failed\n", failed ? "FAIL" : "OK", failed);
  return failed ? 1 : 0;
}
