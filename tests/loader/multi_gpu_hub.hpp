// A signed file hub holding kh-fixtures/multi-gpu 1.0.0 in two builds (host-compiled stand-ins,
// fixtures/gpu_build.cpp, that claim the sm90a and sm80 variants), its root pinned in a fresh
// cache; and a machine described to `kernels` and libkh (KH_TEST_HOST_FACTS) for as long as it
// lives. Shared by the tests that load that package on described machines.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>

#include "kh/kh.h"
#include "kh/registry/cache.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "../registry/signed_hub.hpp"
#include "../registry/test_util.hpp"

namespace kh_test {

inline const char* kMultiGpuSpec = "kh-fixtures/multi-gpu@1";
inline const char* kMultiGpuSm90a = "cuda13.0-sm90a-abi1-x86_64-linux";
inline const char* kMultiGpuSm80 = "cuda13.0-sm80-abi1-x86_64-linux";

struct MultiGpuHub {
  SignedHub signed_hub;  // the hub and its root of trust
  std::string dir = signed_hub.dir, cache = dir + "/cache", url = signed_hub.url();
  MultiGpuHub() {
    namespace reg = kh::registry;
    for (const auto& [library, variant] : {std::pair<const char*, const char*>{KH_FIXTURE_GPU_SM90A, kMultiGpuSm90a},
                                           {KH_FIXTURE_GPU_SM80, kMultiGpuSm80}}) {
      reg::PackageManifest m;
      m.name = "kh-fixtures/multi-gpu";
      m.version = "1.0.0";
      m.variant = variant;
      m.abi = "1.0";
      m.ops = {{"noop", "noop(Tensor(a!) out) -> ()"}};
      reg::pack_package(library, m, dir + "/dist");
    }
    reg::publish_to_file_hub(dir + "/dist", signed_hub.hub_dir, 365, {signed_hub.key});
    reg::Cache c(cache);
    reg::TrustStore(c, reg::open_hub(url)->id()).pin_root(signed_hub.root_text(), "root/1.root.json");
  }
  // Load options for this hub and cache and one device.
  kh_load_options options(int32_t device_type, int32_t device_id) const {
    kh_load_options o{};
    o.struct_size = sizeof o;
    o.hub = url.c_str();
    o.cache_dir = cache.c_str();
    o.device_type = device_type;
    o.device_id = device_id;
    return o;
  }
};

// The machine `kernels` and libkh see (host facts as `kernels doctor --json` prints them).
struct DescribedMachine {
  TempDir tmp;
  std::string path = tmp.path() + "/machine.json";
  explicit DescribedMachine(const std::string& json) {
    std::ofstream(path) << json;
    ::setenv("KH_TEST_HOST_FACTS", path.c_str(), 1);
  }
  ~DescribedMachine() { ::unsetenv("KH_TEST_HOST_FACTS"); }
  DescribedMachine(const DescribedMachine&) = delete;
  DescribedMachine& operator=(const DescribedMachine&) = delete;
};

}  // namespace kh_test
