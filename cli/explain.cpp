// See explain.hpp.
#include "explain.hpp"

#include <cstdio>

namespace kh::cli {

nlohmann::json host_facts_json(const loader::HostFacts& f) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : f.gpus)
    gpus.push_back({{"backend", g.backend}, {"index", g.index}, {"name", g.name}, {"arch", g.arch}});
  return {{"cpu", f.cpu},
          {"os", f.os},
          {"x86_isa_level", f.x86_isa_level},
          {"glibc", std::to_string(f.glibc_major) + "." + std::to_string(f.glibc_minor)},
          {"cuda_driver", std::to_string(f.cuda_driver_major) + "." + std::to_string(f.cuda_driver_minor)},
          {"cuda_status", f.cuda_status},
          {"rocm", std::to_string(f.rocm_major) + "." + std::to_string(f.rocm_minor)},
          {"rocm_status", f.rocm_status},
          {"gpus", gpus}};
}

void print_host_facts(const loader::HostFacts& f) {
  std::printf("This machine\n");
  std::printf("  cpu:   %s%s, %s, glibc %d.%d\n", f.cpu.c_str(),
              f.x86_isa_level ? (" (x86-64-v" + std::to_string(f.x86_isa_level) + ")").c_str() : "", f.os.c_str(),
              f.glibc_major, f.glibc_minor);
  std::printf("  cuda:  %s\n", f.cuda_status.c_str());
  std::printf("  rocm:  %s\n", f.rocm_status.c_str());
  for (const auto& g : f.gpus)
    std::printf("  gpu %d: %s %s (%s)\n", g.index, g.backend.c_str(), g.name.c_str(), g.arch.c_str());
}

nlohmann::json selection_json(const loader::VariantSelection& selection) {
  nlohmann::json builds = nlohmann::json::array();
  for (const auto& v : selection.verdicts)
    builds.push_back({{"variant", v.entry->key},
                      {"chosen", v.entry == selection.chosen},
                      {"compatible", v.compatible},
                      {"rank", v.rank},
                      {"reason", v.reason}});
  return {{"chosen", selection.chosen ? nlohmann::json(selection.chosen->key) : nlohmann::json(nullptr)},
          {"builds", builds}};
}

void print_selection(const std::string& title, const loader::VariantSelection& selection) {
  std::printf("%s\n", title.c_str());
  if (selection.chosen == nullptr) std::printf("  no build fits this machine\n");
  for (const auto& v : selection.verdicts) {
    const char* label = v.entry == selection.chosen ? "chosen  " : v.compatible ? "fallback" : "refused ";
    std::printf("  %s %s: %s\n", label, v.entry->key.c_str(), v.reason.c_str());
  }
}

}  // namespace kh::cli
