// Fail at load, not at the first launch (issue 39, item 4): whether the GPU a build is loaded
// for can run any of the device code the build carries. Selection judges a build by what its
// variant key promises; a forced build (KH_TARGET, kh_load_options.variant) is not judged at
// all, and a key can promise more than the library holds. So before the library is opened,
// the device code the package records is checked against the device: a build with no image
// the device runs (no SASS for it, no PTX it can JIT, no code object for its processor) fails
// kh_load_kernel with KH_ERROR_NO_COMPATIBLE_VARIANT naming the device's arch and the build's
// code, instead of "no kernel image is available" at the first launch.
#pragma once

#include <string>
#include <vector>

#include "kh/loader/host_facts.hpp"
#include "kh/platform/device_code.hpp"
#include "kh/loader/variant_select.hpp"

namespace kh::loader {

// The device code a package's build carries, and where that was read.
struct BuildCode {
  std::vector<platform::DeviceCode> images;
  std::string source;  // "its ABI report (lib/kh-abi-check.json)", "its variant key"
};
// The ABI report `kernels pack` stores in the package (what the library itself holds; the
// tree is verified against its manifest), else what the variant key requires of the build.
BuildCode build_device_code(const std::string& package_dir, const platform::VariantKey& key);

// "" when `gpu` runs one of `images` (natively, or through PTX it can JIT), else why not,
// naming the device's arch and each image.
std::string why_no_image_runs(const std::vector<platform::DeviceCode>& images, const GpuDevice& gpu);

// For the build `variant` installed at package_dir, loaded for `request` on `host`: throws
// StatusError(KH_ERROR_NO_COMPATIBLE_VARIANT) when the requested GPU of the build's backend
// can run none of its device code. Nothing to judge (a CPU build, no such GPU here) passes.
// `what` names the package ("kernels-community/attention 1.2.0").
void check_device_runs_build(const HostFacts& host, const DeviceRequest& request, const std::string& variant,
                             const std::string& package_dir, const std::string& what);

}  // namespace kh::loader
