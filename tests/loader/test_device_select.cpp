// Selection per GPU on machines with several (described as tests describe machines: host
// facts JSON, the shape `kernels doctor --json` prints), Blackwell and family builds, and
// the ROCm runtime and code-object floors.
#include <doctest/doctest.h>

#include "kh/loader/host_facts_json.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/loader/variant_select.hpp"

using kh::loader::DeviceRequest;
using kh::loader::HostFacts;
using kh::loader::Refusal;
using kh::registry::VariantEntry;

namespace {

constexpr int32_t kCuda = 2, kRocm = 10;

VariantEntry entry(const std::string& key) {
  VariantEntry e;
  e.key = key;
  return e;
}

HostFacts machine(const std::vector<nlohmann::json>& gpus, const std::string& cuda_driver = "13.0",
                  const std::string& rocm = "0.0") {
  nlohmann::json doc = {{"cpu", "x86_64"}, {"os", "linux"}, {"x86_isa_level", 3}, {"glibc", "2.39"},
                        {"cuda_driver", cuda_driver}, {"rocm", rocm}};
  doc["gpus"] = gpus;
  return kh::loader::host_facts_from_json(doc, "test machine");
}
nlohmann::json gpu(const char* backend, const char* arch, const char* name) {
  return {{"backend", backend}, {"arch", arch}, {"name", name}};
}

// What the build matrix publishes (build-matrix/matrix.json), plus an sm100a build.
const std::vector<VariantEntry> kMatrix = {
    entry("cpu-x86_64-abi1-x86_64-linux"),     entry("cpu-x86_64_v3-abi1-x86_64-linux"),
    entry("cuda13.0-sm80-abi1-x86_64-linux"),  entry("cuda13.0-sm90a-abi1-x86_64-linux"),
    entry("cuda13.0-sm100f-abi1-x86_64-linux"), entry("cuda13.0-sm120f-abi1-x86_64-linux"),
    entry("rocm5.2-gfx942-abi1-x86_64-linux")};

std::string chosen(const std::vector<VariantEntry>& builds, const HostFacts& host, DeviceRequest request = {}) {
  const auto sel = kh::loader::select_variant(builds, host, request);
  return sel.chosen ? sel.chosen->key : "(none)";
}

const kh::loader::VariantVerdict& verdict_for(const kh::loader::VariantSelection& sel, const std::string& key) {
  for (const auto& v : sel.verdicts)
    if (v.entry->key == key) return v;
  FAIL("no verdict for " << key);
  return sel.verdicts.front();
}

}  // namespace

TEST_CASE("H100 + A100: each GPU gets its own build") {
  const HostFacts host = machine({gpu("cuda", "sm90", "NVIDIA H100"), gpu("cuda", "sm80", "NVIDIA A100")});
  CHECK(chosen(kMatrix, host, {kCuda, 0}) == "cuda13.0-sm90a-abi1-x86_64-linux");
  CHECK(chosen(kMatrix, host, {kCuda, 1}) == "cuda13.0-sm80-abi1-x86_64-linux");
  CHECK(chosen(kMatrix, host, {0, 1}) == "cuda13.0-sm80-abi1-x86_64-linux");
  // Old hosts (no device in their options) get device 0, as before.
  CHECK(chosen(kMatrix, host) == "cuda13.0-sm90a-abi1-x86_64-linux");
  const auto sel = kh::loader::select_variant(kMatrix, host, {kCuda, 1});
  const auto& hopper = verdict_for(sel, "cuda13.0-sm90a-abi1-x86_64-linux");
  CHECK(hopper.refusal == Refusal::GpuArch);
  CHECK(hopper.reason.find("NVIDIA A100 (cuda device 1, sm80)") != std::string::npos);
  REQUIRE(sel.verdicts[0].device != nullptr);
  CHECK(sel.verdicts[0].device->index == 1);
}

TEST_CASE("sm90 + sm120 (an H100 beside an RTX PRO 6000): Hopper's arch-specific build, Blackwell's family build") {
  const HostFacts host = machine({gpu("cuda", "sm90", "NVIDIA H100"), gpu("cuda", "sm120", "NVIDIA RTX PRO 6000")});
  CHECK(chosen(kMatrix, host, {kCuda, 0}) == "cuda13.0-sm90a-abi1-x86_64-linux");
  const auto sel = kh::loader::select_variant(kMatrix, host, {kCuda, 1});
  REQUIRE(sel.chosen != nullptr);
  CHECK(sel.chosen->key == "cuda13.0-sm120f-abi1-x86_64-linux");
  CHECK(sel.verdicts[0].fit == kh::platform::Fit::Family);
  // Fallbacks on 12.0, best first: PTX of sm100f (newer) before PTX of sm80, then the CPU.
  CHECK(sel.verdicts[1].entry->key == "cuda13.0-sm100f-abi1-x86_64-linux");
  CHECK(sel.verdicts[1].fit == kh::platform::Fit::PtxJit);
  CHECK(sel.verdicts[2].entry->key == "cuda13.0-sm80-abi1-x86_64-linux");
  CHECK(sel.verdicts[3].entry->key == "cpu-x86_64_v3-abi1-x86_64-linux");
  CHECK(verdict_for(sel, "cuda13.0-sm90a-abi1-x86_64-linux").refusal == Refusal::GpuArch);
}

TEST_CASE("CUDA + ROCm in one machine: device type picks the backend") {
  const HostFacts host =
      machine({gpu("cuda", "sm90", "NVIDIA H100"), gpu("rocm", "gfx942", "AMD Instinct MI300X")}, "13.0", "6.2");
  CHECK(chosen(kMatrix, host, {kCuda, 0}) == "cuda13.0-sm90a-abi1-x86_64-linux");
  const auto rocm = kh::loader::select_variant(kMatrix, host, {kRocm, 0});
  CHECK(rocm.chosen->key == "rocm5.2-gfx942-abi1-x86_64-linux");
  CHECK(verdict_for(rocm, "cuda13.0-sm90a-abi1-x86_64-linux").refusal == Refusal::OtherBackend);
  CHECK(verdict_for(rocm, "cuda13.0-sm90a-abi1-x86_64-linux").reason.find("ROCm device 0") != std::string::npos);
  // Any backend's device 0: both GPU builds fit their own device; the CUDA one ranks higher
  // (arch-specific over exact), as an unmodified host saw it before devices were asked for.
  CHECK(chosen(kMatrix, host) == "cuda13.0-sm90a-abi1-x86_64-linux");
}

TEST_CASE("Blackwell: ranking arch-specific > family > exact > same-major SASS > PTX JIT > CPU") {
  const std::vector<VariantEntry> builds = {
      entry("cpu-x86_64_v3-abi1-x86_64-linux"),  entry("cuda13.0-sm80-abi1-x86_64-linux"),
      entry("cuda13.0-sm100-abi1-x86_64-linux"), entry("cuda13.0-sm100f-abi1-x86_64-linux"),
      entry("cuda13.0-sm100a-abi1-x86_64-linux"), entry("cuda13.0-sm103f-abi1-x86_64-linux")};
  SUBCASE("B200 (10.0)") {
    const auto sel = kh::loader::select_variant(builds, machine({gpu("cuda", "sm100", "NVIDIA B200")}));
    std::vector<std::string> order;
    for (const auto& v : sel.verdicts) {
      const size_t dash = v.entry->key.find('-');
      order.push_back(v.entry->key.substr(dash + 1, v.entry->key.find('-', dash + 1) - dash - 1));
    }
    CHECK(order == std::vector<std::string>{"sm100a", "sm100f", "sm100", "sm80", "x86_64_v3", "sm103f"});
    CHECK(sel.verdicts[3].fit == kh::platform::Fit::PtxJit);
    CHECK(verdict_for(sel, "cuda13.0-sm103f-abi1-x86_64-linux").refusal == Refusal::GpuArch);
  }
  SUBCASE("B300 (10.3): the sm103f family build, then sm100f (same family), then plain sm100 SASS") {
    const auto sel = kh::loader::select_variant(builds, machine({gpu("cuda", "sm103", "NVIDIA B300")}));
    CHECK(sel.verdicts[0].entry->key == "cuda13.0-sm103f-abi1-x86_64-linux");
    CHECK(sel.verdicts[1].entry->key == "cuda13.0-sm100f-abi1-x86_64-linux");
    CHECK(sel.verdicts[2].entry->key == "cuda13.0-sm100-abi1-x86_64-linux");
    CHECK(sel.verdicts[2].fit == kh::platform::Fit::SameMajorSass);
    CHECK(verdict_for(sel, "cuda13.0-sm100a-abi1-x86_64-linux").refusal == Refusal::GpuArch);
  }
  SUBCASE("a PTX-only fit needs a driver as new as the toolkit; SASS runs on an older one of the same major") {
    const HostFacts old_driver = machine({gpu("cuda", "sm120", "RTX 5090")}, "13.0");
    const std::vector<VariantEntry> newer = {entry("cuda13.2-sm80-abi1-x86_64-linux"),
                                             entry("cuda13.2-sm120f-abi1-x86_64-linux")};
    const auto sel = kh::loader::select_variant(newer, old_driver);
    CHECK(sel.chosen->key == "cuda13.2-sm120f-abi1-x86_64-linux");
    CHECK(verdict_for(sel, "cuda13.2-sm80-abi1-x86_64-linux").refusal == Refusal::Driver);
  }
}

TEST_CASE("ROCm: the runtime and code-object floors the build records") {
  VariantEntry rocm = entry("rocm5.2-gfx942-abi1-x86_64-linux");
  rocm.runtime = "5.0";
  rocm.code_object = 4;
  const std::vector<VariantEntry> builds = {rocm, entry("cpu-x86_64-abi1-x86_64-linux")};
  for (const char* runtime : {"5.7", "6.0", "6.4", "7.0"}) {
    CAPTURE(runtime);
    CHECK(chosen(builds, machine({gpu("rocm", "gfx942", "MI300X")}, "0.0", runtime)) == rocm.key);
  }
  SUBCASE("without a HIP runtime the GPU build is refused, and the CPU build serves") {
    const auto sel = kh::loader::select_variant(builds, machine({gpu("rocm", "gfx942", "MI300X")}, "0.0", "0.0"));
    CHECK(sel.chosen->key == "cpu-x86_64-abi1-x86_64-linux");
    CHECK(verdict_for(sel, rocm.key).refusal == Refusal::Runtime);
  }
  SUBCASE("a runtime older than the recorded floor") {
    VariantEntry newer = rocm;
    newer.runtime = "6.2";
    const auto sel = kh::loader::select_variant({newer}, machine({gpu("rocm", "gfx942", "MI300X")}, "0.0", "6.0"));
    CHECK(sel.chosen == nullptr);
    CHECK(sel.verdicts[0].reason == "needs HIP runtime 6.2 or newer; this machine's is 6.0");
  }
  SUBCASE("code-object v6 needs ROCm 6.3") {
    VariantEntry v6 = rocm;
    v6.code_object = 6;
    const auto sel = kh::loader::select_variant({v6}, machine({gpu("rocm", "gfx942", "MI300X")}, "0.0", "6.2"));
    CHECK(sel.chosen == nullptr);
    CHECK(sel.verdicts[0].refusal == Refusal::CodeObject);
    CHECK(chosen({v6}, machine({gpu("rocm", "gfx942", "MI300X")}, "0.0", "6.3")) == v6.key);
  }
  SUBCASE("builds published before the floor was recorded use the key's version") {
    const auto sel =
        kh::loader::select_variant({entry("rocm6.2-gfx942-abi1-x86_64-linux")}, machine({gpu("rocm", "gfx942", "x")}, "0.0", "5.7"));
    CHECK(sel.chosen == nullptr);
    CHECK(sel.verdicts[0].refusal == Refusal::Runtime);
  }
  SUBCASE("another processor") {
    const auto sel = kh::loader::select_variant(builds, machine({gpu("rocm", "gfx90a", "MI250X")}, "0.0", "6.2"));
    CHECK(verdict_for(sel, rocm.key).refusal == Refusal::GpuArch);
    CHECK(verdict_for(sel, rocm.key).reason.find("gfx90a") != std::string::npos);
  }
}

TEST_CASE("device requests: parsing and the devices a machine has") {
  CHECK(*kh::loader::parse_device_request("1") == DeviceRequest{0, 1});
  CHECK(*kh::loader::parse_device_request("cuda:1") == DeviceRequest{kCuda, 1});
  CHECK(*kh::loader::parse_device_request("rocm:0") == DeviceRequest{kRocm, 0});
  for (const char* bad : {"", "x", "-1", "cuda:", "cpu:0", "metal:0", "1.5", "cuda:99999"}) {
    CAPTURE(bad);
    CHECK_FALSE(kh::loader::parse_device_request(bad));
  }
  const HostFacts two = machine({gpu("cuda", "sm90", "H100"), gpu("cuda", "sm80", "A100")});
  CHECK_NOTHROW(kh::loader::check_device_request(two, {kCuda, 1}));
  CHECK_NOTHROW(kh::loader::check_device_request(machine({}), {}));
  for (const DeviceRequest bad : {DeviceRequest{kCuda, 2}, DeviceRequest{kRocm, 1}, DeviceRequest{0, 2},
                                  DeviceRequest{0, -1}, DeviceRequest{1, 0}, DeviceRequest{7, 0}}) {
    CAPTURE(bad.device_type);
    CAPTURE(bad.device_id);
    try {
      kh::loader::check_device_request(two, bad);
      FAIL("accepted a device this machine lacks");
    } catch (const kh::StatusError& e) {
      CHECK(e.status() == KH_ERROR_INVALID_ARGUMENT);
    }
  }
  // choose_variant says which device the refusal is for.
  try {
    kh::loader::choose_variant({entry("cuda13.0-sm90a-abi1-x86_64-linux")}, two, {kCuda, 1}, "", "org/pkg 1.0.0");
    FAIL("sm90a chosen for an A100");
  } catch (const kh::StatusError& e) {
    CHECK(e.status() == KH_ERROR_NO_COMPATIBLE_VARIANT);
    CHECK(std::string(e.what()).find("CUDA device 1") != std::string::npos);
  }
}

TEST_CASE("host facts JSON: what doctor prints reads back, and bad descriptions say what is wrong") {
  const HostFacts host =
      machine({gpu("cuda", "sm90", "H100"), gpu("cuda", "sm120", "RTX"), gpu("rocm", "gfx942", "MI300X")}, "13.0", "6.2");
  const HostFacts again = kh::loader::host_facts_from_json(kh::loader::host_facts_json(host), "round trip");
  REQUIRE(again.gpus.size() == 3);
  CHECK(again.gpu(kh::platform::Backend::Cuda, 1)->major == 12);
  CHECK(again.gpu(kh::platform::Backend::Rocm, 0)->arch == "gfx942");
  CHECK(again.rocm_major == 6);
  CHECK(kh::loader::host_facts_json(again) == kh::loader::host_facts_json(host));
  for (const nlohmann::json& bad : {nlohmann::json::array(), nlohmann::json{{"gpus", {{{"backend", "cpu"}}}}},
                                    nlohmann::json{{"gpus", {{{"backend", "cuda"}, {"arch", "sm90a"}}}}},
                                    nlohmann::json{{"gpus", {{{"backend", "rocm"}, {"arch", "sm90"}}}}},
                                    nlohmann::json{{"cuda_driver", "13"}},
                                    nlohmann::json{{"gpus", {{{"backend", "cuda"}, {"arch", "sm90"}, {"index", 3}}}}}}) {
    CAPTURE(bad.dump());
    CHECK_THROWS_AS(kh::loader::host_facts_from_json(bad, "test"), kh::StatusError);
  }
}
