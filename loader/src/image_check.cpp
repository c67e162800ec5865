// The device code a build carries against the GPU it is loaded for; see image_check.hpp.
// The rules are the platform vocabulary's (kh/platform/code_fit.hpp), applied per image:
// SASS runs natively by its arch's rules, PTX JIT-compiles on any device at least as new as
// its plain arch (arch- and family-specific PTX only where their SASS would run), a code
// object runs on its own gfx processor.
#include "image_check.hpp"

#include <nlohmann/json.hpp>

#include "kh/platform/code_fit.hpp"
#include "kh/platform/variant_key.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/json_limits.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::loader {
namespace {

constexpr const char* kAbiReport = "lib/kh-abi-check.json";
constexpr uint64_t kMaxAbiReportBytes = 4u << 20;

// "compute_90a" -> the arch "sm_90a" names; nullopt when it is not a CUDA arch.
std::optional<platform::CudaArch> cuda_arch_of(const platform::DeviceCode& image) {
  const std::string prefix = "compute_";
  if (image.kind == platform::DeviceCode::Kind::Ptx && image.arch.compare(0, prefix.size(), prefix) == 0)
    return platform::parse_cuda_arch("sm_" + image.arch.substr(prefix.size()));
  return platform::parse_cuda_arch(image.arch);
}

// Whether gpu runs image; *why says what it found either way.
bool image_runs(const platform::DeviceCode& image, const GpuDevice& gpu, std::string* why) {
  using Kind = platform::DeviceCode::Kind;
  if (image.kind == Kind::Amdgcn) {
    const auto build = platform::parse_amd_target(image.arch), device = platform::parse_amd_target(gpu.arch);
    if (gpu.backend != platform::Backend::Rocm || !build || !device) {
      *why = "a " + image.arch + " code object is not for this GPU";
      return false;
    }
    const platform::CodeFit fit = platform::amd_code_fit(*build, *device);
    *why = platform::describe_amd_fit(*build, *device, fit);
    return fit.fit != platform::Fit::None;
  }
  const auto arch = cuda_arch_of(image);
  if (gpu.backend != platform::Backend::Cuda || !arch) {
    *why = std::string(platform::kind_name(image.kind)) + " " + image.arch + " is not for this GPU";
    return false;
  }
  const platform::CodeFit fit = platform::cuda_code_fit(*arch, gpu.major, gpu.minor);
  const std::string cc = platform::capability_text(gpu.major, gpu.minor);
  if (image.kind == Kind::Ptx) {
    // Plain PTX JIT-compiles on any newer device; 'a'/'f' PTX only where their SASS runs.
    const bool runs = arch->kind == platform::CudaArch::Kind::Plain ? fit.fit != platform::Fit::None
                                                                     : fit.fit != platform::Fit::None &&
                                                                           fit.fit != platform::Fit::PtxJit;
    *why = "PTX " + image.arch + (runs ? " JIT-compiles for " : " cannot be JIT-compiled for ") + "compute capability " + cc;
    return runs;
  }
  // SASS alone: cuda_code_fit counts on the PTX a whole build carries; this image has none.
  const bool runs = fit.fit != platform::Fit::None && fit.fit != platform::Fit::PtxJit;
  *why = runs ? platform::describe_cuda_fit(*arch, gpu.major, gpu.minor, fit)
              : "SASS " + image.arch + " does not run on compute capability " + cc +
                    (arch->kind == platform::CudaArch::Kind::ArchSpecific
                         ? " (arch-specific: " + platform::capability_text(arch->major, arch->minor) + " only)"
                         : " (SASS runs on its own major, minor " + std::to_string(arch->minor) + " or newer)");
  return runs;
}

}  // namespace

BuildCode build_device_code(const std::string& package_dir, const platform::VariantKey& key) {
  const std::string report = package_dir + "/" + kAbiReport;
  if (registry::path_exists(report)) {
    try {
      const std::string text = registry::read_regular_file(report, kMaxAbiReportBytes);
      registry::check_json_depth(text, report);
      const nlohmann::json j = nlohmann::json::parse(text);
      BuildCode code{{}, std::string("its ABI report (") + kAbiReport + ")"};
      for (const auto& c : j.at("gpu_code")) {
        const std::string kind = c.at("kind").get<std::string>();
        using Kind = platform::DeviceCode::Kind;
        const Kind k = kind == "sass" ? Kind::Sass : kind == "ptx" ? Kind::Ptx : kind == "amdgcn" ? Kind::Amdgcn
                                                                                                   : throw std::runtime_error(kind);
        code.images.push_back({k, c.at("arch").get<std::string>()});
      }
      return code;
    } catch (const std::exception& e) {
      fail(KH_ERROR_BAD_ARCHIVE, report + " is not an ABI report kh reads (" + e.what() +
                                     "); the package is damaged or from a newer kh: report it to its author");
    }
  }
  return BuildCode{platform::required_device_code(key), "its variant key"};
}

std::string why_no_image_runs(const std::vector<platform::DeviceCode>& images, const GpuDevice& gpu) {
  std::string reasons;
  for (const platform::DeviceCode& image : images) {
    std::string why;
    if (image_runs(image, gpu, &why)) return "";
    reasons += (reasons.empty() ? "" : "; ") + why;
  }
  return images.empty() ? "it carries no device code at all" : reasons;
}

void check_device_runs_build(const HostFacts& host, const DeviceRequest& request, const std::string& variant,
                             const std::string& package_dir, const std::string& what) {
  const platform::VariantKeyParse parsed = platform::parse_variant_key(variant);
  if (!parsed.key || parsed.key->backend == platform::Backend::Cpu) return;
  const platform::Backend backend = parsed.key->backend;
  if (request.device_type != 0 && request.device_type != platform::dlpack_device_type(backend)) return;
  const GpuDevice* gpu = host.gpu(backend, request.device_id);
  if (gpu == nullptr) return;  // no such GPU here: nothing to judge (a build fetched for another machine)
  const BuildCode code = build_device_code(package_dir, *parsed.key);
  const std::string why = why_no_image_runs(code.images, *gpu);
  if (why.empty()) return;
  std::string carried;
  for (const platform::DeviceCode& image : code.images)
    carried += (carried.empty() ? "" : ", ") + std::string(platform::kind_name(image.kind)) + " " + image.arch;
  fail(KH_ERROR_NO_COMPATIBLE_VARIANT,
       what + ": build " + variant + " has no device code that " + (gpu->name.empty() ? "the GPU" : gpu->name) + " (" +
           platform::backend_name(backend) + " device " + std::to_string(gpu->index) + ", " + gpu->arch +
           ") can run: it carries " + (carried.empty() ? "none" : carried) + " (by " + code.source + "): " + why +
           ". Load a build for " + gpu->arch + " (`kernels get --explain` shows which fit; unset KH_TARGET or "
           "kh_load_options.variant if one was forced), or ask the package's author for one");
}

}  // namespace kh::loader
