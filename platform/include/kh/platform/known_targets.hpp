// The GPU archs kh reports coverage for (`kernels info --coverage`): every CUDA arch nvcc 13.0
// targets (`nvcc --list-gpu-code`: sm_75 .. sm_121) and the AMD processors of current
// Instinct and Radeon parts.
#pragma once

#include <vector>

#include "kh/platform/gpu_arch.hpp"

namespace kh::platform {

struct KnownCudaGpu {
  int major, minor;
  const char* examples;  // products of that compute capability, for people reading a table
};
struct KnownAmdGpu {
  const char* processor;
  const char* examples;
};

const std::vector<KnownCudaGpu>& known_cuda_gpus();
const std::vector<KnownAmdGpu>& known_amd_gpus();

}  // namespace kh::platform
