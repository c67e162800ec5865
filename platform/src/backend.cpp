// Backend names and DLPack device types; see backend.hpp.
#include "kh/platform/backend.hpp"

namespace kh::platform {

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
    case Backend::Rocm: return "rocm";
  }
  return "?";
}

std::optional<Backend> parse_backend(std::string_view name) {
  if (name == "cpu") return Backend::Cpu;
  if (name == "cuda") return Backend::Cuda;
  if (name == "rocm") return Backend::Rocm;
  return std::nullopt;
}

int32_t dlpack_device_type(Backend backend) {
  switch (backend) {
    case Backend::Cpu: return 1;    // kDLCPU
    case Backend::Cuda: return 2;   // kDLCUDA
    case Backend::Rocm: return 10;  // kDLROCM
  }
  return 0;
}

std::optional<Backend> backend_of_device_type(int32_t device_type) {
  for (Backend b : {Backend::Cpu, Backend::Cuda, Backend::Rocm})
    if (dlpack_device_type(b) == device_type) return b;
  return std::nullopt;
}

}  // namespace kh::platform
