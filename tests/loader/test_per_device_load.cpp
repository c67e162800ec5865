// One package loaded for two GPUs of different archs in one process: two kernels, two builds,
// two libraries (the cache, the in-process resolution memo and the loaded-library table each
// key on what they must). The machine is described (KH_TEST_HOST_FACTS); the builds are
// host-compiled stand-ins claiming the sm90a and sm80 variants (fixtures/gpu_build.cpp),
// published to a signed file hub.
#include <doctest/doctest.h>
#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "kh/kh.h"
#include "multi_gpu_hub.hpp"

namespace {

const char* kSpec = kh_test::kMultiGpuSpec;

using Hub = kh_test::MultiGpuHub;
using kh_test::DescribedMachine;

const char* kH100A100 = R"({"cpu": "x86_64", "os": "linux", "x86_isa_level": 3, "glibc": "2.39", "cuda_driver": "13.0",
  "gpus": [{"backend": "cuda", "index": 0, "name": "NVIDIA H100 80GB HBM3", "arch": "sm90"},
           {"backend": "cuda", "index": 1, "name": "NVIDIA A100-SXM4-80GB", "arch": "sm80"}]})";

kh_status call_noop(const kh_kernel* k, int device_id) {
  const kh_op* op = nullptr;
  REQUIRE(kh_kernel_find_op(k, "noop", &op) == KH_OK);
  float storage[4] = {};
  int64_t shape[1] = {4};
  DLTensor t{};
  t.data = storage;
  t.device = {kDLCUDA, device_id};
  t.ndim = 1;
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape;
  kh_value arg{};
  arg.kind = KH_VALUE_TENSOR;
  arg.u.tensor = &t;
  return kh_op_call(op, &arg, 1, nullptr);
}

}  // namespace

TEST_CASE("one package, two GPUs of different archs: two kernels with their own builds and libraries") {
  Hub hub;
  DescribedMachine machine(kH100A100);
  ::setenv("KH_METADATA_TTL", "600", 1);  // the in-process memo is on: it must tell the devices apart

  kh_kernel *hopper = nullptr, *ampere = nullptr, *ampere_again = nullptr;
  const kh_load_options on_0 = hub.options(kDLCUDA, 0), on_1 = hub.options(kDLCUDA, 1);
  REQUIRE_MESSAGE(kh_load_kernel(kSpec, &on_0, &hopper) == KH_OK, kh_last_error());
  REQUIRE_MESSAGE(kh_load_kernel(kSpec, &on_1, &ampere) == KH_OK, kh_last_error());
  CHECK(std::string(kh_kernel_variant(hopper)) == "cuda13.0-sm90a-abi1-x86_64-linux");
  CHECK(std::string(kh_kernel_variant(ampere)) == "cuda13.0-sm80-abi1-x86_64-linux");
  // Two cached package trees, two loaded libraries.
  CHECK(std::string(kh_kernel_path(hopper)) != std::string(kh_kernel_path(ampere)));
  // Loading for device 1 again is the same build again (from the memo), and any backend's
  // device 1 is the A100 too.
  const kh_load_options any_1 = hub.options(0, 1);
  REQUIRE(kh_load_kernel(kSpec, &any_1, &ampere_again) == KH_OK);
  CHECK(std::string(kh_kernel_variant(ampere_again)) == "cuda13.0-sm80-abi1-x86_64-linux");
  CHECK(std::string(kh_kernel_path(ampere_again)) == std::string(kh_kernel_path(ampere)));
  // Both work at once; releasing one leaves the other working.
  CHECK(call_noop(hopper, 0) == KH_OK);
  CHECK(call_noop(ampere, 1) == KH_OK);
  kh_kernel_release(hopper);
  CHECK(call_noop(ampere, 1) == KH_OK);
  kh_kernel_release(ampere_again);
  CHECK(call_noop(ampere, 1) == KH_OK);
  kh_kernel_release(ampere);

  SUBCASE("a host built against the older kh_load_options (no device fields) gets device 0") {
    kh_load_options old = hub.options(kDLCUDA, 1);
    old.struct_size = offsetof(kh_load_options, device_type);  // what such a host passes
    kh_kernel* k = nullptr;
    REQUIRE(kh_load_kernel(kSpec, &old, &k) == KH_OK);
    CHECK(std::string(kh_kernel_variant(k)) == "cuda13.0-sm90a-abi1-x86_64-linux");
    kh_kernel_release(k);
  }
  SUBCASE("a device the machine lacks is refused, naming what it has") {
    const kh_load_options on_2 = hub.options(kDLCUDA, 2), rocm = hub.options(kDLROCM, 1);
    kh_kernel* k = nullptr;
    CHECK(kh_load_kernel(kSpec, &on_2, &k) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(kh_last_error()).find("no CUDA device 2 on this machine: it has 2 CUDA and 0 ROCm device(s)") !=
          std::string::npos);
    CHECK(kh_load_kernel(kSpec, &rocm, &k) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(k == nullptr);
  }
  SUBCASE("on a machine of two A100s both devices get the sm80 build") {
    DescribedMachine two_a100(R"({"cuda_driver": "13.0", "glibc": "2.39", "x86_isa_level": 3,
      "gpus": [{"backend": "cuda", "arch": "sm80"}, {"backend": "cuda", "arch": "sm80"}]})");
    kh_kernel* k = nullptr;
    REQUIRE(kh_load_kernel(kSpec, &on_0, &k) == KH_OK);
    CHECK(std::string(kh_kernel_variant(k)) == "cuda13.0-sm80-abi1-x86_64-linux");
    kh_kernel_release(k);
  }
  ::unsetenv("KH_METADATA_TTL");
}

namespace {
std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  CHECK(::pclose(pipe) == 0);
  return out;
}
}  // namespace

TEST_CASE("kernels doctor, get --device and info --coverage on a machine of two GPU generations") {
  Hub hub;
  DescribedMachine machine(kH100A100);
  const std::string kernels = std::string("'") + KH_KERNELS_EXE + "' ";
  const std::string where = " --hub '" + hub.url + "' --cache '" + hub.cache + "'";

  const std::string doctor = run(kernels + "doctor kh-fixtures/multi-gpu@1" + where);
  CAPTURE(doctor);
  CHECK(doctor.find("gpu:   cuda device 1: NVIDIA A100-SXM4-80GB (sm80)") != std::string::npos);
  const size_t d0 = doctor.find("cuda device 0 (NVIDIA H100 80GB HBM3, sm90)"),
               d1 = doctor.find("cuda device 1 (NVIDIA A100-SXM4-80GB, sm80)");
  REQUIRE(d0 != std::string::npos);
  REQUIRE(d1 != std::string::npos);
  CHECK(doctor.find("chosen   cuda13.0-sm90a-abi1-x86_64-linux", d0) < d1);
  CHECK(doctor.find("chosen   cuda13.0-sm80-abi1-x86_64-linux", d1) != std::string::npos);
  CHECK(doctor.find("refused  cuda13.0-sm90a-abi1-x86_64-linux: sm90a code runs only on compute capability 9.0", d1) !=
        std::string::npos);

  const auto json = nlohmann::json::parse(run(kernels + "doctor kh-fixtures/multi-gpu@1 --json" + where));
  const auto& pkg = json["packages"][0];
  CHECK(pkg["chosen"] == "cuda13.0-sm90a-abi1-x86_64-linux");  // the first GPU's, at the top as before
  REQUIRE(pkg["devices"].size() == 2);
  CHECK(pkg["devices"][1]["chosen"] == "cuda13.0-sm80-abi1-x86_64-linux");
  CHECK(pkg["devices"][1]["builds"][0]["fit"] == "exact");
  CHECK(pkg["devices"][1]["builds"][0]["device"] == "cuda:1");
  CHECK(pkg["devices"][1]["builds"][1]["refusal"] == "gpu-arch");
  CHECK(json["host"]["gpus"].size() == 2);

  const auto got = nlohmann::json::parse(run(kernels + "get kh-fixtures/multi-gpu@1 --device cuda:1 --json --explain" + where));
  CHECK(got["packages"][0]["variant"] == "cuda13.0-sm80-abi1-x86_64-linux");
  CHECK(got["explain"][0]["device"] == "cuda device 1 (NVIDIA A100-SXM4-80GB, sm80)");
  const std::string bad_device = run(kernels + "get kh-fixtures/multi-gpu@1 --device cuda:7" + where + " 2>&1 || true");
  CAPTURE(bad_device);
  CHECK(bad_device.find("no CUDA device 7 on this machine") != std::string::npos);

  const std::string coverage = run(kernels + "info kh-fixtures/multi-gpu@1 --coverage" + where);
  CAPTURE(coverage);
  auto row = [&](const std::string& arch) {
    const size_t at = coverage.find("\n  " + arch + " ");
    REQUIRE_MESSAGE(at != std::string::npos, arch);
    return coverage.substr(at + 1, coverage.find('\n', at + 1) - at - 1);
  };
  auto runs = [&](const std::string& arch, const std::string& how, const std::string& build) {
    const std::string r = row(arch);
    CAPTURE(r);
    CHECK(r.find(" " + how + " ") != std::string::npos);
    CHECK(r.find(build) != std::string::npos);
  };
  runs("sm75", "no", "sm80 code needs compute capability 8.0 or newer");
  runs("sm80", "native", "cuda13.0-sm80-abi1-x86_64-linux (exact)");
  runs("sm86", "native", "cuda13.0-sm80-abi1-x86_64-linux (same-major-sass)");
  runs("sm90", "native", "cuda13.0-sm90a-abi1-x86_64-linux (arch-specific)");
  runs("sm100", "PTX JIT", "cuda13.0-sm80-abi1-x86_64-linux (ptx-jit)");
  runs("sm121", "PTX JIT", "cuda13.0-sm80-abi1-x86_64-linux (ptx-jit)");
  runs("gfx942", "no", "no build for this backend");
}
