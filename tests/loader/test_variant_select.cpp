// The choice of a build for a machine, or for one of its GPUs (variant keys themselves are
// tests/platform's).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "kh/registry/status_error.hpp"
#include "kh/loader/variant_select.hpp"

using kh::loader::HostFacts;
using kh::registry::VariantEntry;

namespace {
VariantEntry entry(const std::string& key) {
  VariantEntry e;
  e.key = key;
  return e;
}
}  // namespace

TEST_CASE("the best CPU ISA level the host supports wins") {
  HostFacts v3{"x86_64", "linux", 3};
  std::vector<VariantEntry> offered = {entry("cpu-x86_64-abi1-x86_64-linux"), entry("cpu-x86_64_v4-abi1-x86_64-linux"),
                                       entry("cpu-x86_64_v3-abi1-x86_64-linux"), entry("cpu-x86_64-abi2-x86_64-linux"),
                                       entry("cpu-aarch64-abi1-aarch64-linux")};
  auto sel = kh::loader::select_variant(offered, v3);
  REQUIRE(sel.chosen != nullptr);
  CHECK(sel.chosen->key == "cpu-x86_64_v3-abi1-x86_64-linux");
  REQUIRE(sel.verdicts.size() == 5);
  CHECK(sel.verdicts[1].entry->key == "cpu-x86_64-abi1-x86_64-linux");
  for (const auto& v : sel.verdicts) {
    CAPTURE(v.entry->key);
    if (v.entry->key == "cpu-x86_64_v4-abi1-x86_64-linux") CHECK(v.reason.find("x86-64-v4") != std::string::npos);
    if (v.entry->key == "cpu-x86_64-abi2-x86_64-linux") CHECK(v.reason.find("kernel ABI 2") != std::string::npos);
    if (v.entry->key == "cpu-aarch64-abi1-aarch64-linux") CHECK_FALSE(v.compatible);
  }
  HostFacts baseline{"x86_64", "linux", 1};
  CHECK(kh::loader::select_variant(offered, baseline).chosen->key == "cpu-x86_64-abi1-x86_64-linux");
}

TEST_CASE("no compatible build: an error listing every build and why") {
  HostFacts host{"x86_64", "linux", 2};
  std::vector<VariantEntry> offered = {entry("cpu-x86_64_v4-abi1-x86_64-linux"), entry("cuda13.0-sm90a-abi1-x86_64-linux")};
  try {
    kh::loader::choose_variant(offered, host, {}, "", "org/pkg 1.0.0");
    FAIL("chose an incompatible build");
  } catch (const kh::StatusError& e) {
    CHECK(e.status() == KH_ERROR_NO_COMPATIBLE_VARIANT);
    const std::string msg = e.what();
    CHECK(msg.find("org/pkg 1.0.0") != std::string::npos);
    CHECK(msg.find("cpu-x86_64_v4-abi1-x86_64-linux") != std::string::npos);
    CHECK(msg.find("cuda13.0-sm90a-abi1-x86_64-linux") != std::string::npos);
  }
  CHECK(kh::loader::choose_variant(offered, host, {}, "cuda13.0-sm90a-abi1-x86_64-linux", "x").key ==
        "cuda13.0-sm90a-abi1-x86_64-linux");
  CHECK_THROWS_AS(kh::loader::choose_variant(offered, host, {}, "cpu-x86_64-abi1-x86_64-linux", "x"), kh::StatusError);
}

namespace {
HostFacts with_cuda_gpu(int major, int minor, int driver_major, int driver_minor) {
  HostFacts h{"x86_64", "linux", 3};
  h.cuda_driver_major = driver_major;
  h.cuda_driver_minor = driver_minor;
  kh::loader::GpuDevice g;
  g.backend = kh::platform::Backend::Cuda;
  g.name = "test GPU";
  g.major = major;
  g.minor = minor;
  g.arch = "sm" + std::to_string(major) + std::to_string(minor);
  h.gpus.push_back(g);
  return h;
}
const kh::loader::VariantVerdict& verdict_for(const kh::loader::VariantSelection& sel, const std::string& key) {
  for (const auto& v : sel.verdicts)
    if (v.entry->key == key) return v;
  FAIL("no verdict for " << key);
  return sel.verdicts.front();
}
const std::vector<VariantEntry> kAllTargets = {
    entry("cpu-x86_64-abi1-x86_64-linux"), entry("cpu-x86_64_v3-abi1-x86_64-linux"),
    entry("cuda13.0-sm80-abi1-x86_64-linux"), entry("cuda13.0-sm90a-abi1-x86_64-linux"),
    entry("rocm5.2-gfx942-abi1-x86_64-linux")};
}  // namespace

TEST_CASE("an H200 (9.0) takes sm90a, with sm80 through PTX and the CPU as fallbacks") {
  auto sel = kh::loader::select_variant(kAllTargets, with_cuda_gpu(9, 0, 13, 0));
  REQUIRE(sel.chosen != nullptr);
  CHECK(sel.chosen->key == "cuda13.0-sm90a-abi1-x86_64-linux");
  CHECK(sel.verdicts[1].entry->key == "cuda13.0-sm80-abi1-x86_64-linux");
  CHECK(sel.verdicts[1].compatible);
  CHECK(sel.verdicts[1].reason.find("PTX") != std::string::npos);
  CHECK(sel.verdicts[2].entry->key == "cpu-x86_64_v3-abi1-x86_64-linux");
  CHECK_FALSE(verdict_for(sel, "rocm5.2-gfx942-abi1-x86_64-linux").compatible);
}

TEST_CASE("an A100 (8.0) takes sm80 SASS and refuses sm90a") {
  auto sel = kh::loader::select_variant(kAllTargets, with_cuda_gpu(8, 0, 13, 0));
  CHECK(sel.chosen->key == "cuda13.0-sm80-abi1-x86_64-linux");
  const auto& hopper = verdict_for(sel, "cuda13.0-sm90a-abi1-x86_64-linux");
  CHECK_FALSE(hopper.compatible);
  CHECK(hopper.reason.find("9.0") != std::string::npos);
}

TEST_CASE("an 8.9 GPU runs sm80 SASS of the same major") {
  auto sel = kh::loader::select_variant(kAllTargets, with_cuda_gpu(8, 9, 13, 0));
  CHECK(sel.chosen->key == "cuda13.0-sm80-abi1-x86_64-linux");
  CHECK(sel.verdicts[0].reason.find("same-major SASS") != std::string::npos);
}

TEST_CASE("a driver too old for the toolkit refuses the CUDA builds, saying so") {
  auto sel = kh::loader::select_variant(kAllTargets, with_cuda_gpu(9, 0, 12, 8));
  CHECK(sel.chosen->key == "cpu-x86_64_v3-abi1-x86_64-linux");
  CHECK(verdict_for(sel, "cuda13.0-sm90a-abi1-x86_64-linux").reason.find("driver") != std::string::npos);
  CHECK(verdict_for(sel, "cuda13.0-sm80-abi1-x86_64-linux").reason.find("driver") != std::string::npos);
}

TEST_CASE("ROCm code objects need their exact gfx target and a new enough runtime") {
  HostFacts mi300{"x86_64", "linux", 3};
  mi300.rocm_major = 6;
  mi300.rocm_minor = 2;
  kh::loader::GpuDevice g;
  g.backend = kh::platform::Backend::Rocm;
  g.arch = "gfx942";
  g.name = "test MI300";
  mi300.gpus.push_back(g);
  CHECK(kh::loader::select_variant(kAllTargets, mi300).chosen->key == "rocm5.2-gfx942-abi1-x86_64-linux");
  mi300.gpus[0].arch = "gfx90a";
  auto sel = kh::loader::select_variant(kAllTargets, mi300);
  CHECK(sel.chosen->key == "cpu-x86_64_v3-abi1-x86_64-linux");
  CHECK(verdict_for(sel, "rocm5.2-gfx942-abi1-x86_64-linux").reason.find("gfx90a") != std::string::npos);
}

TEST_CASE("the ROCm probe reads gfx targets from a KFD topology tree") {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(KH_TEST_BINARY_DIR) / "test-work" / "kfd-topology";
  fs::remove_all(root);
  fs::create_directories(root / "0");
  fs::create_directories(root / "1");
  std::ofstream(root / "0" / "properties") << "cpu_cores_count 64\ngfx_target_version 0\n";
  std::ofstream(root / "1" / "properties") << "simd_count 1216\ngfx_target_version 90402\n";
  std::ofstream(root / "1" / "name") << "aqua_vanjaram\n";
  HostFacts facts;
  kh::loader::probe_rocm(&facts, root.string());
  REQUIRE(facts.gpus.size() == 1);
  CHECK(facts.gpus[0].arch == "gfx942");
  CHECK(facts.gpus[0].name == "aqua_vanjaram");
  HostFacts none;
  kh::loader::probe_rocm(&none, (root / "missing").string());
  CHECK(none.gpus.empty());
  CHECK(none.rocm_status.find("no ROCm") != std::string::npos);
  fs::remove_all(root);
}

TEST_CASE("the ROCm probe numbers GPUs in node order and applies ROCR/HIP_VISIBLE_DEVICES") {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(KH_TEST_BINARY_DIR) / "test-work" / "kfd-topology-order";
  fs::remove_all(root);
  // readdir order is the filesystem's; node 10 must come after node 2.
  for (const auto& [node, version, name] : {std::tuple<const char*, const char*, const char*>{"10", "90010", "second"},
                                            {"2", "90402", "first"},
                                            {"0", "0", "cpu"}}) {
    fs::create_directories(root / node);
    std::ofstream(root / node / "properties") << "gfx_target_version " << version << "\n";
    std::ofstream(root / node / "name") << name << "\n";
  }
  HostFacts all;
  kh::loader::probe_rocm(&all, root.string());
  REQUIRE(all.gpus.size() == 2);
  CHECK(all.gpus[0].name == "first");
  CHECK(all.gpus[0].arch == "gfx942");
  CHECK(all.gpus[1].arch == "gfx90a");
  CHECK(all.gpus[1].index == 1);
  fs::remove_all(root);
  // The visible-device lists, on the probe's GPUs (apart: HIP runtimes read them too, and
  // Debian's, which the probe opens for its version, leaks when one names no device it has).
  std::vector<kh::loader::GpuDevice> gpus = all.gpus;
  ::setenv("HIP_VISIBLE_DEVICES", "1", 1);
  CHECK(kh::loader::apply_visible_rocm_devices(&gpus));
  REQUIRE(gpus.size() == 1);
  CHECK(gpus[0].arch == "gfx90a");
  CHECK(gpus[0].index == 0);
  gpus = all.gpus;
  ::setenv("HIP_VISIBLE_DEVICES", "GPU-4c1d0a5a", 1);  // a UUID: not read, every GPU stays
  CHECK_FALSE(kh::loader::apply_visible_rocm_devices(&gpus));
  CHECK(gpus.size() == 2);
  ::unsetenv("HIP_VISIBLE_DEVICES");
  ::setenv("ROCR_VISIBLE_DEVICES", "1,0", 1);
  gpus = all.gpus;
  CHECK(kh::loader::apply_visible_rocm_devices(&gpus));
  ::unsetenv("ROCR_VISIBLE_DEVICES");
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[0].arch == "gfx90a");
  CHECK(gpus[1].index == 1);
}

TEST_CASE("the CUDA probe says what it found and never fails") {
  HostFacts facts;
  kh::loader::probe_cuda(&facts);
  CHECK_FALSE(facts.cuda_status.empty());
  for (const auto& g : facts.gpus) CHECK(g.backend == kh::platform::Backend::Cuda);
}

namespace {
VariantEntry entry_needing_glibc(const std::string& key, const std::string& glibc) {
  VariantEntry e = entry(key);
  e.glibc = glibc;
  return e;
}
HostFacts with_glibc(HostFacts h, int major, int minor) {
  h.glibc_major = major;
  h.glibc_minor = minor;
  return h;
}
}  // namespace

TEST_CASE("a build whose glibc floor is newer than the host's is refused, saying both versions") {
  const HostFacts bullseye = with_glibc(HostFacts{"x86_64", "linux", 3}, 2, 31);
  const std::vector<VariantEntry> offered = {entry_needing_glibc("cpu-x86_64_v3-abi1-x86_64-linux", "2.36"),
                                             entry_needing_glibc("cpu-x86_64-abi1-x86_64-linux", "2.17")};
  auto sel = kh::loader::select_variant(offered, bullseye);
  REQUIRE(sel.chosen != nullptr);
  CHECK(sel.chosen->key == "cpu-x86_64-abi1-x86_64-linux");  // the better ISA level loses to the floor
  const auto& v3 = verdict_for(sel, "cpu-x86_64_v3-abi1-x86_64-linux");
  CHECK_FALSE(v3.compatible);
  CHECK(v3.reason == "needs glibc 2.36, this machine has 2.31");

  SUBCASE("a GPU build is held to the same floor") {
    HostFacts h200 = with_glibc(with_cuda_gpu(9, 0, 13, 0), 2, 31);
    const std::vector<VariantEntry> gpu = {entry_needing_glibc("cuda13.0-sm90a-abi1-x86_64-linux", "2.36"),
                                           entry_needing_glibc("cpu-x86_64-abi1-x86_64-linux", "2.2.5")};
    auto s = kh::loader::select_variant(gpu, h200);
    CHECK(s.chosen->key == "cpu-x86_64-abi1-x86_64-linux");
    CHECK(verdict_for(s, "cuda13.0-sm90a-abi1-x86_64-linux").reason == "needs glibc 2.36, this machine has 2.31");
  }
  SUBCASE("the refusal is in the no-compatible-build error") {
    const std::vector<VariantEntry> only = {entry_needing_glibc("cpu-x86_64-abi1-x86_64-linux", "2.36")};
    try {
      kh::loader::choose_variant(only, bullseye, {}, "", "org/pkg 1.0.0");
      FAIL("chose a build whose glibc floor is too new");
    } catch (const kh::StatusError& e) {
      CHECK(e.status() == KH_ERROR_NO_COMPATIBLE_VARIANT);
      CHECK(std::string(e.what()).find("cpu-x86_64-abi1-x86_64-linux: needs glibc 2.36, this machine has 2.31") !=
            std::string::npos);
    }
  }
  SUBCASE("--target / KH_TARGET (a forced key) ignores host facts, the floor included") {
    const std::vector<VariantEntry> only = {entry_needing_glibc("cpu-x86_64-abi1-x86_64-linux", "2.36")};
    CHECK(kh::loader::choose_variant(only, bullseye, {}, "cpu-x86_64-abi1-x86_64-linux", "x").glibc == "2.36");
  }
}

TEST_CASE("a glibc floor equal to or older than the host's is accepted; none recorded is no floor") {
  const HostFacts bookworm = with_glibc(HostFacts{"x86_64", "linux", 3}, 2, 36);
  for (const char* floor : {"2.36", "2.34", "2.9", "2.2.5", ""}) {
    CAPTURE(floor);
    const std::vector<VariantEntry> offered = {entry_needing_glibc("cpu-x86_64_v3-abi1-x86_64-linux", floor)};
    auto sel = kh::loader::select_variant(offered, bookworm);
    REQUIRE(sel.chosen != nullptr);
    CHECK(sel.verdicts[0].reason.find("glibc") == std::string::npos);
  }
  // Numeric, not textual: 2.4 is older than 2.36, 2.40 newer.
  auto newer = kh::loader::select_variant({entry_needing_glibc("cpu-x86_64-abi1-x86_64-linux", "2.40")}, bookworm);
  CHECK(newer.chosen == nullptr);
  CHECK(newer.verdicts[0].reason == "needs glibc 2.40, this machine has 2.36");
  CHECK(kh::loader::select_variant({entry_needing_glibc("cpu-x86_64-abi1-x86_64-linux", "2.4")}, bookworm).chosen);
}

TEST_CASE("an unreadable glibc floor (an entry not from the strict parser) refuses the build") {
  const HostFacts host = with_glibc(HostFacts{"x86_64", "linux", 3}, 2, 36);
  auto sel = kh::loader::select_variant({entry_needing_glibc("cpu-x86_64-abi1-x86_64-linux", "two")}, host);
  CHECK(sel.chosen == nullptr);
  CHECK(sel.verdicts[0].reason.find("glibc floor 'two'") != std::string::npos);
}
