// See explain.hpp.
#include "explain.hpp"

#include <cstdio>

namespace kh::cli {

void print_host_facts(const loader::HostFacts& f) {
  std::printf("This machine\n");
  std::printf("  cpu:   %s%s, %s, glibc %d.%d\n", f.cpu.c_str(),
              f.x86_isa_level ? (" (x86-64-v" + std::to_string(f.x86_isa_level) + ")").c_str() : "", f.os.c_str(),
              f.glibc_major, f.glibc_minor);
  std::printf("  cuda:  %s\n", f.cuda_status.c_str());
  std::printf("  rocm:  %s\n", f.rocm_status.c_str());
  for (const auto& g : f.gpus)
    std::printf("  gpu:   %s device %d: %s (%s)\n", platform::backend_name(g.backend), g.index, g.name.c_str(),
                g.arch.c_str());
}

std::vector<loader::DeviceRequest> every_device(const loader::HostFacts& facts) {
  std::vector<loader::DeviceRequest> requests;
  for (const auto& g : facts.gpus) requests.push_back({platform::dlpack_device_type(g.backend), g.index});
  if (requests.empty()) requests.push_back({});
  return requests;
}

std::string device_title(const loader::HostFacts& facts, const loader::DeviceRequest& request) {
  const auto backend = platform::backend_of_device_type(request.device_type);
  const loader::GpuDevice* gpu = backend ? facts.gpu(*backend, request.device_id) : nullptr;
  if (gpu == nullptr) {
    if (facts.gpus.empty()) return loader::describe(request) + " (no GPU: CPU builds only)";
    return loader::describe(request);
  }
  return std::string(platform::backend_name(gpu->backend)) + " device " + std::to_string(gpu->index) + " (" +
         (gpu->name.empty() ? "GPU" : gpu->name) + ", " + gpu->arch + ")";
}

nlohmann::json selection_json(const install::BuildSelection& selection) {
  nlohmann::json builds = nlohmann::json::array();
  for (const auto& v : selection.verdicts) {
    nlohmann::json b = {{"variant", v.key},
                        {"chosen", v.key == selection.chosen},
                        {"compatible", v.fits},
                        {"rank", v.rank},
                        {"reason", v.reason}};
    if (!v.fit.empty()) b["fit"] = v.fit;
    if (!v.refusal.empty()) b["refusal"] = v.refusal;
    if (!v.device.empty()) b["device"] = v.device;
    builds.push_back(std::move(b));
  }
  nlohmann::json out = {{"chosen", selection.chosen.empty() ? nlohmann::json(nullptr) : nlohmann::json(selection.chosen)},
                        {"builds", builds}};
  if (selection.forced) out["forced"] = true;
  return out;
}

void print_selection(const std::string& title, const install::BuildSelection& selection, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  std::printf("%s%s\n", pad.c_str(), title.c_str());
  if (selection.chosen.empty()) std::printf("%s  no build fits\n", pad.c_str());
  if (selection.forced) std::printf("%s  forced   %s (--target / KH_TARGET: taken as asked)\n", pad.c_str(),
                                    selection.chosen.c_str());
  for (const auto& v : selection.verdicts) {
    if (selection.forced && v.key == selection.chosen) continue;
    const char* label = v.key == selection.chosen ? "chosen  " : v.fits ? "fallback" : "refused ";
    std::printf("%s  %s %s: %s\n", pad.c_str(), label, v.key.c_str(), v.reason.c_str());
  }
}

}  // namespace kh::cli
