// What this machine is, as variant selection needs it: CPU ISA level, glibc, and the GPUs
// the CUDA driver and the ROCm kernel driver report. Detection never crashes or hangs: a
// missing driver or device yields facts that say so (and why, for `kernels doctor`).
#pragma once

#include <string>
#include <vector>

namespace kh::loader {

struct GpuDevice {
  std::string backend;  // "cuda" or "rocm"
  int index = 0;
  std::string name;     // "NVIDIA H200", or the ROCm node's name
  std::string arch;     // "sm90", "sm80", "gfx942"
  int major = 0, minor = 0;  // CUDA compute capability; for ROCm the gfx major/minor/stepping digits
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
  std::vector<GpuDevice> gpus;

  const GpuDevice* first_gpu(const std::string& backend) const {
    for (const auto& g : gpus)
      if (g.backend == backend) return &g;
    return nullptr;
  }
};

// Detected once per process and cached.
const HostFacts& host_facts();

// The probes, exposed for tests and `kernels doctor`.
void probe_cuda(HostFacts* facts);
void probe_rocm(HostFacts* facts, const std::string& kfd_topology_dir = "/sys/class/kfd/kfd/topology/nodes");

}  // namespace kh::loader
