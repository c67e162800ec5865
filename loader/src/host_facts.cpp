// CPU and glibc detection; see host_facts.hpp. GPU probes live in gpu_probe_*.cpp.
#include "kh/loader/host_facts.hpp"

#include <gnu/libc-version.h>
#include <sys/utsname.h>

#include <cstdio>
#include <cstdlib>

#ifdef KH_TEST_HOOKS
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "kh/loader/host_facts_json.hpp"
#include "kh/registry/status_error.hpp"
#endif

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

#ifdef KH_TEST_HOOKS
// A machine described by a test (KH_TEST_HOST_FACTS=<json file>). Kept per file content
// for the life of the process, so references handed out stay valid when a test switches
// machines; tests describe a handful.
const HostFacts* described_machine() {
  const char* path = std::getenv("KH_TEST_HOST_FACTS");
  if (path == nullptr || *path == '\0') return nullptr;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) fail(KH_ERROR_INVALID_ARGUMENT, std::string("KH_TEST_HOST_FACTS=") + path + ": cannot read the file");
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<HostFacts>> machines;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = machines[text.str()];
  if (!slot) {
    const auto doc = nlohmann::json::parse(text.str(), nullptr, false);
    slot = std::make_unique<HostFacts>(host_facts_from_json(doc, std::string("KH_TEST_HOST_FACTS=") + path));
  }
  return slot.get();
}
#endif

}  // namespace

const HostFacts& host_facts() {
#ifdef KH_TEST_HOOKS
  if (const HostFacts* described = described_machine()) return *described;
#endif
  static const HostFacts facts = detect();
  return facts;
}

}  // namespace kh::loader
