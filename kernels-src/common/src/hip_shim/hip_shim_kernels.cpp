// The HIP runtime shim, part 2: the kernels clang registers, and launching them through the
// module API (see hip_shim_runtime.cpp for the whole design).
//
// clang's HIP host code, per translation unit: a constructor calls
// __hipRegisterFatBinary(&wrapper) (wrapper: magic "HIPF", version 1, the offload bundle in
// .hip_fatbin) and __hipRegisterFunction(handle, host_stub, name, ...) for each kernel, and
// registers __hipUnregisterFatBinary with atexit (run at dlclose). A <<<grid, block, shmem,
// stream>>> launch calls __hipPushCallConfiguration, then the kernel's host stub, which pops
// it (__hipPopCallConfiguration) and calls hipLaunchKernel(stub, grid, block, args, shmem,
// stream) with args[i] pointing at the i-th kernel argument: exactly what
// hipModuleLaunchKernel takes as kernelParams.
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "hip_shim.hpp"
#include "kh/platform/offload_bundle.hpp"

namespace kh_hip_shim {
namespace {

// What clang passes to __hipRegisterFatBinary (CGCUDANV: __hip_fatbin_wrapper).
struct FatbinWrapper {
  uint32_t magic;  // 0x48495046, "HIPF"
  uint32_t version;
  const void* bundle;
  const void* unused;
};
constexpr uint32_t kFatbinMagic = 0x48495046u;
// The bundle's own header bounds what is read; this only caps a corrupt one.
constexpr size_t kMaxBundleBytes = size_t{1} << 30;

struct FatBinary {
  const FatbinWrapper* wrapper = nullptr;
  std::map<int, hipModule_t> modules;  // per device
};

struct Kernel {
  FatBinary* fatbin = nullptr;
  std::string name;                            // the device function's (mangled) name
  std::map<int, hipFunction_t> functions;      // per device
};

struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<FatBinary>> fatbins;
  std::map<const void*, Kernel> kernels;  // by host stub
};

Registry& registry() {
  static Registry r;
  return r;
}

// Loads the fat binary's code object for the current device: each amdgcn entry of its bundle
// is offered in turn (a library built for one processor holds one), the first the runtime
// takes is kept.
hipError_t load_module(const Runtime& rt, FatBinary& fb, int device, hipModule_t* out) {
  if (auto it = fb.modules.find(device); it != fb.modules.end()) {
    *out = it->second;
    return hipSuccess;
  }
  if (fb.wrapper->magic != kFatbinMagic) return hipErrorInvalidImage;
  kh::platform::OffloadBundle bundle;
  std::string error;
  if (!kh::platform::read_offload_bundle(static_cast<const unsigned char*>(fb.wrapper->bundle), kMaxBundleBytes, bundle,
                                         error))
    return hipErrorInvalidImage;
  hipError_t e = hipErrorNoBinaryForGpu;
  for (const kh::platform::OffloadBundleEntry& entry : bundle.entries) {
    if (entry.amdgcn_target().empty() || entry.size == 0) continue;
    hipModule_t module = nullptr;
    e = rt.ModuleLoadData(&module, entry.data);
    if (e == hipSuccess) {
      fb.modules[device] = module;
      *out = module;
      return hipSuccess;
    }
  }
  return e;
}

// The launch configuration stack of <<<>>> (a thread's launches nest only through stubs).
struct CallConfiguration {
  dim3 grid, block;
  size_t shared_memory;
  hipStream_t stream;
};
thread_local std::vector<CallConfiguration> t_call_configurations;

}  // namespace

hipError_t device_function(const void* host_stub, hipFunction_t* out) {
  const Runtime* rt = runtime();
  if (rt == nullptr) return kNoRuntime;
  int device = 0;
  hipError_t e = rt->GetDevice(&device);
  if (e != hipSuccess) return e;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.kernels.find(host_stub);
  if (it == r.kernels.end()) return hipErrorInvalidDeviceFunction;
  Kernel& k = it->second;
  if (auto f = k.functions.find(device); f != k.functions.end()) {
    *out = f->second;
    return hipSuccess;
  }
  hipModule_t module = nullptr;
  if ((e = load_module(*rt, *k.fatbin, device, &module)) != hipSuccess) return e;
  hipFunction_t function = nullptr;
  if ((e = rt->ModuleGetFunction(&function, module, k.name.c_str())) != hipSuccess) return e;
  k.functions[device] = function;
  *out = function;
  return hipSuccess;
}

}  // namespace kh_hip_shim

using namespace kh_hip_shim;

extern "C" {

void** __hipRegisterFatBinary(const void* data) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto fb = std::make_unique<FatBinary>();
  fb->wrapper = static_cast<const FatbinWrapper*>(data);
  r.fatbins.push_back(std::move(fb));
  return reinterpret_cast<void**>(r.fatbins.back().get());
}

void __hipRegisterFunction(void** handle, const void* host_stub, char* device_function_name, const char* device_name,
                           unsigned int /*thread_limit*/, void* /*tid*/, void* /*bid*/, void* /*block_dim*/,
                           void* /*grid_dim*/, int* /*warp_size*/) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  Kernel k;
  k.fatbin = reinterpret_cast<FatBinary*>(handle);
  k.name = device_name != nullptr ? device_name : device_function_name;
  r.kernels[host_stub] = std::move(k);
}

// A __device__ or __constant__ variable: its storage is in the code object, which device
// code reaches as is; host access to it (hipMemcpyToSymbol) is not provided by the shim.
void __hipRegisterVar(void** /*handle*/, char* /*host_var*/, char* /*device_address*/, const char* /*device_name*/,
                      int /*ext*/, size_t /*size*/, int /*constant*/, int /*global*/) {}

// At dlclose of the library: its kernels and fat binaries go. The code objects loaded into
// the runtime stay (a few hundred KB per device): at process exit the runtime may already be
// torn down, and the shim cannot tell exit from dlclose.
void __hipUnregisterFatBinary(void** handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto* fb = reinterpret_cast<FatBinary*>(handle);
  for (auto it = r.kernels.begin(); it != r.kernels.end();) it = it->second.fatbin == fb ? r.kernels.erase(it) : std::next(it);
  for (auto it = r.fatbins.begin(); it != r.fatbins.end(); ++it)
    if (it->get() == fb) {
      r.fatbins.erase(it);
      break;
    }
}

hipError_t __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shared_memory, hipStream_t stream) {
  t_call_configurations.push_back({grid, block, shared_memory, stream});
  return hipSuccess;
}

hipError_t __hipPopCallConfiguration(dim3* grid, dim3* block, size_t* shared_memory, hipStream_t* stream) {
  if (t_call_configurations.empty()) return record(hipErrorInvalidConfiguration);
  const CallConfiguration c = t_call_configurations.back();
  t_call_configurations.pop_back();
  *grid = c.grid;
  *block = c.block;
  *shared_memory = c.shared_memory;
  *stream = c.stream;
  return hipSuccess;
}

hipError_t hipLaunchKernel(const void* host_stub, dim3 grid, dim3 block, void** args, size_t shared_memory,
                           hipStream_t stream) {
  hipFunction_t function = nullptr;
  const hipError_t e = device_function(host_stub, &function);
  if (e != hipSuccess) return record(e);
  return record(runtime()->ModuleLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                              static_cast<unsigned int>(shared_memory), stream, args, nullptr));
}

}  // extern "C"
