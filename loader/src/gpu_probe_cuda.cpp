// The CUDA probe: the driver API reached with dlopen("libcuda.so.1"), so kh runs where no
// CUDA is installed. Only plain-C entry points with stable signatures are used.
#include <dlfcn.h>

#include <string>

#include "kh/loader/host_facts.hpp"

namespace kh::loader {
namespace {

using CUresult = int;
using CUdevice = int;
constexpr int kAttrComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

struct CudaDriver {
  void* handle = nullptr;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driver_get_version)(int*) = nullptr;
  CUresult (*device_get_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*device_get_name)(char*, int, CUdevice) = nullptr;
  ~CudaDriver() {
    if (handle) ::dlclose(handle);
  }
  template <typename F>
  bool bind(F* fn, const char* name) {
    *fn = reinterpret_cast<F>(::dlsym(handle, name));
    return *fn != nullptr;
  }
};

}  // namespace

void probe_cuda(HostFacts* facts) {
  CudaDriver cu;
  cu.handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cu.handle == nullptr) {
    facts->cuda_status = "no CUDA driver (libcuda.so.1 not found)";
    return;
  }
  if (!cu.bind(&cu.init, "cuInit") || !cu.bind(&cu.driver_get_version, "cuDriverGetVersion") ||
      !cu.bind(&cu.device_get_count, "cuDeviceGetCount") || !cu.bind(&cu.device_get, "cuDeviceGet") ||
      !cu.bind(&cu.device_get_attribute, "cuDeviceGetAttribute") || !cu.bind(&cu.device_get_name, "cuDeviceGetName")) {
    facts->cuda_status = "libcuda.so.1 lacks driver API entry points";
    return;
  }
  int version = 0;
  if (cu.driver_get_version(&version) == 0 && version > 0) {
    facts->cuda_driver_major = version / 1000;
    facts->cuda_driver_minor = (version % 1000) / 10;
  }
  const CUresult init = cu.init(0);
  if (init != 0) {
    facts->cuda_status = "CUDA driver present but cuInit failed (error " + std::to_string(init) + "): no usable device";
    return;
  }
  int count = 0;
  if (cu.device_get_count(&count) != 0 || count == 0) {
    facts->cuda_status = "CUDA driver present, no device";
    return;
  }
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    if (cu.device_get(&dev, i) != 0) continue;
    GpuDevice g;
    g.backend = platform::Backend::Cuda;
    g.index = i;
    cu.device_get_attribute(&g.major, kAttrComputeCapabilityMajor, dev);
    cu.device_get_attribute(&g.minor, kAttrComputeCapabilityMinor, dev);
    char name[256] = {0};
    if (cu.device_get_name(name, sizeof name - 1, dev) == 0) g.name = name;
    g.arch = "sm" + std::to_string(g.major) + std::to_string(g.minor);
    facts->gpus.push_back(g);
  }
  facts->cuda_status = std::to_string(count) + " CUDA device(s), driver supports CUDA " +
                       std::to_string(facts->cuda_driver_major) + "." + std::to_string(facts->cuda_driver_minor);
}

}  // namespace kh::loader
