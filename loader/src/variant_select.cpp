// Variant selection; see variant_select.hpp. A build must match the loader's kernel ABI,
// the OS and CPU, and have a glibc floor the host meets; a GPU build must fit the requested
// device of its backend (the rules are the platform vocabulary's, kh/platform/code_fit.hpp)
// under the host's driver or runtime; CPU builds need their ISA level.
#include "kh/loader/variant_select.hpp"

#include <algorithm>

#include "kh/kernel_abi.h"
#include "kh/platform/cpu_isa.hpp"
#include "kh/platform/rocm_runtime.hpp"
#include "kh/platform/variant_key.hpp"
#include "kh/platform/versions.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::loader {
namespace {

using platform::Backend;
using platform::Fit;
using platform::MajorMinor;

// A GPU build's rank: its fit first, then the closeness of its arch (major * 10 + minor <
// 1000), always above every CPU build (ranked 1-4 by ISA level).
constexpr int kRankPerFit = 1000;
int gpu_rank(Fit fit, int arch_major, int arch_minor) {
  return static_cast<int>(fit) * kRankPerFit + arch_major * 10 + arch_minor;
}

std::string version_text(int major, int minor) { return std::to_string(major) + "." + std::to_string(minor); }

std::string device_name(const GpuDevice& gpu) {
  return (gpu.name.empty() ? std::string("GPU") : gpu.name) + " (" + platform::backend_name(gpu.backend) + " device " +
         std::to_string(gpu.index) + ", " + gpu.arch + ")";
}

VariantVerdict refuse(VariantVerdict v, Refusal refusal, std::string reason) {
  v.compatible = false;
  v.refusal = refusal;
  v.reason = std::move(reason);
  return v;
}

// The GPU of `backend` the request names, or a refusal saying why there is none.
const GpuDevice* requested_gpu(const HostFacts& host, Backend backend, const DeviceRequest& request, VariantVerdict* v) {
  const int32_t type = platform::dlpack_device_type(backend);
  if (request.device_type != 0 && request.device_type != type) {
    *v = refuse(*v, Refusal::OtherBackend, std::string("a ") + platform::backend_name(backend) + " build; the request is for " +
                                               describe(request));
    return nullptr;
  }
  const GpuDevice* gpu = host.gpu(backend, request.device_id);
  if (gpu == nullptr) {
    const std::string& status = backend == Backend::Cuda ? host.cuda_status : host.rocm_status;
    *v = refuse(*v, Refusal::NoDevice,
                std::string("a ") + platform::backend_name(backend) + " build; " +
                    (host.gpu_count(backend) > 0 ? "this machine has no " + std::string(platform::backend_name(backend)) +
                                                       " device " + std::to_string(request.device_id)
                                                 : status));
  }
  return gpu;
}

// CUDA: the device code must fit the device; the driver must support the toolkit the build
// used, except that CUDA minor-version compatibility lets an older driver of the same major
// run SASS (never PTX, which the driver must JIT-compile).
VariantVerdict judge_cuda(VariantVerdict v, const platform::VariantKey& key, const HostFacts& host,
                          const DeviceRequest& request) {
  const GpuDevice* gpu = requested_gpu(host, Backend::Cuda, request, &v);
  if (gpu == nullptr) return v;
  v.device = gpu;
  const platform::CudaArch& arch = *key.cuda;
  const platform::CodeFit fit = platform::cuda_code_fit(arch, gpu->major, gpu->minor);
  const std::string device = device_name(*gpu);
  if (fit.fit == Fit::None)
    return refuse(v, Refusal::GpuArch, platform::describe_cuda_fit(arch, gpu->major, gpu->minor, fit) + " (" + device + ")");
  const MajorMinor toolkit = key.version();
  const MajorMinor driver{host.cuda_driver_major, host.cuda_driver_minor};
  const bool driver_new_enough = driver >= toolkit;
  const bool minor_compatible = driver.major == toolkit.major;
  if (fit.fit == Fit::PtxJit && !driver_new_enough)
    return refuse(v, Refusal::Driver,
                  "would JIT its PTX on " + device + ", which needs a driver for CUDA " + key.backend_version +
                      " or newer; this driver supports " + platform::to_string(driver) + "; update the NVIDIA driver");
  if (!driver_new_enough && !minor_compatible)
    return refuse(v, Refusal::Driver,
                  "built with CUDA " + key.backend_version + ", the driver supports CUDA " + platform::to_string(driver) +
                      "; update the NVIDIA driver");
  v.compatible = true;
  v.fit = fit.fit;
  v.rank = gpu_rank(fit.fit, arch.major, arch.minor);
  v.reason = platform::describe_cuda_fit(arch, gpu->major, gpu->minor, fit) + ": " + device;
  return v;
}

// ROCm: code objects run only on their gfx processor; the HIP runtime must be at least the
// oldest the build records (its "runtime", else the version in its key, for builds
// published before the field) and able to load its code-object version.
VariantVerdict judge_rocm(VariantVerdict v, const platform::VariantKey& key, const registry::VariantEntry& entry,
                          const HostFacts& host, const DeviceRequest& request) {
  const GpuDevice* gpu = requested_gpu(host, Backend::Rocm, request, &v);
  if (gpu == nullptr) return v;
  v.device = gpu;
  const std::string device = device_name(*gpu);
  const auto device_target = platform::parse_amd_target(gpu->arch);
  if (!device_target) return refuse(v, Refusal::GpuArch, "this GPU's arch '" + gpu->arch + "' is not a gfx processor");
  const platform::CodeFit fit = platform::amd_code_fit(*key.amd, *device_target);
  if (fit.fit == Fit::None)
    return refuse(v, Refusal::GpuArch, platform::describe_amd_fit(*key.amd, *device_target, fit) + " (" + device + ")");
  const MajorMinor runtime{host.rocm_major, host.rocm_minor};
  if (runtime == MajorMinor{})
    return refuse(v, Refusal::Runtime, "needs a HIP runtime, and none was found (libamdhip64.so.7, .6, .5): install ROCm");
  const auto recorded = platform::parse_major_minor(entry.runtime);
  const MajorMinor needed = recorded ? *recorded : key.version();
  if (!(runtime >= needed))
    return refuse(v, Refusal::Runtime,
                  "needs HIP runtime " + platform::to_string(needed) + " or newer; this machine's is " +
                      platform::to_string(runtime));
  if (entry.code_object != 0) {
    const auto oldest = platform::oldest_runtime_for_code_object(static_cast<int>(entry.code_object));
    if (!oldest)
      return refuse(v, Refusal::CodeObject,
                    "carries code-object version " + std::to_string(entry.code_object) + ", which this kh does not know; upgrade kh");
    if (!(runtime >= *oldest))
      return refuse(v, Refusal::CodeObject,
                    "carries code-object version " + std::to_string(entry.code_object) + ", which HIP runtimes load from " +
                        platform::to_string(*oldest) + "; this machine's is " + platform::to_string(runtime));
  }
  v.compatible = true;
  v.fit = fit.fit;
  v.rank = gpu_rank(fit.fit, key.amd->major, key.amd->minor);
  v.reason = platform::describe_amd_fit(*key.amd, *device_target, fit) + ": " + device + ", HIP runtime " +
             platform::to_string(runtime);
  return v;
}

VariantVerdict judge(const registry::VariantEntry& entry, const HostFacts& host, const DeviceRequest& request) {
  VariantVerdict v;
  v.entry = &entry;
  const platform::VariantKeyParse parsed = platform::parse_variant_key(entry.key);
  if (!parsed.key) return refuse(v, Refusal::BadKey, parsed.error);
  const platform::VariantKey& key = *parsed.key;
  if (key.abi_major != KH_ABI_VERSION_MAJOR)
    return refuse(v, Refusal::KernelAbi,
                  "built for kernel ABI " + std::to_string(key.abi_major) + ", this loader speaks " +
                      std::to_string(KH_ABI_VERSION_MAJOR));
  if (key.os != host.os) return refuse(v, Refusal::Os, "built for " + key.os + ", this machine runs " + host.os);
  if (key.cpu != host.cpu) return refuse(v, Refusal::Cpu, "built for " + key.cpu + " CPUs, this machine is " + host.cpu);
  // The glibc floor (recorded at pack time, carried by the index): the dynamic loader would
  // refuse the library's GLIBC_x.y symbol versions on an older glibc, so refuse it here
  // first, with a reason instead of a dlopen error.
  if (!entry.glibc.empty()) {
    const std::string host_glibc = version_text(host.glibc_major, host.glibc_minor);
    const auto floor = platform::parse_glibc_version(entry.glibc);
    if (!floor) return refuse(v, Refusal::Glibc, "records an unreadable glibc floor '" + entry.glibc + "'");
    const auto have = platform::parse_glibc_version(host_glibc);
    if (have && platform::compare(*floor, *have) > 0)
      return refuse(v, Refusal::Glibc, "needs glibc " + entry.glibc + ", this machine has " + host_glibc);
  }
  switch (key.backend) {
    case Backend::Cpu: {
      const int level = key.x86_level;
      if (level > host.x86_isa_level)
        return refuse(v, Refusal::IsaLevel,
                      "needs ISA level x86-64-v" + std::to_string(level) + ", this CPU supports v" +
                          std::to_string(host.x86_isa_level));
      v.compatible = true;
      v.rank = level;
      v.reason = "CPU build for " + key.arch +
                 (host.x86_isa_level ? " (this CPU supports x86-64-v" + std::to_string(host.x86_isa_level) + ")" : "");
      return v;
    }
    case Backend::Cuda: return judge_cuda(v, key, host, request);
    case Backend::Rocm: return judge_rocm(v, key, entry, host, request);
  }
  return refuse(v, Refusal::BadKey, "unknown backend");
}

}  // namespace

const char* refusal_name(Refusal refusal) {
  switch (refusal) {
    case Refusal::None: return "none";
    case Refusal::BadKey: return "bad-key";
    case Refusal::KernelAbi: return "kernel-abi";
    case Refusal::Os: return "os";
    case Refusal::Cpu: return "cpu";
    case Refusal::Glibc: return "glibc";
    case Refusal::IsaLevel: return "isa-level";
    case Refusal::NoDevice: return "no-device";
    case Refusal::OtherBackend: return "other-backend";
    case Refusal::GpuArch: return "gpu-arch";
    case Refusal::Driver: return "driver";
    case Refusal::Runtime: return "runtime";
    case Refusal::CodeObject: return "code-object";
  }
  return "?";
}

std::string describe(const DeviceRequest& request) {
  const auto backend = platform::backend_of_device_type(request.device_type);
  if (request.device_type == 0 || !backend) return "device " + std::to_string(request.device_id);
  return std::string(*backend == Backend::Cuda ? "CUDA" : *backend == Backend::Rocm ? "ROCm" : "CPU") + " device " +
         std::to_string(request.device_id);
}

std::optional<DeviceRequest> parse_device_request(std::string_view text) {
  DeviceRequest request;
  const size_t colon = text.find(':');
  if (colon != std::string_view::npos) {
    const auto backend = platform::parse_backend(text.substr(0, colon));
    if (!backend || *backend == Backend::Cpu) return std::nullopt;
    request.device_type = platform::dlpack_device_type(*backend);
    text.remove_prefix(colon + 1);
  }
  if (text.empty() || text.size() > 4) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    request.device_id = request.device_id * 10 + (c - '0');
  }
  return request;
}

void check_device_request(const HostFacts& host, const DeviceRequest& request) {
  const auto backend = platform::backend_of_device_type(request.device_type);
  if (request.device_type != 0 && (!backend || *backend == Backend::Cpu))
    fail(KH_ERROR_INVALID_ARGUMENT, "device type " + std::to_string(request.device_type) +
                                        " is not a GPU kh builds for: use 2 (kDLCUDA), 10 (kDLROCM) or 0 (any)");
  if (request.device_id < 0) fail(KH_ERROR_INVALID_ARGUMENT, "device id " + std::to_string(request.device_id) + " is negative");
  if (request.device_id == 0) return;  // the first GPU, or none: CPU builds then
  const int cuda = host.gpu_count(Backend::Cuda), rocm = host.gpu_count(Backend::Rocm);
  const bool exists = request.device_type == 0 ? request.device_id < std::max(cuda, rocm)
                                               : request.device_id < (*backend == Backend::Cuda ? cuda : rocm);
  if (!exists)
    fail(KH_ERROR_INVALID_ARGUMENT, "no " + describe(request) + " on this machine: it has " + std::to_string(cuda) +
                                        " CUDA and " + std::to_string(rocm) + " ROCm device(s); `kernels doctor` lists them");
}

VariantSelection select_variant(const std::vector<registry::VariantEntry>& variants, const HostFacts& host,
                                const DeviceRequest& device) {
  VariantSelection selection;
  for (const auto& entry : variants) selection.verdicts.push_back(judge(entry, host, device));
  std::stable_sort(selection.verdicts.begin(), selection.verdicts.end(), [](const VariantVerdict& a, const VariantVerdict& b) {
    if (a.compatible != b.compatible) return a.compatible;
    return a.rank > b.rank;
  });
  if (!selection.verdicts.empty() && selection.verdicts.front().compatible)
    selection.chosen = selection.verdicts.front().entry;
  return selection;
}

install::BuildSelection select_build(const std::vector<registry::VariantEntry>& variants, const HostFacts& host,
                                     const DeviceRequest& device, const std::string& forced_key) {
  install::BuildSelection out;
  out.machine = host.cpu + "-" + host.os + (device == DeviceRequest{} ? std::string() : ", " + describe(device));
  if (forced_key.empty()) check_device_request(host, device);
  const VariantSelection selection = select_variant(variants, host, device);
  for (const VariantVerdict& v : selection.verdicts) {
    install::BuildVerdict b;
    b.key = v.entry->key;
    b.fits = v.compatible;
    b.rank = v.rank;
    if (v.compatible && v.fit != platform::Fit::None) b.fit = platform::fit_name(v.fit);
    if (!v.compatible) b.refusal = refusal_name(v.refusal);
    if (v.device != nullptr) b.device = std::string(platform::backend_name(v.device->backend)) + ":" +
                                        std::to_string(v.device->index);
    b.reason = v.reason;
    out.verdicts.push_back(std::move(b));
  }
  if (!forced_key.empty()) {
    out.chosen = forced_key;
    out.forced = true;
  } else if (selection.chosen != nullptr) {
    out.chosen = selection.chosen->key;
  }
  return out;
}

const registry::VariantEntry& choose_variant(const std::vector<registry::VariantEntry>& variants, const HostFacts& host,
                                             const DeviceRequest& device, const std::string& forced_key,
                                             const std::string& what) {
  return install::chosen_build(select_build(variants, host, device, forced_key), variants, what);
}

}  // namespace kh::loader
