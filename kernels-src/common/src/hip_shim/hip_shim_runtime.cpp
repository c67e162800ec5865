// The HIP runtime shim of kh's HIP kernel libraries, part 1: finding the runtime.
//
// Why: a library that links libamdhip64 carries DT_NEEDED libamdhip64.so.<N> and loads under
// one ROCm release only (5.x, 6.x and 7.x have different sonames). The packages' HIP sources
// stay as they are (<<<>>> launches, hip* calls): clang's HIP output and the host code call
// the entry points this shim defines inside each library (hidden, bound locally with
// -Bsymbolic), and the shim
//  - opens the runtime with dlopen on first use, trying the sonames of kh/platform/
//    rocm_runtime.hpp newest first (an already loaded one first of all: a host that uses HIP
//    itself shares its runtime, and so its streams, with the kernels);
//  - keeps the code objects clang embeds (offload bundles in .hip_fatbin) and launches through
//    the module API: hipModuleLoadData of the gfx942 code object, hipModuleGetFunction by the
//    kernel's name, hipModuleLaunchKernel with the <<<>>> grid, block, arguments and stream
//    (hip_shim_kernels.cpp);
//  - forwards the other hip* calls the packages make (hip_shim_api.cpp).
// Loading the library never touches the runtime; with none present, every entry point fails
// with hipErrorSharedObjectInitFailed, whose hipGetErrorString says what was tried, and the
// ops turn that into KH_ERROR_DEVICE.
#include <dlfcn.h>

#include <mutex>

#include "hip_shim.hpp"
#include "kh/platform/rocm_runtime.hpp"

namespace kh_hip_shim {
namespace {

struct Opened {
  Runtime runtime;
  bool ok = false;
  std::string problem;
};

template <typename F>
bool bind(void* handle, F* fn, const char* name, std::string* missing) {
  *fn = reinterpret_cast<F>(::dlsym(handle, name));
  if (*fn == nullptr && missing->empty()) *missing = name;
  return *fn != nullptr;
}

Opened open_runtime() {
  Opened o;
  void* handle = nullptr;
  // A runtime this process has loaded already (the host's own) comes first.
  for (const char* soname : kh::platform::kHipRuntimeSonames) {
    if ((handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) != nullptr) {
      o.runtime.soname = soname;
      break;
    }
  }
  std::string tried, last_error;
  for (const char* soname : kh::platform::kHipRuntimeSonames) {
    if (handle != nullptr) break;
    tried += std::string(tried.empty() ? "" : ", ") + soname;
    ::dlerror();
    if ((handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL)) != nullptr) {
      o.runtime.soname = soname;
    } else if (const char* why = ::dlerror()) {
      last_error = why;
    }
  }
  if (handle == nullptr) {
    o.problem = "no HIP runtime: none of " + tried + " could be opened (" + last_error +
                "); install ROCm 5.x, 6.x or 7.x, with its lib folder where the dynamic loader looks";
    return o;
  }
  // The runtime stays loaded for the life of the process: unloading a HIP runtime is not
  // supported by ROCm, and streams of the host may live in it.
  Runtime& r = o.runtime;
  std::string missing;
  bind(handle, &r.GetDevice, "hipGetDevice", &missing);
  bind(handle, &r.SetDevice, "hipSetDevice", &missing);
  bind(handle, &r.GetDeviceCount, "hipGetDeviceCount", &missing);
  bind(handle, &r.DeviceGetAttribute, "hipDeviceGetAttribute", &missing);
  bind(handle, &r.GetLastError, "hipGetLastError", &missing);
  bind(handle, &r.PeekAtLastError, "hipPeekAtLastError", &missing);
  bind(handle, &r.GetErrorName, "hipGetErrorName", &missing);
  bind(handle, &r.GetErrorString, "hipGetErrorString", &missing);
  bind(handle, &r.ModuleLoadData, "hipModuleLoadData", &missing);
  bind(handle, &r.ModuleGetFunction, "hipModuleGetFunction", &missing);
  bind(handle, &r.ModuleLaunchKernel, "hipModuleLaunchKernel", &missing);
  bind(handle, &r.ModuleOccupancyMaxActiveBlocksPerMultiprocessor, "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor",
       &missing);
  bind(handle, &r.MemsetAsync, "hipMemsetAsync", &missing);
  bind(handle, &r.MemcpyAsync, "hipMemcpyAsync", &missing);
  bind(handle, &r.RuntimeGetVersion, "hipRuntimeGetVersion", &missing);
  bind(handle, &r.DriverGetVersion, "hipDriverGetVersion", &missing);
  if (!missing.empty()) {
    o.problem = "the HIP runtime " + r.soname + " lacks " + missing + "; install ROCm 5.x, 6.x or 7.x";
    return o;
  }
  o.ok = true;
  return o;
}

const Opened& opened() {
  static std::once_flag once;
  static Opened o;
  std::call_once(once, [] { o = open_runtime(); });
  return o;
}

thread_local hipError_t t_last_error = hipSuccess;

}  // namespace

const Runtime* runtime() {
  const Opened& o = opened();
  return o.ok ? &o.runtime : nullptr;
}

const char* no_runtime_message() {
  const Opened& o = opened();
  return o.ok ? "" : o.problem.c_str();
}

hipError_t record(hipError_t e) {
  if (e != hipSuccess) t_last_error = e;
  return e;
}

hipError_t take_last_error() {
  const hipError_t e = t_last_error;
  t_last_error = hipSuccess;
  return e;
}

hipError_t peek_last_error() { return t_last_error; }

}  // namespace kh_hip_shim
