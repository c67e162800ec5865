// The ABI check of build-matrix/abi_check against fixture libraries that each break one rule
// (built by tests/build_matrix/CMakeLists.txt), and its device-code parsers on known bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kh/abi_check/abi_check.hpp"

using kh::abi_check::check_library;
using kh::abi_check::GpuCode;
using kh::abi_check::Policy;
using kh::abi_check::Report;

namespace {

const std::string kFixtures = KH_ABI_FIXTURE_DIR;
const std::string kCpu = "cpu-x86_64-abi1-x86_64-linux";
const std::string kSm80 = "cuda13.0-sm80-abi1-x86_64-linux";
const std::string kSm90a = "cuda13.0-sm90a-abi1-x86_64-linux";
const std::string kSm100f = "cuda13.0-sm100f-abi1-x86_64-linux";
const std::string kSm120f = "cuda13.0-sm120f-abi1-x86_64-linux";
const std::string kGfx942 = "rocm5.2-gfx942-abi1-x86_64-linux";

std::string fixture(const std::string& name) { return kFixtures + "/lib" + name + ".so"; }

Report check(const std::string& lib, const std::string& variant, const std::string& max_glibc = "",
             bool allow_libstdcxx = false) {
  Policy p;
  p.variant = variant;
  p.max_glibc = max_glibc;
  p.allow_libstdcxx = allow_libstdcxx;
  return check_library(lib, p);
}

// The rules a report names, in order.
std::vector<std::string> rules(const Report& r) {
  std::vector<std::string> out;
  for (const auto& v : r.violations) out.push_back(v.rule);
  return out;
}

bool names_rule(const Report& r, const std::string& rule, const std::string& text) {
  return std::any_of(r.violations.begin(), r.violations.end(), [&](const kh::abi_check::Violation& v) {
    return v.rule == rule && v.message.find(text) != std::string::npos;
  });
}

void append_u16(std::string& s, uint16_t v) { s.append(reinterpret_cast<const char*>(&v), 2); }
void append_u32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
void append_u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }

// A fatbin container in the layout nvcc writes, with one entry per (kind, arch, flags).
struct FatbinEntry {
  uint16_t kind;
  uint32_t arch;
  uint64_t flags;
};
std::string make_fatbin(const std::vector<FatbinEntry>& entries) {
  std::string body;
  for (const FatbinEntry& e : entries) {
    const std::string payload(16, '\x7f');
    append_u16(body, e.kind);
    append_u16(body, 0x0101);
    append_u32(body, 0x40);                 // entry header size
    append_u64(body, payload.size());       // payload size
    append_u32(body, 0);                    // compressed size
    append_u32(body, 0);
    append_u16(body, 8);                    // minor
    append_u16(body, 1);                    // major
    append_u32(body, e.arch);
    append_u32(body, 0);                    // name offset
    append_u32(body, 0);                    // name size
    append_u64(body, e.flags);
    append_u64(body, 0);
    append_u64(body, 0);                    // decompressed size
    body += payload;
  }
  std::string out;
  append_u32(out, 0xBA55ED50u);
  append_u16(out, 1);
  append_u16(out, 16);
  append_u64(out, body.size());
  return out + body;
}

// The first bytes of an AMDGPU HSA code object: e_ident with ELFOSABI_AMDGPU_HSA (64) and
// the code-object version's EI_ABIVERSION (2: v4, 3: v5, 4: v6).
std::string amdgpu_elf_ident(int abi_version) {
  std::string ident("\x7f" "ELF\x02\x01\x01", 7);
  ident += static_cast<char>(64);
  ident += static_cast<char>(abi_version);
  ident.resize(16, '\0');
  return ident;
}

// A clang offload bundle holding one entry per triple (host entries are empty), each device
// entry an AMDGPU code object of EI_ABIVERSION `abi_version` (0: bytes that are not one).
std::string make_bundle(const std::vector<std::string>& triples, int abi_version = 2) {
  std::string header = "__CLANG_OFFLOAD_BUNDLE__";
  append_u64(header, triples.size());
  size_t header_size = header.size();
  for (const std::string& t : triples) header_size += 24 + t.size();
  std::string payloads;
  std::string entries;
  for (const std::string& t : triples) {
    const std::string code = t.rfind("host-", 0) == 0 ? ""
                             : abi_version == 0   ? std::string("\x7f" "ELF-code-object", 16)
                                                  : amdgpu_elf_ident(abi_version);
    append_u64(entries, header_size + payloads.size());
    append_u64(entries, code.size());
    append_u64(entries, t.size());
    entries += t;
    payloads += code;
  }
  return header + entries + payloads;
}

std::vector<GpuCode> parse_fatbin(const std::string& bytes, bool& ok) {
  std::vector<GpuCode> out;
  std::string error;
  ok = kh::abi_check::parse_cuda_fatbin(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), out, error);
  return out;
}

// Copies the good fixture and adds a .hip_fatbin section holding `bundle`, as clang would.
std::string with_hip_section(const std::string& bundle, const std::string& name) {
  const std::string section = kFixtures + "/" + name + ".bundle";
  std::ofstream(section, std::ios::binary) << bundle;
  const std::string out = kFixtures + "/lib" + name + ".so";
  const std::string cmd = std::string("'") + KH_OBJCOPY + "' --add-section .hip_fatbin='" + section + "' '" +
                          fixture("abi_fixture_good") + "' '" + out + "'";
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, cmd);
  return out;
}

}  // namespace

TEST_CASE("abi check: a library that meets the rules") {
  const Report r = check(fixture("abi_fixture_good"), kCpu, "2.36");
  CAPTURE(kh::abi_check::report_text(r));
  CHECK(r.ok());
  CHECK(r.exports == std::vector<std::string>{"kh_kernel_negotiate"});
  CHECK(std::find(r.needed.begin(), r.needed.end(), "libc.so.6") != r.needed.end());
  CHECK_FALSE(r.newest_glibc.empty());
  CHECK(r.gpu_code.empty());
  CHECK(r.library == "libabi_fixture_good.so");  // a base name, never a machine path

  const std::string json = kh::abi_check::report_json(r);
  CHECK(json.find("\"exports\"") != std::string::npos);
  CHECK(json.find("\"glibc\": \"" + r.newest_glibc + "\"") != std::string::npos);
  CHECK(json.find(kFixtures) == std::string::npos);
}

TEST_CASE("abi check: each broken rule is refused, naming the rule") {
  SUBCASE("an extra export") {
    const Report r = check(fixture("abi_fixture_extra_export"), kCpu);
    CHECK(rules(r) == std::vector<std::string>{"exports"});
    CHECK(names_rule(r, "exports", "kh_fixture_helper"));
  }
  SUBCASE("a glibc newer than allowed") {
    const Report r = check(fixture("abi_fixture_new_glibc"), kCpu, "2.34");
    CHECK(kh::abi_check::compare_versions(r.newest_glibc, "2.36") >= 0);  // arc4random
    CHECK(rules(r) == std::vector<std::string>{"glibc"});
    CHECK(names_rule(r, "glibc", "newer than the allowed GLIBC_2.34"));
    CHECK(check(fixture("abi_fixture_new_glibc"), kCpu, r.newest_glibc).ok());
  }
  SUBCASE("a dynamic CUDA runtime") {
    const Report r = check(fixture("abi_fixture_cudart"), kCpu);
    CHECK(names_rule(r, "cudart", "libcudart.so.13"));
    CHECK(names_rule(r, "cudart", "-cudart static"));
  }
  SUBCASE("a dynamic libstdc++, unless allowed") {
    const Report r = check(fixture("abi_fixture_libstdcxx"), kCpu);
    CHECK(rules(r) == std::vector<std::string>{"needed"});
    CHECK(names_rule(r, "needed", "libstdc++"));
    CHECK(check(fixture("abi_fixture_libstdcxx"), kCpu, "", true).ok());
  }
  SUBCASE("a CUDA variant without device code") {
    const Report r = check(fixture("abi_fixture_good"), kSm80);
    CHECK(names_rule(r, "gpu-arch", "carries no sass sm_80"));
    CHECK(names_rule(r, "gpu-arch", "carries no ptx compute_80"));
  }
  SUBCASE("not a library, a malformed key, a missing file") {
    CHECK(rules(check(KH_TEST_SOURCE_DIR "/README.md", kCpu)) == std::vector<std::string>{"elf"});
    CHECK(rules(check(fixture("abi_fixture_good"), "cuda-sm80")) == std::vector<std::string>{"variant"});
    CHECK(rules(check(kFixtures + "/missing.so", kCpu)) == std::vector<std::string>{"elf"});
  }
}

TEST_CASE("abi check: CUDA device code from nvcc") {
  if (!KH_ABI_FIXTURES_CUDA) {
    MESSAGE("nvcc was not found when this was configured: CUDA fixtures skipped");
    return;
  }
  SUBCASE("sm_80 SASS + compute_80 PTX is the sm80 variant, and nothing else") {
    const Report r = check(fixture("abi_fixture_cuda_sm80"), kSm80);
    CAPTURE(kh::abi_check::report_text(r));
    CHECK(r.ok());
    CHECK(r.gpu_code == std::vector<GpuCode>{{"ptx", "compute_80"}, {"sass", "sm_80"}});
    CHECK(std::none_of(r.needed.begin(), r.needed.end(), [](const std::string& n) { return n.find("cudart") != std::string::npos; }));
    CHECK(names_rule(check(fixture("abi_fixture_cuda_sm80"), kSm90a), "gpu-arch", "carries ptx compute_80"));
  }
  SUBCASE("sm_75 is refused for sm80") {
    const Report r = check(fixture("abi_fixture_cuda_sm75"), kSm80);
    CHECK(names_rule(r, "gpu-arch", "carries sass sm_75"));
    CHECK(names_rule(r, "gpu-arch", "carries no sass sm_80"));
  }
  SUBCASE("sm90a needs the arch-specific sm_90a, not plain sm_90") {
    const Report a = check(fixture("abi_fixture_cuda_sm90a"), kSm90a);
    CAPTURE(kh::abi_check::report_text(a));
    CHECK(a.ok());
    CHECK(a.gpu_code == std::vector<GpuCode>{{"sass", "sm_90a"}});
    const Report plain = check(fixture("abi_fixture_cuda_sm90"), kSm90a);
    CHECK(names_rule(plain, "gpu-arch", "carries sass sm_90 code"));
  }
  SUBCASE("a CPU variant carries no device code") {
    CHECK(names_rule(check(fixture("abi_fixture_cuda_sm80"), kCpu), "gpu-arch", "a CPU variant carries no device code"));
  }
  SUBCASE("Blackwell family builds: SASS sm_100f / sm_120f + plain PTX") {
    const Report b = check(fixture("abi_fixture_cuda_sm100f"), kSm100f);
    CAPTURE(kh::abi_check::report_text(b));
    CHECK(b.ok());
    CHECK(b.gpu_code == std::vector<GpuCode>{{"ptx", "compute_100"}, {"sass", "sm_100f"}});
    CHECK(check(fixture("abi_fixture_cuda_sm120f"), kSm120f).ok());
    // Family SASS is not plain SASS: the plain key refuses it, and the family key the plain fixture.
    CHECK(names_rule(check(fixture("abi_fixture_cuda_sm100f"), "cuda13.0-sm100-abi1-x86_64-linux"), "gpu-arch",
                     "carries sass sm_100f"));
    CHECK(names_rule(check(fixture("abi_fixture_cuda_sm120f"), kSm100f), "gpu-arch", "carries no sass sm_100f"));
  }
}

TEST_CASE("abi check: HIP offload bundles") {
  SUBCASE("gfx942 code object") {
    const std::string lib = with_hip_section(
        make_bundle({"host-x86_64-unknown-linux-gnu-", "hipv4-amdgcn-amd-amdhsa--gfx942"}), "abi_fixture_gfx942");
    const Report r = check(lib, kGfx942);
    CAPTURE(kh::abi_check::report_text(r));
    CHECK(r.ok());
    CHECK(r.gpu_code == std::vector<GpuCode>{{"amdgcn", "gfx942", 4}});
    // What pack records: code-object v4, which the HIP shim runs under HIP 5.0 and newer.
    CHECK(r.code_object == 4);
    CHECK(r.runtime == "5.0");
    CHECK(kh::abi_check::report_json(r).find("\"runtime\": \"5.0\"") != std::string::npos);
  }
  SUBCASE("code-object v6 needs ROCm 6.3; mixed versions are refused") {
    const Report v6 = check(with_hip_section(make_bundle({"hipv4-amdgcn-amd-amdhsa--gfx942"}, 4), "abi_fixture_gfx942_v6"),
                            kGfx942);
    CHECK(v6.ok());
    CHECK(v6.code_object == 6);
    CHECK(v6.runtime == "6.3");
    std::string mixed = make_bundle({"hipv4-amdgcn-amd-amdhsa--gfx942"}, 2);
    mixed.resize(4096, '\0');
    mixed += make_bundle({"hipv4-amdgcn-amd-amdhsa--gfx942"}, 3);
    CHECK(names_rule(check(with_hip_section(mixed, "abi_fixture_gfx942_mixed"), kGfx942), "gpu-arch", "are mixed"));
    CHECK(names_rule(check(with_hip_section(make_bundle({"hipv4-amdgcn-amd-amdhsa--gfx942"}, 0), "abi_fixture_gfx942_junk"),
                           kGfx942),
                     "gpu-arch", "not an AMDGPU HSA ELF"));
  }
  SUBCASE("a target id with features names gfx942, but runs on fewer of them than the key promises") {
    const std::string lib = with_hip_section(make_bundle({"hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"}),
                                             "abi_fixture_gfx942_features");
    const Report r = check(lib, kGfx942);
    CHECK(rules(r) == std::vector<std::string>{"gpu-arch"});
    CHECK(names_rule(r, "gpu-arch", "run only where those features are set"));
  }
  SUBCASE("a hard HIP runtime dependency (DT_NEEDED libamdhip64.so.5) is refused") {
    const Report r = check(with_hip_section(make_bundle({"hipv4-amdgcn-amd-amdhsa--gfx942"}), "abi_fixture_hip_pinned_code"),
                           kGfx942);
    CHECK(r.ok());  // the section alone is fine; the pinned soname is what is refused:
    const Report pinned = check(fixture("abi_fixture_hip_pinned"), kGfx942);
    CHECK(names_rule(pinned, "rocm-runtime", "libamdhip64.so.5"));
    CHECK(names_rule(pinned, "rocm-runtime", "kh_add_hip_kernel_library"));
  }
  SUBCASE("the wrong gfx arch is refused") {
    const std::string lib = with_hip_section(make_bundle({"hipv4-amdgcn-amd-amdhsa--gfx90a"}), "abi_fixture_gfx90a");
    const Report r = check(lib, kGfx942);
    CHECK(names_rule(r, "gpu-arch", "carries amdgcn gfx90a"));
    CHECK(names_rule(r, "gpu-arch", "carries no amdgcn gfx942"));
  }
  SUBCASE("two bundles, the second padded, as a linked library holds them") {
    std::string two = make_bundle({"hipv4-amdgcn-amd-amdhsa--gfx942"});
    two.resize(4096, '\0');
    two += make_bundle({"hipv4-amdgcn-amd-amdhsa--gfx942"});
    std::vector<GpuCode> out;
    std::string error;
    CHECK(kh::abi_check::parse_offload_bundles(reinterpret_cast<const unsigned char*>(two.data()), two.size(), out, error));
    CHECK(out.size() == 2);
  }
  SUBCASE("garbage is an error, not a pass") {
    const std::string junk = "not a bundle at all";
    std::vector<GpuCode> out;
    std::string error;
    CHECK_FALSE(kh::abi_check::parse_offload_bundles(reinterpret_cast<const unsigned char*>(junk.data()), junk.size(), out, error));
    CHECK(error.find("__CLANG_OFFLOAD_BUNDLE__") != std::string::npos);
  }
}

TEST_CASE("abi check: fatbin parser") {
  bool ok = false;
  SUBCASE("kinds, archs and the 'a' and 'f' flags") {
    // Flags as nvcc 13.0 writes them (measured): 0x100000 arch-specific, 0x200000 family.
    const auto code = parse_fatbin(
        make_fatbin({{2, 80, 0x11}, {1, 80, 0x8011}, {2, 90, 0x100011}, {2, 100, 0x1200011}, {1, 100, 0x208011}}), ok);
    CHECK(ok);
    CHECK(code == std::vector<GpuCode>{{"sass", "sm_80"}, {"ptx", "compute_80"}, {"sass", "sm_90a"}, {"sass", "sm_100f"},
                                       {"ptx", "compute_100f"}});
  }
  SUBCASE("containers separated by zero padding") {
    std::string two = make_fatbin({{2, 80, 0x11}});
    two.resize((two.size() + 7) / 8 * 8 + 8, '\0');
    two += make_fatbin({{1, 80, 0x11}});
    CHECK(parse_fatbin(two, ok).size() == 2);
    CHECK(ok);
  }
  SUBCASE("truncated or foreign bytes are errors") {
    std::string cut = make_fatbin({{2, 80, 0x11}});
    cut.resize(cut.size() - 8);
    parse_fatbin(cut, ok);
    CHECK_FALSE(ok);
    parse_fatbin(std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10", 16), ok);
    CHECK_FALSE(ok);
  }
  SUBCASE("version order") {
    CHECK(kh::abi_check::compare_versions("2.2.5", "2.34") < 0);
    CHECK(kh::abi_check::compare_versions("2.36", "2.36") == 0);
    CHECK(kh::abi_check::compare_versions("2.4", "2.34") < 0);
  }
}
