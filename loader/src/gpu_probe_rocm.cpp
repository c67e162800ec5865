// The ROCm probe. GPU targets come from the kernel driver's KFD topology in sysfs
// (gfx_target_version 90402 -> gfx942), which needs no library and no struct layouts that
// change between HIP releases; the HIP runtime version comes from libamdhip64 via dlopen.
#include <dirent.h>
#include <dlfcn.h>

#include <fstream>
#include <sstream>
#include <string>

#include "host_facts.hpp"

namespace kh::loader {
namespace {

// "gfx" + major + minor + stepping, minor and stepping in hex as LLVM spells targets.
std::string gfx_name(long version) {
  static const char kHex[] = "0123456789abcdef";
  const long major = version / 10000, minor = (version / 100) % 100, stepping = version % 100;
  std::string name = "gfx" + std::to_string(major);
  name += kHex[minor & 15];
  name += kHex[stepping & 15];
  return name;
}

void probe_hip_runtime(HostFacts* facts) {
  for (const char* soname : {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"}) {
    void* h = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) continue;
    using GetVersion = int (*)(int*);
    auto get_version = reinterpret_cast<GetVersion>(::dlsym(h, "hipRuntimeGetVersion"));
    int v = 0;
    // HIP encodes major * 10000000 + minor * 100000 + patch.
    if (get_version != nullptr && get_version(&v) == 0 && v > 0) {
      facts->rocm_major = v / 10000000;
      facts->rocm_minor = (v / 100000) % 100;
    }
    ::dlclose(h);
    return;
  }
}

}  // namespace

void probe_rocm(HostFacts* facts, const std::string& topology_dir) {
  DIR* dir = ::opendir(topology_dir.c_str());
  if (dir == nullptr) {
    facts->rocm_status = "no ROCm kernel driver (no KFD topology)";
    return;
  }
  int index = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream props(topology_dir + "/" + e->d_name + "/properties");
    std::string line;
    long target = 0;
    while (std::getline(props, line)) {
      std::istringstream fields(line);
      std::string key;
      long value = 0;
      if (fields >> key >> value && key == "gfx_target_version") target = value;
    }
    if (target == 0) continue;  // CPU nodes report 0
    GpuDevice g;
    g.backend = "rocm";
    g.index = index++;
    g.arch = gfx_name(target);
    g.major = static_cast<int>(target / 10000);
    g.minor = static_cast<int>((target / 100) % 100);
    std::ifstream name_file(topology_dir + "/" + e->d_name + "/name");
    std::getline(name_file, g.name);
    facts->gpus.push_back(g);
  }
  ::closedir(dir);
  if (index == 0) {
    facts->rocm_status = "ROCm kernel driver present, no GPU";
    return;
  }
  probe_hip_runtime(facts);
  facts->rocm_status = std::to_string(index) + " ROCm GPU(s)" +
                       (facts->rocm_major ? ", HIP runtime " + std::to_string(facts->rocm_major) + "." +
                                                std::to_string(facts->rocm_minor)
                                          : std::string(", no HIP runtime (libamdhip64) found"));
}

}  // namespace kh::loader
