// The platform vocabulary: variant keys, GPU archs, versions, ISA levels, the device code a
// key requires and where GPU code runs.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "kh/platform/code_fit.hpp"
#include "kh/platform/cpu_isa.hpp"
#include "kh/platform/device_code.hpp"
#include "kh/platform/gpu_arch.hpp"
#include "kh/platform/rocm_runtime.hpp"
#include "kh/platform/variant_key.hpp"
#include "kh/platform/versions.hpp"

using namespace kh::platform;

TEST_CASE("variant keys: the keys of keys.txt are accepted and refused as listed (CMake reads the same file)") {
  std::ifstream in(KH_TEST_SOURCE_DIR "/tests/platform/keys.txt");
  REQUIRE(in.good());
  int checked = 0;
  for (std::string line; std::getline(in, line);) {
    const bool good = line.rfind("good ", 0) == 0, bad = line.rfind("bad ", 0) == 0;
    if (!good && !bad) continue;
    const std::string key = line.substr(good ? 5 : 4);
    CAPTURE(key);
    const VariantKeyParse parsed = parse_variant_key(key);
    CHECK(parsed.key.has_value() == good);
    if (good) CHECK(to_string(*parsed.key) == key);
    if (bad) CHECK_FALSE(parsed.error.empty());
    ++checked;
  }
  CHECK(checked > 30);
}

TEST_CASE("variant keys: typed parts") {
  const auto cuda = parse_variant_key("cuda13.0-sm100f-abi1-x86_64-linux").key;
  REQUIRE(cuda);
  CHECK(cuda->backend == Backend::Cuda);
  CHECK(cuda->version() == MajorMinor{13, 0});
  REQUIRE(cuda->cuda);
  CHECK(*cuda->cuda == CudaArch{10, 0, CudaArch::Kind::Family});
  const auto rocm = parse_variant_key("rocm6.2-gfx942-abi1-x86_64-linux").key;
  REQUIRE(rocm);
  REQUIRE(rocm->amd);
  CHECK(rocm->amd->processor == "gfx942");
  CHECK(rocm->amd->major == 9);
  CHECK(rocm->amd->minor == 4);
  CHECK(rocm->amd->stepping == 2);
  const auto cpu = parse_variant_key("cpu-x86_64_v3-abi1-x86_64-linux").key;
  REQUIRE(cpu);
  CHECK(cpu->x86_level == 3);
  CHECK(cpu->abi_major == 1);
  // The errors say what is wrong.
  CHECK(parse_variant_key("cuda-sm80-abi1-x86_64-linux").error.find("backend version") != std::string::npos);
  CHECK(parse_variant_key("cuda13.0-sm80a-abi1-x86_64-linux").error.find("'a' from sm90") != std::string::npos);
  CHECK(parse_variant_key("cpu-x86_64_v5-abi1-x86_64-linux").error.find("ISA level") != std::string::npos);
}

TEST_CASE("CUDA archs: spellings") {
  for (const char* text : {"sm90a", "sm_90a"}) {
    const auto a = parse_cuda_arch(text);
    REQUIRE(a);
    CHECK(*a == CudaArch{9, 0, CudaArch::Kind::ArchSpecific});
  }
  const auto f = *parse_cuda_arch("sm_103f");
  CHECK(f == CudaArch{10, 3, CudaArch::Kind::Family});
  CHECK(sass_name(f) == "sm_103f");
  CHECK(ptx_name(f) == "compute_103f");
  CHECK(key_name(*parse_cuda_arch("sm121")) == "sm121");
  CHECK(parse_cuda_arch("sm75")->major == 7);
  CHECK(parse_cuda_arch("sm75")->minor == 5);
  for (const char* bad : {"sm", "sm9", "sm_", "sm0901", "sm90x", "compute_90", "gfx942", "sm90af"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_cuda_arch(bad));
  }
}

TEST_CASE("AMD targets: processors and features") {
  const auto t = parse_amd_target("gfx942:sramecc+:xnack-");
  REQUIRE(t);
  CHECK(t->processor == "gfx942");
  CHECK(t->sramecc == AmdFeature::On);
  CHECK(t->xnack == AmdFeature::Off);
  CHECK(target_id(*t) == "gfx942:sramecc+:xnack-");
  CHECK(target_id(*parse_amd_target("gfx90a:xnack+")) == "gfx90a:xnack+");
  const auto a = *parse_amd_target("gfx90a");
  CHECK(a.major == 9);
  CHECK(a.minor == 0);
  CHECK(a.stepping == 10);
  CHECK(parse_amd_target("gfx1100")->major == 11);
  for (const char* bad : {"gfx", "gfx9", "gfx942:", "gfx942:foo+", "gfx942:xnack", "gfx942:xnack+:xnack-", "sm90", "gfx94g"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_amd_target(bad));
  }
  CHECK(amd_target_from_version(90402)->processor == "gfx942");
  CHECK(amd_target_from_version(90010)->processor == "gfx90a");
  CHECK(amd_target_from_version(110000)->processor == "gfx1100");
  CHECK_FALSE(amd_target_from_version(0));
}

TEST_CASE("versions: major.minor and glibc") {
  CHECK(*parse_major_minor("13.0") == MajorMinor{13, 0});
  CHECK_FALSE(parse_major_minor("13"));
  CHECK_FALSE(parse_major_minor("13.0.1"));
  CHECK_FALSE(parse_major_minor("1x.0"));
  CHECK(MajorMinor{6, 2} >= MajorMinor{5, 7});
  CHECK(MajorMinor{5, 7} < MajorMinor{6, 0});
  CHECK(compare(*parse_glibc_version("2.9"), *parse_glibc_version("2.36")) < 0);
  CHECK(compare(*parse_glibc_version("2.36"), *parse_glibc_version("2.36.0")) == 0);
  CHECK(compare(*parse_glibc_version("2.2.5"), *parse_glibc_version("2.3")) < 0);
  for (const char* bad : {"", "2", "2.", ".2", "2.36.1.1", "2.x", "12345.1"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_glibc_version(bad));
  }
}

TEST_CASE("CPU ISA levels") {
  CHECK(x86_isa_level("x86_64") == 1);
  CHECK(x86_isa_level("x86_64_v4") == 4);
  CHECK(x86_isa_level("x86_64_v5") == 0);
  CHECK(x86_isa_level("aarch64") == 0);
  CHECK(x86_march_flag(3) == "-march=x86-64-v3");
  CHECK(x86_march_flag(1) == "-march=x86-64");
  CHECK(is_cpu_isa_for("aarch64", "aarch64"));
  CHECK_FALSE(is_cpu_isa_for("x86_64_v2", "aarch64"));
}

TEST_CASE("the device code a key requires") {
  auto code = [](const char* key) {
    std::string out;
    for (const DeviceCode& c : required_device_code(*parse_variant_key(key).key))
      out += std::string(out.empty() ? "" : ", ") + kind_name(c.kind) + " " + c.arch;
    return out;
  };
  CHECK(code("cuda13.0-sm80-abi1-x86_64-linux") == "sass sm_80, ptx compute_80");
  CHECK(code("cuda13.0-sm90a-abi1-x86_64-linux") == "sass sm_90a");
  CHECK(code("cuda13.0-sm100f-abi1-x86_64-linux") == "sass sm_100f, ptx compute_100");
  CHECK(code("rocm6.2-gfx942-abi1-x86_64-linux") == "amdgcn gfx942");
  CHECK(code("cpu-x86_64_v3-abi1-x86_64-linux").empty());
  CHECK(cmake_cuda_architectures(*parse_cuda_arch("sm120f")) == "120f-real;120-virtual");
  CHECK(cmake_cuda_architectures(*parse_cuda_arch("sm90a")) == "90a-real");
  CHECK(cmake_cuda_architectures(*parse_cuda_arch("sm80")) == "80-real;80-virtual");
}

TEST_CASE("where CUDA code runs: arch-specific > family > exact > same-major SASS > PTX") {
  auto fit = [](const char* arch, int major, int minor) { return cuda_code_fit(*parse_cuda_arch(arch), major, minor); };
  CHECK(fit("sm90a", 9, 0).fit == Fit::ArchSpecific);
  CHECK(fit("sm90a", 10, 0).misfit == Misfit::ArchSpecificElsewhere);  // 'a' code has no PTX to fall back on
  CHECK(fit("sm100a", 10, 3).misfit == Misfit::ArchSpecificElsewhere);
  // sm_100f runs on 10.0 and 10.3 (NVIDIA: family-specific features, CUDA 12.9).
  CHECK(fit("sm100f", 10, 0).fit == Fit::Family);
  CHECK(fit("sm100f", 10, 3).fit == Fit::Family);
  CHECK(fit("sm103f", 10, 0).misfit == Misfit::OlderDevice);
  CHECK(fit("sm100f", 12, 0).fit == Fit::PtxJit);  // through its compute_100 PTX
  CHECK(fit("sm120f", 12, 1).fit == Fit::Family);
  CHECK(fit("sm120f", 10, 0).misfit == Misfit::OlderDevice);
  CHECK(fit("sm80", 8, 0).fit == Fit::Exact);
  CHECK(fit("sm80", 8, 6).fit == Fit::SameMajorSass);
  CHECK(fit("sm80", 9, 0).fit == Fit::PtxJit);
  CHECK(fit("sm80", 12, 0).fit == Fit::PtxJit);
  CHECK(fit("sm80", 7, 5).misfit == Misfit::OlderDevice);
  CHECK(fit("sm86", 8, 0).misfit == Misfit::OlderDevice);
  CHECK(static_cast<int>(Fit::ArchSpecific) > static_cast<int>(Fit::Family));
  CHECK(static_cast<int>(Fit::Family) > static_cast<int>(Fit::Exact));
  CHECK(describe_cuda_fit(*parse_cuda_arch("sm90a"), 8, 0, fit("sm90a", 8, 0)) ==
        "sm90a code runs only on compute capability 9.0; this GPU is 8.0");
}

TEST_CASE("where AMD code objects run: the same processor, features that agree") {
  const AmdTarget any = *parse_amd_target("gfx942");
  CHECK(amd_code_fit(any, *parse_amd_target("gfx942:sramecc+:xnack-")).fit == Fit::Exact);
  CHECK(amd_code_fit(any, *parse_amd_target("gfx90a")).misfit == Misfit::OtherProcessor);
  CHECK(amd_code_fit(*parse_amd_target("gfx942:xnack+"), *parse_amd_target("gfx942:xnack-")).misfit ==
        Misfit::FeatureMismatch);
  CHECK(amd_code_fit(*parse_amd_target("gfx942:xnack+"), any).fit == Fit::Exact);  // the device's xnack is not known
}

TEST_CASE("code-object versions and the runtimes that load them") {
  CHECK(code_object_version_of_abi_version(2) == 4);
  CHECK(code_object_version_of_abi_version(3) == 5);
  CHECK(code_object_version_of_abi_version(4) == 6);
  CHECK_FALSE(code_object_version_of_abi_version(1));
  CHECK(*oldest_runtime_for_code_object(6) == MajorMinor{6, 3});
  CHECK_FALSE(oldest_runtime_for_code_object(7));
  CHECK(std::string(kHipRuntimeSonames[0]) == "libamdhip64.so.7");
}
