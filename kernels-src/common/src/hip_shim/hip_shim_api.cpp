// The HIP runtime shim, part 3: the hip* calls of the packages' host code, forwarded to the
// runtime the shim opened (hip_shim_runtime.cpp), or failing with hipErrorSharedObjectInitFailed
// when there is none. Kernel-addressed calls (occupancy) map the host stub to its module
// function first (hip_shim_kernels.cpp). A call the packages start to make is added here:
// the libraries link with --no-undefined, so a missing one fails the build, naming it.
#include "hip_shim.hpp"

using namespace kh_hip_shim;

namespace {

// The name and text of an error while no runtime is there to give them.
const char* own_error_name(hipError_t e) {
  switch (e) {
    case hipSuccess: return "hipSuccess";
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorInvalidConfiguration: return "hipErrorInvalidConfiguration";
    case hipErrorInvalidDeviceFunction: return "hipErrorInvalidDeviceFunction";
    case hipErrorInvalidImage: return "hipErrorInvalidImage";
    case hipErrorNoBinaryForGpu: return "hipErrorNoBinaryForGpu";
    case hipErrorSharedObjectInitFailed: return "hipErrorSharedObjectInitFailed";
    default: return "hipErrorUnknown";
  }
}

}  // namespace

extern "C" {

hipError_t hipGetDevice(int* device) {
  const Runtime* rt = runtime();
  return record(rt ? rt->GetDevice(device) : kNoRuntime);
}

hipError_t hipSetDevice(int device) {
  const Runtime* rt = runtime();
  return record(rt ? rt->SetDevice(device) : kNoRuntime);
}

hipError_t hipGetDeviceCount(int* count) {
  const Runtime* rt = runtime();
  return record(rt ? rt->GetDeviceCount(count) : kNoRuntime);
}

hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attribute, int device) {
  // The attributes' values are the same in HIP 5.x, 6.x and 7.x (the enum only grew, and
  // retired entries kept their places as "unused").
  const Runtime* rt = runtime();
  return record(rt ? rt->DeviceGetAttribute(value, attribute, device) : kNoRuntime);
}

hipError_t hipRuntimeGetVersion(int* version) {
  const Runtime* rt = runtime();
  return record(rt ? rt->RuntimeGetVersion(version) : kNoRuntime);
}

hipError_t hipDriverGetVersion(int* version) {
  const Runtime* rt = runtime();
  return record(rt ? rt->DriverGetVersion(version) : kNoRuntime);
}

hipError_t hipGetLastError(void) {
  // The shim's own failures first (a launch of an unknown stub, no runtime), then the runtime's.
  const hipError_t own = take_last_error();
  const Runtime* rt = runtime();
  const hipError_t theirs = rt ? rt->GetLastError() : hipSuccess;
  return own != hipSuccess ? own : theirs;
}

hipError_t hipPeekAtLastError(void) {
  const hipError_t own = peek_last_error();
  const Runtime* rt = runtime();
  return own != hipSuccess ? own : rt ? rt->PeekAtLastError() : hipSuccess;
}

const char* hipGetErrorName(hipError_t error) {
  const Runtime* rt = runtime();
  return rt ? rt->GetErrorName(error) : own_error_name(error);
}

const char* hipGetErrorString(hipError_t error) {
  const Runtime* rt = runtime();
  if (rt != nullptr) return rt->GetErrorString(error);
  return error == kNoRuntime ? no_runtime_message() : own_error_name(error);
}

hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* host_stub, int block_size,
                                                        size_t dynamic_shared_memory) {
  hipFunction_t function = nullptr;
  const hipError_t e = device_function(host_stub, &function);
  if (e != hipSuccess) return record(e);
  return record(runtime()->ModuleOccupancyMaxActiveBlocksPerMultiprocessor(blocks, function, block_size,
                                                                            dynamic_shared_memory));
}

hipError_t hipMemsetAsync(void* destination, int value, size_t bytes, hipStream_t stream) {
  const Runtime* rt = runtime();
  return record(rt ? rt->MemsetAsync(destination, value, bytes, stream) : kNoRuntime);
}

hipError_t hipMemcpyAsync(void* destination, const void* source, size_t bytes, hipMemcpyKind kind, hipStream_t stream) {
  const Runtime* rt = runtime();
  return record(rt ? rt->MemcpyAsync(destination, source, bytes, kind, stream) : kNoRuntime);
}

}  // extern "C"
