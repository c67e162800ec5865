// A C++ host: loads a kernel package through kh::load_kernel(), calls rms_norm on random
// data and checks the result against its own loop. Errors arrive as kh::Error.
// Usage: cpp_host [org/name@version]   (hub from $KH_HUB, cache from $KH_CACHE)
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <kh/kh.hpp>

int main(int argc, char** argv) {
  const std::string spec = argc > 1 ? argv[1] : "kernels-community/rms-norm@1";
  constexpr int64_t rows = 48, hidden = 777;
  try {
    kh::Kernel kernel = kh::load_kernel(spec);
    std::printf("loaded %s %s (%s)\n", kernel.name().c_str(), kernel.version().c_str(), kernel.variant().c_str());

    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<float> x(rows * hidden), weight(hidden), out(rows * hidden, NAN);
    for (auto& v : x) v = dist(rng);
    for (auto& v : weight) v = dist(rng);
    int64_t x_shape[2] = {rows, hidden}, w_shape[1] = {hidden};
    DLTensor tx{x.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, x_shape, nullptr, 0};
    DLTensor tout{out.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, x_shape, nullptr, 0};
    DLTensor tw{weight.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, w_shape, nullptr, 0};
    const double eps = 1e-5;
    kernel.op("rms_norm")({kh::arg(&tout), kh::arg(&tx), kh::arg(&tw), kh::arg(eps)});

    double max_error = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      double sum_sq = 0.0;
      for (int64_t c = 0; c < hidden; ++c) sum_sq += double(x[r * hidden + c]) * x[r * hidden + c];
      const double inv_rms = 1.0 / std::sqrt(sum_sq / hidden + eps);
      for (int64_t c = 0; c < hidden; ++c) {
        const double err = std::fabs(out[r * hidden + c] - x[r * hidden + c] * inv_rms * weight[c]);
        if (!(err <= max_error)) max_error = err;
      }
    }
    if (!(max_error < 1e-4)) {
      std::printf("rms_norm FAILED (max abs error %.3g)\n", max_error);
      return 1;
    }
    std::printf("rms_norm ok (max abs error %.3g over %lld x %lld)\n", max_error, (long long)rows, (long long)hidden);
    return 0;
  } catch (const kh::Error& e) {
    std::fprintf(stderr, "cpp_host: %s\n", e.what());
    return 1;
  }
}
