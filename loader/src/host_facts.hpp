// What this machine is, as variant selection needs it. Detection never crashes or hangs:
// a missing driver or device yields facts that say so.
#pragma once

#include <string>

namespace kh::loader {

struct HostFacts {
  std::string cpu;        // "x86_64", "aarch64"
  std::string os;         // "linux"
  int x86_isa_level = 0;  // 1 (baseline) .. 4 (x86-64-v4); 0 on other CPUs
};

// Detected once per process and cached.
const HostFacts& host_facts();

}  // namespace kh::loader
