// One selection, three readers (issue 40, item 1): `kernels get --explain`, `kernels doctor`
// and kh_load_kernel give the same choice and the same reasons for the same machine and
// options, because all three read what the one selection function (loader::select_build,
// the chooser of every resolution) answers. Cases: an exact build (an H100 and an sm90a
// build), a build through its PTX (a B200 and the sm80 build), a forced build (--target /
// kh_load_options.variant), and a machine where nothing fits (no GPU, GPU builds only). The
// machines are described (KH_TEST_HOST_FACTS); the builds are host-compiled stand-ins that
// claim the sm90a and sm80 variants, in a signed file hub.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "kh/kh.h"
#include "multi_gpu_hub.hpp"

namespace {

const char* kSpec = kh_test::kMultiGpuSpec;
const char* kSm90a = kh_test::kMultiGpuSm90a;
const char* kSm80 = kh_test::kMultiGpuSm80;

using Hub = kh_test::MultiGpuHub;
using kh_test::DescribedMachine;


struct Output {
  int status = 0;
  std::string text;
};
Output run(const std::string& command) {
  Output out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.text.append(buf, n);
  out.status = ::pclose(pipe);
  return out;
}

// What one reader says: the chosen build and "key: reason" for every build, in order.
struct Verdicts {
  std::string chosen;
  std::vector<std::string> lines;
};

Verdicts from_json(const nlohmann::json& selection) {
  Verdicts v;
  v.chosen = selection["chosen"].is_null() ? "" : selection["chosen"].get<std::string>();
  for (const auto& b : selection["builds"]) v.lines.push_back(b["variant"].get<std::string>() + ": " + b["reason"].get<std::string>());
  return v;
}

struct Readers {
  const Hub& hub;
  std::string kernels = std::string("'") + KH_KERNELS_EXE + "' ";
  std::string where() const { return " --hub '" + hub.url + "' --cache '" + hub.cache + "'"; }

  Verdicts explain(const std::string& target = "") const {
    const Output o = run(kernels + "get " + kSpec + " --explain --json" + where() + (target.empty() ? "" : " --target " + target));
    REQUIRE_MESSAGE(o.status == 0, o.text);
    return from_json(nlohmann::json::parse(o.text)["explain"][0]["selection"]);
  }
  Verdicts doctor() const {
    const Output o = run(kernels + "doctor " + kSpec + " --json" + where());
    REQUIRE_MESSAGE(o.status == 0, o.text);
    return from_json(nlohmann::json::parse(o.text)["packages"][0]["devices"][0]);
  }
  // kh_load_kernel's choice, or "" and its error.
  std::string load(std::string* error, const char* variant = nullptr) const {
    kh_load_options o{};
    o.struct_size = sizeof o;
    o.hub = hub.url.c_str();
    o.cache_dir = hub.cache.c_str();
    o.variant = variant;
    kh_kernel* k = nullptr;
    if (kh_load_kernel(kSpec, &o, &k) != KH_OK) {
      *error = kh_last_error();
      return "";
    }
    const std::string chosen = kh_kernel_variant(k);
    kh_kernel_release(k);
    return chosen;
  }
  // get --explain's verdicts, checked to be doctor's: the same choice and the same lines.
  Verdicts explained_as_doctored() const {
    const Verdicts explained = explain(), doctored = doctor();
    CHECK(doctored.chosen == explained.chosen);
    CHECK(doctored.lines == explained.lines);
    return explained;
  }
};

}  // namespace

TEST_CASE("get --explain, doctor and kh_load_kernel read one selection") {
  Hub hub;
  Readers readers{hub};
  std::string error;

  SUBCASE("exact: an H100 gets the sm90a build") {
    DescribedMachine machine(R"({"cuda_driver": "13.0", "glibc": "2.39", "x86_isa_level": 3,
      "gpus": [{"backend": "cuda", "name": "NVIDIA H100 80GB HBM3", "arch": "sm90"}]})");
    const Verdicts explained = readers.explained_as_doctored();
    CHECK(explained.chosen == kSm90a);
    CHECK(readers.load(&error) == explained.chosen);
  }
  SUBCASE("through PTX: a B200 gets the sm80 build, sm90a's SASS refused") {
    DescribedMachine machine(R"({"cuda_driver": "13.0", "glibc": "2.39", "x86_isa_level": 3,
      "gpus": [{"backend": "cuda", "name": "NVIDIA B200", "arch": "sm100"}]})");
    const Verdicts explained = readers.explained_as_doctored();
    CHECK(explained.chosen == kSm80);
    REQUIRE(explained.lines.size() == 2);
    CHECK(explained.lines[0].find("PTX") != std::string::npos);
    CHECK(readers.load(&error) == explained.chosen);
  }
  SUBCASE("forced: --target and kh_load_options.variant take the sm80 build on an H100") {
    DescribedMachine machine(R"({"cuda_driver": "13.0", "glibc": "2.39", "x86_isa_level": 3,
      "gpus": [{"backend": "cuda", "name": "NVIDIA H100 80GB HBM3", "arch": "sm90"}]})");
    const Verdicts explained = readers.explain(kSm80);
    CHECK(explained.chosen == kSm80);
    CHECK(explained.lines == readers.doctor().lines);  // the verdicts are the machine's, forced or not
    CHECK(readers.load(&error, kSm80) == kSm80);
  }
  SUBCASE("refused: no GPU, and only GPU builds: the same reasons in all three") {
    DescribedMachine machine(R"({"glibc": "2.39", "x86_isa_level": 3, "gpus": []})");
    const Verdicts doctored = readers.doctor();
    CHECK(doctored.chosen.empty());
    REQUIRE(doctored.lines.size() == 2);
    const Output text = run(readers.kernels + "get " + kSpec + " --explain" + readers.where());
    CHECK(text.status != 0);
    CHECK(readers.load(&error).empty());
    for (const std::string& line : doctored.lines) {
      CHECK_MESSAGE(text.text.find("refused  " + line) != std::string::npos, text.text);
      CHECK_MESSAGE(error.find(line) != std::string::npos, error);
    }
  }
}
