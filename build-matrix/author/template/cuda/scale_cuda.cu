// run_scale for CUDA builds: one thread per element (a grid-stride loop past the grid's
// limit), on the tensors' device and the caller's stream.
#include <cuda_runtime.h>

#include <algorithm>

#include "scale_args.hpp"

namespace kh_@KH_IDENT@ {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 20;

__global__ void scale_kernel(float* out, const float* x, float alpha, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = alpha * x[i];
}

kh_status device_error(const kh_kernels::OpContext& c, cudaError_t e) {
  return kh_kernels::op_error(c, KH_ERROR_DEVICE, "CUDA error %s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
}

}  // namespace

kh_status run_scale(const kh_kernels::OpContext& c, const ScaleParams& p) {
  if (p.n == 0) return KH_OK;
  int previous = 0;
  cudaError_t e = cudaGetDevice(&previous);
  if (e == cudaSuccess && previous != p.device) e = cudaSetDevice(p.device);
  if (e != cudaSuccess) return device_error(c, e);
  const int64_t blocks = std::min<int64_t>((p.n + kThreads - 1) / kThreads, kMaxBlocks);
  scale_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(c.ctx->stream)>>>(
      p.out, p.x, p.alpha, p.n);
  e = cudaGetLastError();
  if (previous != p.device) cudaSetDevice(previous);
  return e == cudaSuccess ? KH_OK : device_error(c, e);
}

}  // namespace kh_@KH_IDENT@
