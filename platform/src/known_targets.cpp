// The GPUs `kernels info --coverage` reports on; see known_targets.hpp.
#include "kh/platform/known_targets.hpp"

namespace kh::platform {

const std::vector<KnownCudaGpu>& known_cuda_gpus() {
  static const std::vector<KnownCudaGpu> gpus = {
      {7, 5, "T4, RTX 20xx"},          {8, 0, "A100, A30"},           {8, 6, "A10, A40, RTX 30xx"},
      {8, 7, "Jetson Orin"},           {8, 8, ""},                    {8, 9, "L4, L40S, RTX 40xx"},
      {9, 0, "H100, H200, GH200"},     {10, 0, "B200, GB200"},        {10, 3, "B300, GB300"},
      {11, 0, "Jetson Thor"},          {12, 0, "RTX 50xx, RTX PRO 6000"}, {12, 1, "DGX Spark (GB10)"},
  };
  return gpus;
}

const std::vector<KnownAmdGpu>& known_amd_gpus() {
  static const std::vector<KnownAmdGpu> gpus = {
      {"gfx90a", "MI210, MI250X"}, {"gfx942", "MI300X, MI300A, MI325X"}, {"gfx950", "MI350X, MI355X"},
      {"gfx1100", "RX 7900 XTX, PRO W7900"},
  };
  return gpus;
}

}  // namespace kh::platform
