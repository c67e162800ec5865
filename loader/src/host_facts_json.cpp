// Host facts <-> JSON; see host_facts_json.hpp.
#include "kh/loader/host_facts_json.hpp"

#include "kh/platform/gpu_arch.hpp"
#include "kh/platform/versions.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::loader {
namespace {

std::string version_text(int major, int minor) { return std::to_string(major) + "." + std::to_string(minor); }

// Reads "major.minor" at doc[field] into *major, *minor; absent leaves them 0.
void read_version(const nlohmann::json& doc, const char* field, const std::string& source, int* major, int* minor) {
  auto it = doc.find(field);
  if (it == doc.end()) return;
  const auto v = it->is_string() ? platform::parse_major_minor(it->get<std::string>()) : std::nullopt;
  if (!v) fail(KH_ERROR_INVALID_ARGUMENT, source + ": \"" + field + "\" must be a \"major.minor\" string");
  *major = v->major;
  *minor = v->minor;
}

std::string string_or(const nlohmann::json& doc, const char* field, const std::string& fallback) {
  auto it = doc.find(field);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace

nlohmann::json host_facts_json(const HostFacts& f) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : f.gpus)
    gpus.push_back({{"backend", platform::backend_name(g.backend)}, {"index", g.index}, {"name", g.name}, {"arch", g.arch}});
  return {{"cpu", f.cpu},
          {"os", f.os},
          {"x86_isa_level", f.x86_isa_level},
          {"glibc", version_text(f.glibc_major, f.glibc_minor)},
          {"cuda_driver", version_text(f.cuda_driver_major, f.cuda_driver_minor)},
          {"cuda_status", f.cuda_status},
          {"rocm", version_text(f.rocm_major, f.rocm_minor)},
          {"rocm_status", f.rocm_status},
          {"gpus", gpus}};
}

HostFacts host_facts_from_json(const nlohmann::json& doc, const std::string& source) {
  if (!doc.is_object()) fail(KH_ERROR_INVALID_ARGUMENT, source + ": expected a JSON object describing a machine");
  HostFacts f;
  f.cpu = string_or(doc, "cpu", "x86_64");
  f.os = string_or(doc, "os", "linux");
  if (auto it = doc.find("x86_isa_level"); it != doc.end()) {
    if (!it->is_number_integer()) fail(KH_ERROR_INVALID_ARGUMENT, source + ": \"x86_isa_level\" must be an integer");
    f.x86_isa_level = it->get<int>();
  }
  read_version(doc, "glibc", source, &f.glibc_major, &f.glibc_minor);
  read_version(doc, "cuda_driver", source, &f.cuda_driver_major, &f.cuda_driver_minor);
  read_version(doc, "rocm", source, &f.rocm_major, &f.rocm_minor);
  if (auto it = doc.find("gpus"); it != doc.end()) {
    if (!it->is_array()) fail(KH_ERROR_INVALID_ARGUMENT, source + ": \"gpus\" must be an array");
    for (const auto& g : *it) {
      const std::string where = source + ": gpus[" + std::to_string(f.gpus.size()) + "]";
      if (!g.is_object()) fail(KH_ERROR_INVALID_ARGUMENT, where + ": expected an object");
      GpuDevice d;
      const auto backend = platform::parse_backend(string_or(g, "backend", ""));
      if (!backend || *backend == platform::Backend::Cpu)
        fail(KH_ERROR_INVALID_ARGUMENT, where + ": \"backend\" must be \"cuda\" or \"rocm\"");
      d.backend = *backend;
      d.index = f.gpu_count(d.backend);
      if (auto idx = g.find("index"); idx != g.end() && (!idx->is_number_integer() || idx->get<int>() != d.index))
        fail(KH_ERROR_INVALID_ARGUMENT, where + ": \"index\" must count the GPUs of its backend from 0, in order");
      d.name = string_or(g, "name", "");
      d.arch = string_or(g, "arch", "");
      if (d.backend == platform::Backend::Cuda) {
        const auto arch = platform::parse_cuda_arch(d.arch);
        if (!arch || arch->kind != platform::CudaArch::Kind::Plain)
          fail(KH_ERROR_INVALID_ARGUMENT, where + ": \"arch\" must be a device's compute capability such as sm90");
        d.major = arch->major;
        d.minor = arch->minor;
      } else {
        const auto target = platform::parse_amd_target(d.arch);
        if (!target) fail(KH_ERROR_INVALID_ARGUMENT, where + ": \"arch\" must be a gfx processor such as gfx942");
        d.major = target->major;
        d.minor = target->minor;
      }
      f.gpus.push_back(std::move(d));
    }
  }
  const int cuda = f.gpu_count(platform::Backend::Cuda), rocm = f.gpu_count(platform::Backend::Rocm);
  f.cuda_status = string_or(doc, "cuda_status", cuda ? std::to_string(cuda) + " CUDA device(s), driver supports CUDA " +
                                                           version_text(f.cuda_driver_major, f.cuda_driver_minor)
                                                     : "no CUDA driver (described machine)");
  f.rocm_status = string_or(doc, "rocm_status", rocm ? std::to_string(rocm) + " ROCm GPU(s), HIP runtime " +
                                                           version_text(f.rocm_major, f.rocm_minor)
                                                     : "no ROCm kernel driver (described machine)");
  return f;
}

}  // namespace kh::loader
