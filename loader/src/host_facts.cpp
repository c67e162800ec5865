// CPU and glibc detection; see host_facts.hpp. GPU probes live in gpu_probe_*.cpp.
#include "host_facts.hpp"

#include <gnu/libc-version.h>
#include <sys/utsname.h>

#include <cstdio>

namespace kh::loader {
namespace {

int detect_x86_isa_level() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  // The psABI's x86-64 micro-architecture levels, by the features each adds.
  const bool v2 = __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("sse4.2") &&
                  __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("sse4.1");
  const bool v3 = v2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
                  __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
  return v4 ? 4 : v3 ? 3 : v2 ? 2 : 1;
#else
  return 0;
#endif
}

HostFacts detect() {
  HostFacts facts;
  struct utsname u {};
  facts.cpu = ::uname(&u) == 0 ? u.machine : "unknown";
  facts.os = "linux";
  facts.x86_isa_level = facts.cpu == "x86_64" ? detect_x86_isa_level() : 0;
  std::sscanf(gnu_get_libc_version(), "%d.%d", &facts.glibc_major, &facts.glibc_minor);
  probe_cuda(&facts);
  probe_rocm(&facts);
  return facts;
}

}  // namespace

const HostFacts& host_facts() {
  static const HostFacts facts = detect();
  return facts;
}

}  // namespace kh::loader
