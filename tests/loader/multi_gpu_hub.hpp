// A signed file hub holding kh-fixtures/multi-gpu 1.0.0 in two builds (host-compiled stand-ins,
// fixtures/gpu_build.cpp, that claim the sm90a and sm80 variants), its root pinned in a fresh
// cache; and a machine described to `kernels` and libkh (KH_TEST_HOST_FACTS) for as long as it
// lives. Shared by the tests that load that package on described machines.
#pragma once

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <utility>

#include "kh/kh.h"
#include "kh/registry/cache.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "../registry/test_util.hpp"

namespace kh_test {

inline const char* kMultiGpuSpec = "kh-fixtures/multi-gpu@1";
inline const char* kMultiGpuSm90a = "cuda13.0-sm90a-abi1-x86_64-linux";
inline const char* kMultiGpuSm80 = "cuda13.0-sm80-abi1-x86_64-linux";

struct MultiGpuHub {
  TempDir tmp;
  std::string dir = tmp.path(), hub = dir + "/hub", cache = dir + "/cache", url = "file://" + hub;
  MultiGpuHub() {
    namespace reg = kh::registry;
    const auto key = reg::minisign::generate_key();
    reg::RootSpec root;
    root.root_keys = {key.public_key()};
    root.index_keys = {key.public_key()};
    root.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
    reg::write_next_root_to_file_hub(hub, root, {key});
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
    reg::publish_to_file_hub(dir + "/dist", hub, 365, {key});
    std::ifstream in(hub + "/root/1.root.json", std::ios::binary);
    const std::string root_json((std::istreambuf_iterator<char>(in)), {});
    reg::Cache c(cache);
    reg::TrustStore(c, reg::open_hub(url)->id()).pin_root(root_json, "root/1.root.json");
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
