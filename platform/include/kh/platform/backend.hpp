// The backends a kernel build targets, as variant keys spell them, and the DLPack device
// type of each (what a build's tensors live on).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kh::platform {

enum class Backend : uint8_t { Cpu, Cuda, Rocm };

// "cpu", "cuda", "rocm".
const char* backend_name(Backend backend);
std::optional<Backend> parse_backend(std::string_view name);

// DLDeviceType: kDLCPU 1, kDLCUDA 2, kDLROCM 10.
int32_t dlpack_device_type(Backend backend);
// The backend of a DLDeviceType; nullopt for types kh has no builds for.
std::optional<Backend> backend_of_device_type(int32_t device_type);

}  // namespace kh::platform
