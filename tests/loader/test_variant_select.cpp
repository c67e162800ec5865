// Variant keys and the choice of a build for a machine.
#include <doctest/doctest.h>

#include "kh/registry/status_error.hpp"
#include "variant_key.hpp"
#include "variant_select.hpp"

using kh::loader::HostFacts;
using kh::registry::VariantEntry;

namespace {
VariantEntry entry(const std::string& key) {
  VariantEntry e;
  e.key = key;
  return e;
}
}  // namespace

TEST_CASE("variant keys parse and print back") {
  for (const char* text : {"cuda13.0-sm90a-abi1-x86_64-linux", "rocm6.2-gfx942-abi1-x86_64-linux",
                           "cpu-x86_64_v3-abi1-x86_64-linux"}) {
    auto key = kh::loader::parse_variant_key(text);
    REQUIRE(key);
    CHECK(kh::loader::to_string(*key) == text);
  }
  auto cuda = kh::loader::parse_variant_key("cuda13.0-sm80-abi1-x86_64-linux");
  CHECK(cuda->backend == "cuda");
  CHECK(cuda->backend_version == "13.0");
  CHECK(cuda->arch == "sm80");
  CHECK(cuda->abi_major == 1);
  for (const char* bad : {"", "cpu", "cpu-x86_64-abi1-x86_64", "cuda-sm80-abi1-x86_64-linux", "cpu13-x86_64-abi1-x86_64-linux",
                          "cpu-x86_64-abiX-x86_64-linux", "CPU-x86_64-abi1-x86_64-linux", "cpu-x86_64-abi1-x86_64-linux-extra"}) {
    CAPTURE(bad);
    CHECK_FALSE(kh::loader::parse_variant_key(bad));
  }
}

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
    kh::loader::choose_variant(offered, host, "", "org/pkg 1.0.0");
    FAIL("chose an incompatible build");
  } catch (const kh::StatusError& e) {
    CHECK(e.status() == KH_ERROR_NO_COMPATIBLE_VARIANT);
    const std::string msg = e.what();
    CHECK(msg.find("org/pkg 1.0.0") != std::string::npos);
    CHECK(msg.find("cpu-x86_64_v4-abi1-x86_64-linux") != std::string::npos);
    CHECK(msg.find("cuda13.0-sm90a-abi1-x86_64-linux") != std::string::npos);
  }
  CHECK(kh::loader::choose_variant(offered, host, "cuda13.0-sm90a-abi1-x86_64-linux", "x").key ==
        "cuda13.0-sm90a-abi1-x86_64-linux");
  CHECK_THROWS_AS(kh::loader::choose_variant(offered, host, "cpu-x86_64-abi1-x86_64-linux", "x"), kh::StatusError);
}
