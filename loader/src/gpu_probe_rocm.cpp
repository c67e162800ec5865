// The ROCm probe. GPU targets come from the kernel driver's KFD topology in sysfs
// (gfx_target_version 90402 -> gfx942), which needs no library and no struct layouts that
// change between HIP releases; the HIP runtime version comes from libamdhip64 via dlopen,
// tried under the same sonames the kernel libraries' HIP shim opens.
#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kh/loader/host_facts.hpp"
#include "kh/platform/gpu_arch.hpp"
#include "kh/platform/rocm_runtime.hpp"

namespace kh::loader {
namespace {

void probe_hip_runtime(HostFacts* facts) {
  for (const char* soname : platform::kHipRuntimeSonames) {
    void* h = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      ::dlerror();  // read (and so release) the failure's message
      continue;
    }
    using GetVersion = int (*)(int*);
    auto get_version = reinterpret_cast<GetVersion>(::dlsym(h, "hipRuntimeGetVersion"));
    int v = 0;
    // HIP encodes major * 10000000 + minor * 100000 + patch.
    if (get_version != nullptr && get_version(&v) == 0 && v > 0) {
      facts->rocm_major = v / 10000000;
      facts->rocm_minor = (v / 100000) % 100;
    }
    // Left loaded: ROCm does not support unloading its runtime (Debian's HIP 5.2 leaks what it
    // set up when loaded a second time), and the kernel libraries' HIP shim opens the same one.
    return;
  }
}

// Node folders of the topology in numeric order (readdir's order is the filesystem's), which
// is the order the HIP runtime numbers its devices in.
std::vector<long> topology_nodes(DIR* dir) {
  std::vector<long> nodes;
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long n = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0') nodes.push_back(n);
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

}  // namespace

bool apply_visible_rocm_devices(std::vector<GpuDevice>* gpus) {
  for (const char* name : {"ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    std::vector<GpuDevice> kept;
    std::stringstream list(value);
    for (std::string item; std::getline(list, item, ',');) {
      char* end = nullptr;
      const long i = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0') return false;
      if (i >= 0 && static_cast<size_t>(i) < gpus->size()) kept.push_back((*gpus)[static_cast<size_t>(i)]);
      else break;  // the runtime stops at the first ordinal that does not exist
    }
    for (size_t k = 0; k < kept.size(); ++k) kept[k].index = static_cast<int>(k);
    *gpus = std::move(kept);
  }
  return true;
}

void probe_rocm(HostFacts* facts, const std::string& topology_dir) {
  DIR* dir = ::opendir(topology_dir.c_str());
  if (dir == nullptr) {
    facts->rocm_status = "no ROCm kernel driver (no KFD topology)";
    return;
  }
  const std::vector<long> nodes = topology_nodes(dir);
  ::closedir(dir);
  std::vector<GpuDevice> gpus;
  for (long node : nodes) {
    const std::string node_dir = topology_dir + "/" + std::to_string(node);
    std::ifstream props(node_dir + "/properties");
    std::string line;
    long version = 0;
    while (std::getline(props, line)) {
      std::istringstream fields(line);
      std::string key;
      long value = 0;
      if (fields >> key >> value && key == "gfx_target_version") version = value;
    }
    const auto target = platform::amd_target_from_version(version);
    if (!target) continue;  // CPU nodes report 0
    GpuDevice g;
    g.backend = platform::Backend::Rocm;
    g.index = static_cast<int>(gpus.size());
    g.arch = target->processor;
    g.major = target->major;
    g.minor = target->minor;
    std::ifstream name_file(node_dir + "/name");
    std::getline(name_file, g.name);
    gpus.push_back(g);
  }
  const size_t present = gpus.size();
  const bool visible_read = apply_visible_rocm_devices(&gpus);
  facts->gpus.insert(facts->gpus.end(), gpus.begin(), gpus.end());
  if (present == 0) {
    facts->rocm_status = "ROCm kernel driver present, no GPU";
    return;
  }
  probe_hip_runtime(facts);
  facts->rocm_status = std::to_string(gpus.size()) + " ROCm GPU(s)" +
                       (gpus.size() != present ? " of " + std::to_string(present) + " (ROCR/HIP_VISIBLE_DEVICES)" : "") +
                       (visible_read ? "" : ", visible-device list not read (not ordinals): all listed") +
                       (facts->rocm_major ? ", HIP runtime " + std::to_string(facts->rocm_major) + "." +
                                                std::to_string(facts->rocm_minor)
                                          : std::string(", no HIP runtime (libamdhip64.so.7/.6/.5) found"));
}

}  // namespace kh::loader
