// CPU ISA levels; see cpu_isa.hpp.
#include "kh/platform/cpu_isa.hpp"

namespace kh::platform {

int x86_isa_level(std::string_view arch) {
  if (arch == "x86_64") return 1;
  if (arch.size() == 9 && arch.substr(0, 8) == "x86_64_v" && arch[8] >= '2' && arch[8] <= '0' + kMaxX86IsaLevel)
    return arch[8] - '0';
  return 0;
}

std::string x86_isa_name(int level) { return level <= 1 ? "x86_64" : "x86_64_v" + std::to_string(level); }

std::string x86_march_flag(int level) {
  return level <= 1 ? "-march=x86-64" : "-march=x86-64-v" + std::to_string(level);
}

bool is_cpu_isa_for(std::string_view arch, std::string_view cpu) {
  if (cpu == "x86_64") return x86_isa_level(arch) > 0;
  return arch == cpu;
}

}  // namespace kh::platform
