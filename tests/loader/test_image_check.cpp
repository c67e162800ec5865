// Fail at load, not at the first launch (issue 39, item 4), on the CPU: the decision (which
// device code runs on which GPU: SASS by its arch's rules, PTX through the JIT, code objects
// on their processor), and kh_load_kernel on described machines (KH_TEST_HOST_FACTS) with
// host-built stand-ins of CUDA builds: a forced build without code for the GPU, and a build
// whose ABI report holds less than its key promises, fail naming the device's arch and the
// build's code; a build with code for the GPU loads. (The GPU machine checks the same with a
// real build: someone else's next device run.)
#include <doctest/doctest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>

#include "../registry/signed_hub.hpp"
#include "../registry/test_util.hpp"
#include "image_check.hpp"
#include "kh/kh.h"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/signed_metadata.hpp"

using kh::loader::GpuDevice;
using kh::platform::DeviceCode;
using Kind = kh::platform::DeviceCode::Kind;

namespace {

GpuDevice cuda(int major, int minor, const char* name = "GPU") {
  GpuDevice g;
  g.backend = kh::platform::Backend::Cuda;
  g.name = name;
  g.arch = "sm" + std::to_string(major * 10 + minor);
  g.major = major;
  g.minor = minor;
  return g;
}

GpuDevice rocm(const char* arch) {
  GpuDevice g;
  g.backend = kh::platform::Backend::Rocm;
  g.arch = arch;
  return g;
}

bool runs(const std::vector<DeviceCode>& images, const GpuDevice& gpu) {
  return kh::loader::why_no_image_runs(images, gpu).empty();
}

}  // namespace

TEST_CASE("which device code a GPU can run") {
  const std::vector<DeviceCode> sm90a = {{Kind::Sass, "sm_90a"}};
  const std::vector<DeviceCode> sm80 = {{Kind::Sass, "sm_80"}, {Kind::Ptx, "compute_80"}};
  const std::vector<DeviceCode> sm80_sass_only = {{Kind::Sass, "sm_80"}};
  CHECK(runs(sm90a, cuda(9, 0)));
  CHECK_FALSE(runs(sm90a, cuda(8, 0)));
  CHECK_FALSE(runs(sm90a, cuda(10, 0)));
  CHECK(runs(sm80, cuda(8, 0)));
  CHECK(runs(sm80, cuda(8, 6)));   // same-major SASS
  CHECK(runs(sm80, cuda(9, 0)));   // through its PTX
  CHECK(runs(sm80, cuda(12, 0)));  // through its PTX
  CHECK_FALSE(runs(sm80, cuda(7, 5)));
  CHECK(runs(sm80_sass_only, cuda(8, 9)));
  CHECK_FALSE(runs(sm80_sass_only, cuda(9, 0)));  // a hub build without PTX on a newer GPU
  CHECK(runs({{Kind::Sass, "sm_100f"}}, cuda(10, 3)));
  CHECK_FALSE(runs({{Kind::Sass, "sm_100f"}}, cuda(12, 0)));
  CHECK(runs({{Kind::Ptx, "compute_90a"}}, cuda(9, 0)));
  CHECK_FALSE(runs({{Kind::Ptx, "compute_90a"}}, cuda(10, 0)));
  CHECK(runs({{Kind::Amdgcn, "gfx942"}}, rocm("gfx942")));
  CHECK_FALSE(runs({{Kind::Amdgcn, "gfx942"}}, rocm("gfx90a")));
  CHECK_FALSE(runs({{Kind::Amdgcn, "gfx942"}}, cuda(9, 0)));
  CHECK_FALSE(runs(sm90a, rocm("gfx942")));

  const std::string why = kh::loader::why_no_image_runs(sm80_sass_only, cuda(9, 0));
  CHECK_MESSAGE(why == "SASS sm_80 does not run on compute capability 9.0 (SASS runs on its own major, minor 0 or newer)",
                why);
  CHECK(kh::loader::why_no_image_runs({}, cuda(9, 0)) == "it carries no device code at all");
  CHECK(kh::loader::why_no_image_runs(sm90a, cuda(8, 0)).find("arch-specific: 9.0 only") != std::string::npos);
}

namespace {

const char* kSpec = "kh-fixtures/multi-gpu@1";

// A signed file hub with the sm90a and sm80 stand-ins of kh-fixtures/multi-gpu, the sm80 one
// packed with the ABI report `sm80_report` names (empty: none), and a cache pinned to it.
struct Hub {
  kh_test::SignedHub signed_hub;
  std::string cache = signed_hub.dir + "/cache", url = signed_hub.url();
  explicit Hub(const std::string& sm80_report) {
    signed_hub.publish(KH_FIXTURE_GPU_SM90A, "kh-fixtures/multi-gpu", "1.0.0", "cuda13.0-sm90a-abi1-x86_64-linux");
    std::vector<std::pair<std::string, std::string>> report;
    if (!sm80_report.empty()) report.emplace_back("lib/kh-abi-check.json", sm80_report);
    signed_hub.publish(KH_FIXTURE_GPU_SM80, "kh-fixtures/multi-gpu", "1.0.0", "cuda13.0-sm80-abi1-x86_64-linux", report);
    kh::registry::Cache c(cache);
    kh::registry::TrustStore(c, kh::registry::open_hub(url)->id()).pin_root(signed_hub.root_text(), "root/1.root.json");
  }
  // kh_load_kernel for CUDA device 0, `variant` forced (empty: selected); the status.
  kh_status load(const std::string& variant = "") const {
    kh_load_options o{};
    o.struct_size = sizeof o;
    o.hub = url.c_str();
    o.cache_dir = cache.c_str();
    o.variant = variant.empty() ? nullptr : variant.c_str();
    o.device_type = kDLCUDA;
    kh_kernel* k = nullptr;
    const kh_status s = kh_load_kernel(kSpec, &o, &k);
    kh_kernel_release(k);
    return s;
  }
};

// The machine, as `kernels doctor --json` prints it, for the scope.
struct DescribedMachine {
  kh_test::TempDir tmp;
  std::string path = tmp.path() + "/machine.json";
  explicit DescribedMachine(const std::string& gpu_json) {
    std::ofstream(path) << R"({"cpu": "x86_64", "os": "linux", "x86_isa_level": 3, "glibc": "2.39", "cuda_driver": "13.0",
                              "gpus": [)" << gpu_json << "]}";
    ::setenv("KH_TEST_HOST_FACTS", path.c_str(), 1);
  }
  ~DescribedMachine() { ::unsetenv("KH_TEST_HOST_FACTS"); }
};

const char* kA100 = R"({"backend": "cuda", "index": 0, "name": "NVIDIA A100-SXM4-80GB", "arch": "sm80"})";
const char* kH100 = R"({"backend": "cuda", "index": 0, "name": "NVIDIA H100 80GB HBM3", "arch": "sm90"})";

std::string report(const std::string& gpu_code) {
  return R"({"schema": 1, "library": "libkh_fixture_gpu_sm80.so", "variant": "cuda13.0-sm80-abi1-x86_64-linux",
             "ok": true, "gpu_code": [)" + gpu_code + "]}";
}

}  // namespace

TEST_CASE("kh_load_kernel refuses a forced build without code for the GPU, naming both, before loading it") {
  const kh_test::ScopedEnv env({{"KH_METADATA_TTL", "0"}, {"KH_PROGRESS", "0"}});
  Hub hub("");
  DescribedMachine machine(kA100);
  CHECK_MESSAGE(hub.load() == KH_OK, kh_last_error());  // selection picks sm80 for the A100
  CHECK(hub.load("cuda13.0-sm90a-abi1-x86_64-linux") == KH_ERROR_NO_COMPATIBLE_VARIANT);
  const std::string msg = kh_last_error();
  CHECK_MESSAGE(msg.find("kh-fixtures/multi-gpu 1.0.0: build cuda13.0-sm90a-abi1-x86_64-linux has no device code that "
                         "NVIDIA A100-SXM4-80GB (cuda device 0, sm80) can run: it carries sass sm_90a (by its variant "
                         "key): SASS sm_90a does not run on compute capability 8.0") != std::string::npos, msg);
  SUBCASE("a machine without that GPU has nothing to judge: the forced build loads as before") {
    DescribedMachine cpu_only("");
    CHECK_MESSAGE(hub.load("cuda13.0-sm90a-abi1-x86_64-linux") == KH_OK, kh_last_error());
  }
}

TEST_CASE("a build whose ABI report holds less than its key promises fails at load on the GPU it cannot serve") {
  const kh_test::ScopedEnv env({{"KH_METADATA_TTL", "0"}, {"KH_PROGRESS", "0"}});
  SUBCASE("SASS sm_80 only, no PTX: on an H100 (selection trusts the key's PTX)") {
    Hub hub(report(R"({"kind": "sass", "arch": "sm_80"})"));
    DescribedMachine machine(kH100);
    CHECK(hub.load("cuda13.0-sm80-abi1-x86_64-linux") == KH_ERROR_NO_COMPATIBLE_VARIANT);
    const std::string msg = kh_last_error();
    CHECK_MESSAGE(msg.find("it carries sass sm_80 (by its ABI report (lib/kh-abi-check.json)): SASS sm_80 does not run on "
                           "compute capability 9.0") != std::string::npos, msg);
    DescribedMachine ampere(kA100);
    CHECK_MESSAGE(hub.load() == KH_OK, kh_last_error());  // where its SASS runs, it loads
  }
  SUBCASE("SASS sm_80 and PTX compute_80: the H100 runs it through the JIT") {
    Hub hub(report(R"({"kind": "sass", "arch": "sm_80"}, {"kind": "ptx", "arch": "compute_80"})"));
    DescribedMachine machine(kH100);
    CHECK_MESSAGE(hub.load("cuda13.0-sm80-abi1-x86_64-linux") == KH_OK, kh_last_error());
  }
}
