// Variant selection; see variant_select.hpp. A build must match the loader's kernel ABI,
// the OS and CPU, and have a glibc floor the host meets; then GPU builds are ranked above
// CPU builds, and among CPU builds the highest ISA level the host supports wins.
#include "variant_select.hpp"

#include <algorithm>
#include <cstdio>

#include "kh/kernel_abi.h"
#include "kh/registry/status_error.hpp"
#include "variant_key.hpp"

namespace kh::loader {
namespace {

// "x86_64" -> 1, "x86_64_v2" -> 2, ... ; 0 if not an x86-64 ISA level name.
int x86_isa_level_of(const std::string& arch) {
  if (arch == "x86_64") return 1;
  if (arch.size() == 9 && arch.compare(0, 8, "x86_64_v") == 0 && arch[8] >= '2' && arch[8] <= '4') return arch[8] - '0';
  return 0;
}

// Ranks: a build made for exactly this GPU beats same-major SASS, which beats JIT from
// PTX, which beats any CPU build (whose rank is its ISA level, 1-4).
constexpr int kRankExactGpu = 300;
constexpr int kRankSameMajorSass = 200;
constexpr int kRankPtxJit = 100;

bool parse_major_minor(const std::string& text, int* major, int* minor) {
  return std::sscanf(text.c_str(), "%d.%d", major, minor) == 2;
}

std::string version_text(int major, int minor) { return std::to_string(major) + "." + std::to_string(minor); }

// "sm90a" -> 9, 0, true; "sm80" -> 8, 0, false; "sm120" -> 12, 0, false.
bool parse_sm(const std::string& arch, int* major, int* minor, bool* arch_specific) {
  if (arch.size() < 4 || arch.compare(0, 2, "sm") != 0) return false;
  std::string digits = arch.substr(2);
  *arch_specific = !digits.empty() && digits.back() == 'a';
  if (*arch_specific) digits.pop_back();
  if (digits.size() < 2) return false;
  for (char c : digits)
    if (c < '0' || c > '9') return false;
  *major = std::stoi(digits.substr(0, digits.size() - 1));
  *minor = digits.back() - '0';
  return true;
}

// CUDA: the driver must support the toolkit the build used; SASS for smXY runs on major X
// with minor >= Y; "a" builds run on exactly their arch; PTX (which our non-"a" builds
// embed, see build-matrix/matrix.json) JIT-compiles on any newer arch.
VariantVerdict judge_cuda(VariantVerdict v, const VariantKey& key, const HostFacts& host) {
  const GpuDevice* gpu = host.first_gpu("cuda");
  if (gpu == nullptr) {
    v.reason = "a CUDA build; " + host.cuda_status;
    return v;
  }
  int tk_major = 0, tk_minor = 0, sm_major = 0, sm_minor = 0;
  bool arch_specific = false;
  if (!parse_major_minor(key.backend_version, &tk_major, &tk_minor) ||
      !parse_sm(key.arch, &sm_major, &sm_minor, &arch_specific)) {
    v.reason = "unrecognised CUDA version or arch in the key";
    return v;
  }
  const bool driver_new_enough = host.cuda_driver_major > tk_major ||
                                 (host.cuda_driver_major == tk_major && host.cuda_driver_minor >= tk_minor);
  // CUDA minor-version compatibility lets an older driver of the same major run SASS, not PTX.
  const bool minor_compatible = host.cuda_driver_major == tk_major;
  const std::string device = gpu->name + " (" + gpu->arch + ")";
  if (arch_specific) {
    if (gpu->major != sm_major || gpu->minor != sm_minor) {
      v.reason = key.arch + " code runs only on compute capability " + version_text(sm_major, sm_minor) + ", this GPU is " + device;
      return v;
    }
    if (!driver_new_enough && !minor_compatible) {
      v.reason = "built with CUDA " + key.backend_version + ", the driver supports CUDA " +
                 version_text(host.cuda_driver_major, host.cuda_driver_minor) + "; update the NVIDIA driver";
      return v;
    }
    v.compatible = true;
    v.rank = kRankExactGpu + sm_major * 10 + sm_minor;
    v.reason = "exact arch " + key.arch + " for " + device;
    return v;
  }
  const bool sass_runs = gpu->major == sm_major && gpu->minor >= sm_minor;
  const bool ptx_runs = gpu->major > sm_major || (gpu->major == sm_major && gpu->minor >= sm_minor);
  if (sass_runs && (driver_new_enough || minor_compatible)) {
    v.compatible = true;
    v.rank = (gpu->minor == sm_minor ? kRankExactGpu : kRankSameMajorSass) + sm_major * 10 + sm_minor;
    v.reason = (gpu->minor == sm_minor ? "exact arch " : "same-major SASS ") + key.arch + " for " + device;
    return v;
  }
  if (ptx_runs) {
    if (!driver_new_enough) {
      v.reason = "would JIT its PTX on " + device + ", which needs a driver for CUDA " + key.backend_version +
                 " or newer; this driver supports " + version_text(host.cuda_driver_major, host.cuda_driver_minor);
      return v;
    }
    v.compatible = true;
    v.rank = kRankPtxJit + sm_major * 10 + sm_minor;
    v.reason = "runs on " + device + " through its compute_" + std::to_string(sm_major) + std::to_string(sm_minor) +
               " PTX (JIT-compiled at first load)";
    return v;
  }
  v.reason = key.arch + " code needs compute capability " + version_text(sm_major, sm_minor) + " or newer; this GPU is " + device;
  return v;
}

// ROCm: code objects run only on their exact gfx target; the HIP runtime must be at least
// the version the build used.
VariantVerdict judge_rocm(VariantVerdict v, const VariantKey& key, const HostFacts& host) {
  const GpuDevice* gpu = host.first_gpu("rocm");
  if (gpu == nullptr) {
    v.reason = "a ROCm build; " + host.rocm_status;
    return v;
  }
  if (gpu->arch != key.arch) {
    v.reason = key.arch + " code objects run only on " + key.arch + "; this GPU is " + gpu->arch;
    return v;
  }
  int major = 0, minor = 0;
  if (!parse_major_minor(key.backend_version, &major, &minor)) {
    v.reason = "unrecognised ROCm version in the key";
    return v;
  }
  if (host.rocm_major < major || (host.rocm_major == major && host.rocm_minor < minor)) {
    v.reason = "built with ROCm " + key.backend_version + ", this machine's HIP runtime is " +
               version_text(host.rocm_major, host.rocm_minor);
    return v;
  }
  v.compatible = true;
  v.rank = kRankExactGpu;
  v.reason = "exact arch " + key.arch + " for " + gpu->name;
  return v;
}

VariantVerdict judge(const registry::VariantEntry& entry, const HostFacts& host) {
  VariantVerdict v;
  v.entry = &entry;
  const auto key = parse_variant_key(entry.key);
  if (!key) {
    v.reason = "not a well-formed variant key";
    return v;
  }
  if (key->abi_major != KH_ABI_VERSION_MAJOR) {
    v.reason = "built for kernel ABI " + std::to_string(key->abi_major) + ", this loader speaks " +
               std::to_string(KH_ABI_VERSION_MAJOR);
    return v;
  }
  if (key->os != host.os) {
    v.reason = "built for " + key->os + ", this machine runs " + host.os;
    return v;
  }
  if (key->cpu != host.cpu) {
    v.reason = "built for " + key->cpu + " CPUs, this machine is " + host.cpu;
    return v;
  }
  // The glibc floor (recorded at pack time, carried by the index): the dynamic loader would
  // refuse the library's GLIBC_x.y symbol versions on an older glibc, so refuse it here
  // first, with a reason instead of a dlopen error.
  if (!entry.glibc.empty()) {
    const std::string host_glibc = version_text(host.glibc_major, host.glibc_minor);
    if (!registry::is_glibc_version(entry.glibc)) {
      v.reason = "records an unreadable glibc floor '" + entry.glibc + "'";
      return v;
    }
    if (registry::compare_glibc_versions(entry.glibc, host_glibc) > 0) {
      v.reason = "needs glibc " + entry.glibc + ", this machine has " + host_glibc;
      return v;
    }
  }
  if (key->backend == "cpu") {
    const int level = x86_isa_level_of(key->arch);
    if (host.cpu == "x86_64" && level == 0) {
      v.reason = "unknown x86-64 ISA level '" + key->arch + "'";
      return v;
    }
    if (level > host.x86_isa_level) {
      v.reason = "needs ISA level x86-64-v" + std::to_string(level) + ", this CPU supports v" +
                 std::to_string(host.x86_isa_level);
      return v;
    }
    v.compatible = true;
    v.rank = level;
    v.reason = "CPU build for " + key->arch + " (this CPU supports x86-64-v" + std::to_string(host.x86_isa_level) + ")";
    return v;
  }
  if (key->backend == "cuda") return judge_cuda(v, *key, host);
  if (key->backend == "rocm") return judge_rocm(v, *key, host);
  v.reason = "unknown backend '" + key->backend + "'";
  return v;
}

std::string list_verdicts(const VariantSelection& selection) {
  std::string out;
  for (const auto& v : selection.verdicts) out += "\n  " + v.entry->key + ": " + v.reason;
  return out;
}

}  // namespace

VariantSelection select_variant(const std::vector<registry::VariantEntry>& variants, const HostFacts& host) {
  VariantSelection selection;
  for (const auto& entry : variants) selection.verdicts.push_back(judge(entry, host));
  std::stable_sort(selection.verdicts.begin(), selection.verdicts.end(), [](const VariantVerdict& a, const VariantVerdict& b) {
    if (a.compatible != b.compatible) return a.compatible;
    return a.rank > b.rank;
  });
  if (!selection.verdicts.empty() && selection.verdicts.front().compatible)
    selection.chosen = selection.verdicts.front().entry;
  return selection;
}

const registry::VariantEntry& choose_variant(const std::vector<registry::VariantEntry>& variants, const HostFacts& host,
                                             const std::string& forced_key, const std::string& what) {
  if (!forced_key.empty()) {
    for (const auto& entry : variants)
      if (entry.key == forced_key) return entry;
    std::string offered;
    for (const auto& entry : variants) offered += "\n  " + entry.key;
    fail(KH_ERROR_NOT_FOUND, what + " has no build '" + forced_key + "'; it offers:" + offered);
  }
  const VariantSelection selection = select_variant(variants, host);
  if (selection.chosen == nullptr)
    fail(KH_ERROR_NO_COMPATIBLE_VARIANT,
         what + " has no build for this machine (" + host.cpu + "-" + host.os + "); builds offered:" +
             (selection.verdicts.empty() ? std::string(" none") : list_verdicts(selection)));
  return *selection.chosen;
}

}  // namespace kh::loader
