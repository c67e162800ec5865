// What this machine is, as variant selection needs it: CPU ISA level, glibc, and every GPU
// the CUDA driver and the ROCm kernel driver report. Detection never crashes or hangs: a
// missing driver or device yields facts that say so (and why, for `kernels doctor`).
#pragma once

#include <string>
#include <vector>

#include "kh/platform/backend.hpp"

namespace kh::loader {

struct GpuDevice {
  platform::Backend backend = platform::Backend::Cuda;  // Cuda or Rocm
  int index = 0;             // the device's ordinal within its backend (CUDA device N, HIP device N)
  std::string name;          // "NVIDIA H200", or the ROCm node's name
  std::string arch;          // "sm90", "sm100", "gfx942" (a platform vocabulary arch)
  int major = 0, minor = 0;  // CUDA compute capability; for ROCm the gfx major and minor
};

struct HostFacts {
  std::string cpu;        // "x86_64", "aarch64"
  std::string os;         // "linux"
  int x86_isa_level = 0;  // 1 (baseline) .. 4 (x86-64-v4); 0 on other CPUs
  int glibc_major = 0, glibc_minor = 0;

  int cuda_driver_major = 0, cuda_driver_minor = 0;  // 0.0: no CUDA driver
  std::string cuda_status;                           // what the CUDA probe found, in words
  int rocm_major = 0, rocm_minor = 0;                // HIP runtime version; 0.0 if none
  std::string rocm_status;
  std::vector<GpuDevice> gpus;  // CUDA devices by ordinal, then ROCm devices by ordinal

  // Device `index` of `backend`, or nullptr.
  const GpuDevice* gpu(platform::Backend backend, int index) const {
    for (const auto& g : gpus)
      if (g.backend == backend && g.index == index) return &g;
    return nullptr;
  }
  int gpu_count(platform::Backend backend) const {
    int n = 0;
    for (const auto& g : gpus) n += g.backend == backend;
    return n;
  }
};

// Detected once per process and cached. In a build with KH_TEST_HOOKS (tests only, never a
// release), KH_TEST_HOST_FACTS=<file> makes it the machine that JSON file describes (the
// shape `kernels doctor --json` prints as "host"), read again whenever the variable changes.
const HostFacts& host_facts();

// The probes, exposed for tests and `kernels doctor`.
void probe_cuda(HostFacts* facts);
void probe_rocm(HostFacts* facts, const std::string& kfd_topology_dir = "/sys/class/kfd/kfd/topology/nodes");
// ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES as the runtime applies them (ROCr's first, then
// HIP's over what is left), when they are lists of ordinals; false when one is set in a form
// the probe does not read (GPU UUIDs), which leaves every GPU listed. Part of probe_rocm.
bool apply_visible_rocm_devices(std::vector<GpuDevice>* gpus);

}  // namespace kh::loader
