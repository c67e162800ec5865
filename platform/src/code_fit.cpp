// GPU code compatibility; see code_fit.hpp. The CUDA rules are NVIDIA's (docs/abi.md, "Which
// build runs where", names the sources): SASS runs on its own major with a minor at least the
// build's; arch-specific ('a') SASS on its own compute capability only; family-specific ('f')
// SASS on every device of its major whose minor is at least the build's; PTX JIT-compiles on
// any device at least as new.
#include "kh/platform/code_fit.hpp"

#include "kh/platform/device_code.hpp"

namespace kh::platform {
namespace {

bool at_least(int major, int minor, int want_major, int want_minor) {
  return major != want_major ? major > want_major : minor >= want_minor;
}

const char* feature_text(AmdFeature f) { return f == AmdFeature::On ? "+" : f == AmdFeature::Off ? "-" : " any"; }

}  // namespace

const char* fit_name(Fit fit) {
  switch (fit) {
    case Fit::None: return "none";
    case Fit::PtxJit: return "ptx-jit";
    case Fit::SameMajorSass: return "same-major-sass";
    case Fit::Exact: return "exact";
    case Fit::Family: return "family";
    case Fit::ArchSpecific: return "arch-specific";
  }
  return "?";
}

const char* misfit_name(Misfit misfit) {
  switch (misfit) {
    case Misfit::None: return "none";
    case Misfit::ArchSpecificElsewhere: return "arch-specific-elsewhere";
    case Misfit::OtherFamily: return "other-family";
    case Misfit::OlderDevice: return "older-device";
    case Misfit::OtherProcessor: return "other-processor";
    case Misfit::FeatureMismatch: return "feature-mismatch";
  }
  return "?";
}

CodeFit cuda_code_fit(const CudaArch& build, int dev_major, int dev_minor) {
  const bool same_major = dev_major == build.major;
  const bool newer_or_same = at_least(dev_major, dev_minor, build.major, build.minor);
  const bool ptx = cuda_build_carries_ptx(build);
  switch (build.kind) {
    case CudaArch::Kind::ArchSpecific:
      if (same_major && dev_minor == build.minor) return {Fit::ArchSpecific, Misfit::None};
      return {Fit::None, Misfit::ArchSpecificElsewhere};
    case CudaArch::Kind::Family:
      if (same_major && dev_minor >= build.minor) return {Fit::Family, Misfit::None};
      if (ptx && newer_or_same) return {Fit::PtxJit, Misfit::None};
      return {Fit::None, newer_or_same ? Misfit::OtherFamily : Misfit::OlderDevice};
    case CudaArch::Kind::Plain:
      if (same_major && dev_minor == build.minor) return {Fit::Exact, Misfit::None};
      if (same_major && dev_minor > build.minor) return {Fit::SameMajorSass, Misfit::None};
      if (ptx && newer_or_same) return {Fit::PtxJit, Misfit::None};
      return {Fit::None, Misfit::OlderDevice};
  }
  return {};
}

CodeFit amd_code_fit(const AmdTarget& build, const AmdTarget& device) {
  if (build.processor != device.processor) return {Fit::None, Misfit::OtherProcessor};
  auto fits = [](AmdFeature b, AmdFeature d) { return b == AmdFeature::Any || d == AmdFeature::Any || b == d; };
  if (!fits(build.sramecc, device.sramecc) || !fits(build.xnack, device.xnack)) return {Fit::None, Misfit::FeatureMismatch};
  return {Fit::Exact, Misfit::None};
}

std::string describe_cuda_fit(const CudaArch& build, int dev_major, int dev_minor, const CodeFit& fit) {
  const std::string cc = capability_text(dev_major, dev_minor);
  const std::string own = capability_text(build.major, build.minor);
  switch (fit.fit) {
    case Fit::ArchSpecific: return "arch-specific " + key_name(build) + " SASS for compute capability " + cc;
    case Fit::Family: return "family-specific " + key_name(build) + " SASS, which runs on " + cc;
    case Fit::Exact: return "exact arch " + key_name(build) + " SASS for compute capability " + cc;
    case Fit::SameMajorSass: return "same-major SASS " + key_name(build) + ", which runs on " + cc;
    case Fit::PtxJit:
      return "runs on " + cc + " through its compute_" + std::to_string(build.major) + std::to_string(build.minor) +
             " PTX (JIT-compiled at first load)";
    case Fit::None: break;
  }
  switch (fit.misfit) {
    case Misfit::ArchSpecificElsewhere:
      return key_name(build) + " code runs only on compute capability " + own + "; this GPU is " + cc;
    case Misfit::OtherFamily:
      return key_name(build) + " family code runs only on " + std::to_string(build.major) + ".x GPUs of minor " +
             std::to_string(build.minor) + " or newer, and carries no PTX that runs on " + cc;
    case Misfit::OlderDevice:
      return key_name(build) + " code needs compute capability " + own + " or newer; this GPU is " + cc;
    default: break;
  }
  return key_name(build) + " code does not run on " + cc;
}

std::string describe_amd_fit(const AmdTarget& build, const AmdTarget& device, const CodeFit& fit) {
  if (fit.fit != Fit::None) return "exact arch " + target_id(build) + " code objects for " + target_id(device);
  if (fit.misfit == Misfit::FeatureMismatch)
    return target_id(build) + " code objects need sramecc" + feature_text(build.sramecc) + " xnack" +
           feature_text(build.xnack) + "; this GPU is " + target_id(device);
  return build.processor + " code objects run only on " + build.processor + "; this GPU is " + device.processor;
}

}  // namespace kh::platform
