// Picks the build of a release that fits this machine, or one of its GPUs, and says why
// each other build was refused (for `kernels doctor`, `kernels get --explain` and errors).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kh/loader/host_facts.hpp"
#include "kh/install/selection.hpp"
#include "kh/platform/code_fit.hpp"
#include "kh/registry/repo_index.hpp"

namespace kh::loader {

// Which GPU a build is selected for, as DLPack names devices (kh_load_options.device_type,
// .device_id): device_type 0 means any backend's device `device_id` (each GPU build is judged
// against the device of that ordinal of its own backend: device 0 is "the first GPU");
// kDLCUDA (2) or kDLROCM (10) names one backend's device, and builds of the other are refused.
struct DeviceRequest {
  int32_t device_type = 0;
  int32_t device_id = 0;
  bool operator==(const DeviceRequest& o) const { return device_type == o.device_type && device_id == o.device_id; }
};
// "device 0", "CUDA device 1", "ROCm device 0".
std::string describe(const DeviceRequest& request);
// `kernels --device`: "1", "cuda:1", "rocm:0"; nullopt otherwise.
std::optional<DeviceRequest> parse_device_request(std::string_view text);
// Throws StatusError(KH_ERROR_INVALID_ARGUMENT) when the request names a device this machine
// lacks (a negative id, an unknown device type, CUDA device 3 of two); device 0 of any
// backend is always accepted, for machines without a GPU select a CPU build.
void check_device_request(const HostFacts& host, const DeviceRequest& request);

// Why a build was refused, typed (its name is what `--json` prints as "refusal").
enum class Refusal : uint8_t {
  None,
  BadKey,        // not a variant key kh reads
  KernelAbi,     // another kernel ABI major
  Os,
  Cpu,
  Glibc,         // the build's glibc floor is newer than the host's
  IsaLevel,      // a CPU ISA level the host lacks
  NoDevice,      // no GPU of the build's backend (at the requested ordinal)
  OtherBackend,  // the request names another backend's device
  GpuArch,       // the device code does not run on the device
  Driver,        // the CUDA driver is older than the build needs
  Runtime,       // no HIP runtime, or one older than the build needs
  CodeObject,    // the HIP runtime cannot load the build's code-object version
};
const char* refusal_name(Refusal refusal);  // "gpu-arch"

struct VariantVerdict {
  const registry::VariantEntry* entry = nullptr;
  bool compatible = false;
  int rank = 0;                                // higher is better among compatible builds
  platform::Fit fit = platform::Fit::None;     // for GPU builds: how the device code fits the device
  Refusal refusal = Refusal::None;
  const GpuDevice* device = nullptr;           // the GPU a GPU build was judged against, if any
  std::string reason;                          // why compatible (what matched) or why refused
};

struct VariantSelection {
  const registry::VariantEntry* chosen = nullptr;  // nullptr: none fits
  std::vector<VariantVerdict> verdicts;            // one per offered build, best first
};

// Ranks: GPU builds by how their device code fits the device (arch-specific > family > exact
// > same-major SASS > PTX JIT), then by how close their arch is to it; any GPU build above
// any CPU build; CPU builds by ISA level.
VariantSelection select_variant(const std::vector<registry::VariantEntry>& variants, const HostFacts& host,
                                const DeviceRequest& device = {});

// The selection as resolution carries it (kh/install/selection.hpp): the chosen build's key
// and every build's verdict, for this host and device; forced_key non-empty (--target,
// KH_TARGET) is chosen as is, whatever the verdicts say, which are still given. Throws
// StatusError(KH_ERROR_INVALID_ARGUMENT) for a device this machine lacks (unless forced).
install::BuildSelection select_build(const std::vector<registry::VariantEntry>& variants, const HostFacts& host,
                                     const DeviceRequest& device, const std::string& forced_key = "");

// The chosen entry, or throws StatusError: KH_ERROR_NO_COMPATIBLE_VARIANT listing every
// build with its reason. `forced_key` non-empty (--target, KH_TARGET) picks that build as is,
// whatever this machine's facts say, glibc floor included (KH_ERROR_NOT_FOUND
// if the release lacks it). `what` names the repo and version for messages.
const registry::VariantEntry& choose_variant(const std::vector<registry::VariantEntry>& variants, const HostFacts& host,
                                             const DeviceRequest& device, const std::string& forced_key,
                                             const std::string& what);

}  // namespace kh::loader
