// The HIP runtime shim's internals (see hip_shim_runtime.cpp for what the shim is and why).
// Host code of the HIP kernel libraries: compiled with the host C++ compiler against the HIP
// headers (for the types), never linked to libamdhip64.
#pragma once

#include <hip/hip_runtime_api.h>

#include <string>

namespace kh_hip_shim {

// The runtime's entry points the shim forwards to, found with dlsym in the library it opened.
struct Runtime {
  std::string soname;  // the soname it was opened as, e.g. "libamdhip64.so.6"
  decltype(&::hipGetDevice) GetDevice = nullptr;
  decltype(&::hipSetDevice) SetDevice = nullptr;
  decltype(&::hipGetDeviceCount) GetDeviceCount = nullptr;
  decltype(&::hipDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::hipGetLastError) GetLastError = nullptr;
  decltype(&::hipPeekAtLastError) PeekAtLastError = nullptr;
  decltype(&::hipGetErrorName) GetErrorName = nullptr;
  decltype(&::hipGetErrorString) GetErrorString = nullptr;
  decltype(&::hipModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::hipModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::hipModuleLaunchKernel) ModuleLaunchKernel = nullptr;
  decltype(&::hipModuleOccupancyMaxActiveBlocksPerMultiprocessor) ModuleOccupancyMaxActiveBlocksPerMultiprocessor = nullptr;
  decltype(&::hipMemsetAsync) MemsetAsync = nullptr;
  decltype(&::hipMemcpyAsync) MemcpyAsync = nullptr;
  decltype(&::hipRuntimeGetVersion) RuntimeGetVersion = nullptr;
  decltype(&::hipDriverGetVersion) DriverGetVersion = nullptr;
};

// The runtime, opened on first use (once per process and library); nullptr when none could be
// opened or it lacks an entry point the shim needs, and then no_runtime_message() says why.
const Runtime* runtime();
// The error every entry point returns while there is no runtime.
constexpr hipError_t kNoRuntime = hipErrorSharedObjectInitFailed;
const char* no_runtime_message();

// This thread's last error as hipGetLastError reports it: set by every failing entry point.
hipError_t record(hipError_t e);
hipError_t take_last_error();   // and reset
hipError_t peek_last_error();

// The device function a kernel's host stub stands for, on the current device: its code
// object loaded into the runtime (once per device) and the function looked up by name.
hipError_t device_function(const void* host_stub, hipFunction_t* out);

}  // namespace kh_hip_shim
