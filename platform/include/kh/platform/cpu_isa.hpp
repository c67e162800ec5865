// CPU builds: the ISA level a build needs, as variant keys spell it ("x86_64",
// "x86_64_v2".."x86_64_v4" for the psABI's x86-64 micro-architecture levels; "aarch64").
#pragma once

#include <string>
#include <string_view>

namespace kh::platform {

// "x86_64" -> 1, "x86_64_v2" -> 2, .. "x86_64_v4" -> 4; 0 when not an x86-64 level name.
int x86_isa_level(std::string_view arch);
// The key's spelling of a level: 1 -> "x86_64", 3 -> "x86_64_v3".
std::string x86_isa_name(int level);
// The compiler flag that builds for a level: 1 -> "-march=x86-64", 3 -> "-march=x86-64-v3".
std::string x86_march_flag(int level);
constexpr int kMaxX86IsaLevel = 4;

// Whether `arch` names the ISA of a CPU build for `cpu` ("x86_64" + level name, or the CPU
// name itself for CPUs without levels, e.g. "aarch64").
bool is_cpu_isa_for(std::string_view arch, std::string_view cpu);

}  // namespace kh::platform
