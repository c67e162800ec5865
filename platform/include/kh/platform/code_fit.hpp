// How well a build's device code fits a device: the compatibility rules of GPU code
// (docs/abi.md, "Which build runs where", gives them with their sources).
#pragma once

#include <string>

#include "kh/platform/gpu_arch.hpp"

namespace kh::platform {

// Ordered: a higher fit is a better build for the device. Selection ranks GPU builds by fit
// first, then by how close the build's arch is to the device's.
enum class Fit : uint8_t {
  None = 0,
  PtxJit = 1,        // the driver JIT-compiles the build's PTX at first load (slow first call)
  SameMajorSass = 2, // SASS for an older minor of the same major (sm80 on 8.6)
  Exact = 3,         // SASS (or a code object) for exactly this arch, plain features
  Family = 4,        // family-specific SASS of this device's family (sm100f on 10.0 or 10.3)
  ArchSpecific = 5,  // arch-specific SASS for exactly this device (sm90a on 9.0)
};
const char* fit_name(Fit fit);  // "ptx-jit", "same-major-sass", "exact", "family", "arch-specific"

// Why a build does not fit (Fit::None), typed, for tools; describe() words it.
enum class Misfit : uint8_t {
  None = 0,
  ArchSpecificElsewhere,  // smXYa on a device that is not X.Y
  OtherFamily,            // smXYf on a device of another major, or an older minor
  OlderDevice,            // the device is older than the build's arch (no SASS runs, PTX cannot go back)
  OtherProcessor,         // a gfx code object for another processor
  FeatureMismatch,        // a code object built for xnack+ / sramecc+ (or -) on a device set otherwise
};
const char* misfit_name(Misfit misfit);

struct CodeFit {
  Fit fit = Fit::None;
  Misfit misfit = Misfit::None;
};

// A CUDA build for `build` (carrying PTX as required_device_code() says: all but 'a' builds)
// on a device of compute capability major.minor.
CodeFit cuda_code_fit(const CudaArch& build, int device_major, int device_minor);
// A ROCm build's code objects for `build` on `device`: the processor must be the same; a
// feature the build fixes (+ or -) must be the device's; a device feature not known (Any)
// is taken to fit.
CodeFit amd_code_fit(const AmdTarget& build, const AmdTarget& device);

// One sentence: "sm90a code runs only on compute capability 9.0; this device is 8.0".
std::string describe_cuda_fit(const CudaArch& build, int device_major, int device_minor, const CodeFit& fit);
std::string describe_amd_fit(const AmdTarget& build, const AmdTarget& device, const CodeFit& fit);

}  // namespace kh::platform
