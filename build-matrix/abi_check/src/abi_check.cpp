// The rules a kernel library must meet before it is packed (see abi_check.hpp), applied to
// the ELF file read here with <elf.h>: sections, .dynsym, .dynamic, .gnu.version(_r).
#include "kh/abi_check/abi_check.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kh/platform/device_code.hpp"
#include "kh/platform/rocm_runtime.hpp"
#include "kh/platform/variant_key.hpp"

namespace kh::abi_check {
namespace {

using platform::VariantKey;

constexpr const char* kEntryPoint = "kh_kernel_negotiate";
constexpr size_t kMaxLibraryBytes = size_t{2} << 30;

// The soname's stem: "libc.so.6" -> "libc", "ld-linux-x86-64.so.2" -> "ld-linux-x86-64".
std::string soname_stem(const std::string& soname) {
  const size_t so = soname.find(".so");
  return so == std::string::npos ? soname : soname.substr(0, so);
}

// Why a DT_NEEDED library is refused; empty when it is allowed.
std::string needed_refusal(const std::string& soname, const Policy& policy, std::string& rule) {
  static const std::set<std::string> base = {"libc", "libm", "libdl", "libpthread", "librt", "libgcc_s"};
  const std::string stem = soname_stem(soname);
  rule = "needed";
  if (base.count(stem) || stem.rfind("ld-linux", 0) == 0) return "";
  if (stem == "libstdc++") {
    if (policy.allow_libstdcxx) return "";
    return "links libstdc++ dynamically (" + soname +
           "); link it statically (-static-libstdc++, as kh_add_kernel_library does) or pass --allow-libstdcxx";
  }
  if (stem == "libamdhip64") {
    rule = "rocm-runtime";
    return "needs " + soname + ": a kernel library must not pin one HIP runtime (it would not load where ROCm " +
           "has another soname); build it with kh_add_hip_kernel_library, whose HIP shim opens the runtime at run time";
  }
  if (stem.rfind("libcudart", 0) == 0) {
    rule = "cudart";
    return "needs " + soname + ": the CUDA runtime must be linked statically (-cudart static, CUDA_RUNTIME_LIBRARY Static)";
  }
  if (stem == "libcuda") {
    rule = "cudart";
    return "needs " + soname + ": the driver must not be a link-time dependency (the static CUDA runtime loads it at run time)";
  }
  return "needs " + soname + ", which is not on the allow-list (libc, libm, libdl, libpthread, librt, libgcc_s, ld-linux; " +
         "libstdc++ with --allow-libstdcxx)";
}

// The device code a variant must carry, exactly (the platform vocabulary's rule).
std::vector<GpuCode> expected_gpu_code(const VariantKey& v) {
  std::vector<GpuCode> out;
  for (const platform::DeviceCode& c : platform::required_device_code(v)) out.push_back({platform::kind_name(c.kind), c.arch});
  return out;
}

struct Elf {
  std::string bytes;
  const Elf64_Ehdr* eh = nullptr;
  std::vector<Elf64_Shdr> sections;
  std::string error;

  bool load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail("cannot open the file");
    in.seekg(0, std::ios::end);
    const std::streamoff n = in.tellg();
    if (n < 0 || static_cast<uint64_t>(n) > kMaxLibraryBytes) return fail("cannot size the file, or it is over 2 GiB");
    bytes.resize(static_cast<size_t>(n));
    in.seekg(0);
    if (!in.read(&bytes[0], n)) return fail("cannot read the file");
    if (bytes.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) return fail("not an ELF file");
    eh = reinterpret_cast<const Elf64_Ehdr*>(bytes.data());
    if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB)
      return fail("not a 64-bit little-endian ELF file");
    if (eh->e_type != ET_DYN) return fail("not a shared object (ELF type " + std::to_string(eh->e_type) + ")");
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > bytes.size() ||
        uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr) > bytes.size() - eh->e_shoff)
      return fail("malformed section header table");
    sections.resize(eh->e_shnum);
    if (eh->e_shnum) std::memcpy(sections.data(), bytes.data() + eh->e_shoff, eh->e_shnum * sizeof(Elf64_Shdr));
    for (const Elf64_Shdr& s : sections)
      if (s.sh_type != SHT_NOBITS && (s.sh_offset > bytes.size() || s.sh_size > bytes.size() - s.sh_offset))
        return fail("a section overruns the file");
    return true;
  }
  bool fail(const std::string& what) {
    error = what;
    return false;
  }
  const unsigned char* at(const Elf64_Shdr& s) const {
    return reinterpret_cast<const unsigned char*>(bytes.data()) + s.sh_offset;
  }
  // A NUL-terminated string at `off` in string table section `index`; "" when out of range.
  std::string str(size_t index, uint64_t off) const {
    if (index >= sections.size() || off >= sections[index].sh_size) return "";
    const char* p = reinterpret_cast<const char*>(at(sections[index])) + off;
    return std::string(p, strnlen(p, sections[index].sh_size - off));
  }
  const Elf64_Shdr* find_type(uint32_t type) const {
    for (const Elf64_Shdr& s : sections)
      if (s.sh_type == type) return &s;
    return nullptr;
  }
  const Elf64_Shdr* find_name(const std::string& name) const {
    for (const Elf64_Shdr& s : sections)
      if (str(eh->e_shstrndx, s.sh_name) == name) return &s;
    return nullptr;
  }
};

std::string cpu_of_machine(uint16_t m) {
  switch (m) {
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    default: return "machine " + std::to_string(m);
  }
}

void inspect(const Elf& elf, const Policy& policy, const VariantKey& v, Report& r) {
  auto violate = [&](const std::string& rule, const std::string& msg) { r.violations.push_back({rule, msg}); };

  if (cpu_of_machine(elf.eh->e_machine) != v.cpu)
    violate("elf", "built for " + cpu_of_machine(elf.eh->e_machine) + ", but the variant names " + v.cpu);

  // DT_NEEDED.
  if (const Elf64_Shdr* dyn = elf.find_type(SHT_DYNAMIC)) {
    const size_t n = dyn->sh_size / sizeof(Elf64_Dyn);
    for (size_t i = 0; i < n; ++i) {
      Elf64_Dyn d;
      std::memcpy(&d, elf.at(*dyn) + i * sizeof d, sizeof d);
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_NEEDED) r.needed.push_back(elf.str(dyn->sh_link, d.d_un.d_val));
    }
  } else {
    violate("elf", "no .dynamic section: not a dynamically loadable library");
  }
  for (const std::string& so : r.needed) {
    std::string rule;
    const std::string why = needed_refusal(so, policy, rule);
    if (!why.empty()) violate(rule, why);
  }

  // Version needs: index -> (library, version name); the newest GLIBC_ required.
  std::map<uint16_t, std::pair<std::string, std::string>> version_of;
  if (const Elf64_Shdr* vr = elf.find_type(SHT_GNU_verneed)) {
    uint64_t off = 0;
    for (int guard = 0; guard < 4096 && off + sizeof(Elf64_Verneed) <= vr->sh_size; ++guard) {
      Elf64_Verneed vn;
      std::memcpy(&vn, elf.at(*vr) + off, sizeof vn);
      const std::string file = elf.str(vr->sh_link, vn.vn_file);
      uint64_t aoff = off + vn.vn_aux;
      for (unsigned i = 0; i < vn.vn_cnt && aoff + sizeof(Elf64_Vernaux) <= vr->sh_size; ++i) {
        Elf64_Vernaux va;
        std::memcpy(&va, elf.at(*vr) + aoff, sizeof va);
        const std::string name = elf.str(vr->sh_link, va.vna_name);
        version_of[va.vna_other] = {file, name};
        if (name == "GLIBC_PRIVATE")
          violate("glibc", "requires GLIBC_PRIVATE symbols of " + file + ", which change between glibc releases");
        else if (name.rfind("GLIBC_", 0) == 0 && compare_versions(name.substr(6), r.newest_glibc) > 0)
          r.newest_glibc = name.substr(6);
        if (!va.vna_next) break;
        aoff += va.vna_next;
      }
      if (!vn.vn_next) break;
      off += vn.vn_next;
    }
  }
  if (!policy.max_glibc.empty() && !r.newest_glibc.empty() && compare_versions(r.newest_glibc, policy.max_glibc) > 0)
    violate("glibc", "requires GLIBC_" + r.newest_glibc + ", newer than the allowed GLIBC_" + policy.max_glibc +
                         " (build on an older glibc, or avoid the symbols that need it)");

  // .dynsym: exports and undefined symbols.
  const Elf64_Shdr* ds = elf.find_type(SHT_DYNSYM);
  if (!ds) {
    violate("exports", "no dynamic symbol table: " + std::string(kEntryPoint) + " is not exported");
    return;
  }
  const Elf64_Shdr* versym = elf.find_type(SHT_GNU_versym);
  const size_t nsym = ds->sh_size / sizeof(Elf64_Sym);
  std::map<std::string, uint64_t> undefined;
  std::set<std::string> bad_undefined;
  for (size_t i = 1; i < nsym; ++i) {
    Elf64_Sym s;
    std::memcpy(&s, elf.at(*ds) + i * sizeof s, sizeof s);
    const std::string name = elf.str(ds->sh_link, s.st_name);
    const unsigned bind = ELF64_ST_BIND(s.st_info), type = ELF64_ST_TYPE(s.st_info);
    if (s.st_shndx == SHN_UNDEF) {
      std::string lib = "(unversioned)";
      if (versym && (i + 1) * 2 <= versym->sh_size) {
        uint16_t idx;
        std::memcpy(&idx, elf.at(*versym) + i * 2, 2);
        auto it = version_of.find(static_cast<uint16_t>(idx & 0x7fff));
        if (it != version_of.end()) lib = it->second.first;
      }
      ++undefined[lib];
      std::string rule;
      // A library already refused as DT_NEEDED is not named twice.
      const bool is_needed = std::find(r.needed.begin(), r.needed.end(), lib) != r.needed.end();
      if (lib != "(unversioned)" && !is_needed && !needed_refusal(lib, policy, rule).empty() &&
          bad_undefined.insert(lib).second)
        violate("undefined", "'" + name + "' (and any other symbol from " + lib + ") comes from " + lib +
                                 ", which is not an allowed library");
      continue;
    }
    if (bind == STB_GNU_UNIQUE)
      violate("exports", "'" + name + "' is STB_GNU_UNIQUE, which pins the library in memory (compile with -fno-gnu-unique)");
    if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) continue;
    if (s.st_shndx == SHN_ABS && type == STT_OBJECT && s.st_value == 0 && s.st_size == 0) continue;  // version node
    r.exports.push_back(name);
  }
  std::sort(r.exports.begin(), r.exports.end());
  for (auto& [lib, count] : undefined) r.undefined.push_back({lib, count});

  const bool has_entry = std::find(r.exports.begin(), r.exports.end(), kEntryPoint) != r.exports.end();
  if (!has_entry) violate("exports", std::string("does not export ") + kEntryPoint + ", the kernel ABI's entry point");
  std::string extra;
  size_t n_extra = 0;
  for (const std::string& e : r.exports) {
    if (e == kEntryPoint) continue;
    if (n_extra++ < 8) extra += (extra.empty() ? "" : ", ") + e;
  }
  if (n_extra)
    violate("exports", "exports " + std::to_string(n_extra) + " symbol(s) besides " + kEntryPoint + ": " + extra +
                           (n_extra > 8 ? ", ..." : "") +
                           " (link with build-matrix/kernel.vers and -fvisibility=hidden, as kh_add_kernel_library does)");
}

void inspect_device_code(const Elf& elf, const VariantKey& v, Report& r) {
  auto violate = [&](const std::string& rule, const std::string& msg) { r.violations.push_back({rule, msg}); };
  std::vector<GpuCode> found;
  for (const char* section : {".nv_fatbin", ".hip_fatbin"}) {
    const Elf64_Shdr* s = elf.find_name(section);
    if (!s || s->sh_type == SHT_NOBITS || s->sh_size == 0) continue;
    std::string error;
    const bool ok = std::strcmp(section, ".nv_fatbin") == 0 ? parse_cuda_fatbin(elf.at(*s), s->sh_size, found, error)
                                                             : parse_offload_bundles(elf.at(*s), s->sh_size, found, error);
    if (!ok) violate("gpu-arch", std::string(section) + ": " + error);
  }
  std::sort(found.begin(), found.end(), [](const GpuCode& a, const GpuCode& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.arch != b.arch ? a.arch < b.arch : a.code_object < b.code_object;
  });
  found.erase(std::unique(found.begin(), found.end()), found.end());
  r.gpu_code = found;

  const std::vector<GpuCode> want = expected_gpu_code(v);
  auto show = [](const GpuCode& c) { return c.kind + " " + c.arch; };
  // amdgcn target ids may carry features (gfx942:sramecc+:xnack-): the processor must match
  // (and the features are checked below).
  auto matches = [](const GpuCode& want_one, const GpuCode& have) {
    if (want_one.kind != have.kind) return false;
    if (have.kind == "amdgcn") return have.arch.substr(0, have.arch.find(':')) == want_one.arch;
    return have.arch == want_one.arch;
  };
  if (v.amd) {
    // A key names the processor only, so its code objects must run on every device of it:
    // features left 'any', one code-object version the recorded runtime floor can follow.
    for (const GpuCode& h : found) {
      if (h.kind != "amdgcn") continue;
      const auto target = platform::parse_amd_target(h.arch);
      if (target && (target->sramecc != platform::AmdFeature::Any || target->xnack != platform::AmdFeature::Any))
        violate("gpu-arch", "carries " + show(h) + " code objects, which run only where those features are set; "
                            "variant " + r.policy.variant + " promises every " + v.amd->processor +
                            " (build for --offload-arch=" + v.amd->processor + ")");
      if (h.code_object == 0) {
        violate("gpu-arch", "a " + show(h) + " code object is not an AMDGPU HSA ELF of a known code-object version");
      } else if (r.code_object != 0 && r.code_object != h.code_object) {
        violate("gpu-arch", "code objects of code-object versions " + std::to_string(r.code_object) + " and " +
                                std::to_string(h.code_object) + " are mixed; build every source with one -mcode-object-version");
      }
      r.code_object = std::max(r.code_object, h.code_object);
    }
    if (r.code_object != 0) {
      const auto oldest = platform::oldest_runtime_for_code_object(r.code_object);
      platform::MajorMinor floor = platform::kOldestShimRuntime;
      if (oldest && floor < *oldest) floor = *oldest;
      r.runtime = platform::to_string(floor);
    }
  }
  for (const GpuCode& w : want)
    if (std::none_of(found.begin(), found.end(), [&](const GpuCode& h) { return matches(w, h); }))
      violate("gpu-arch", "carries no " + show(w) + " code, which variant " + r.policy.variant + " requires");
  for (const GpuCode& h : found)
    if (std::none_of(want.begin(), want.end(), [&](const GpuCode& w) { return matches(w, h); }))
      violate("gpu-arch", "carries " + show(h) + " code, which variant " + r.policy.variant + " does not name" +
                              (want.empty() ? " (a CPU variant carries no device code)" : ""));
}

}  // namespace

int compare_versions(const std::string& a, const std::string& b) {
  // GLIBC_ symbol versions, read with the platform vocabulary; "" (none yet) is the oldest.
  return platform::compare(platform::parse_glibc_version(a).value_or(platform::GlibcVersion{}),
                           platform::parse_glibc_version(b).value_or(platform::GlibcVersion{}));
}

Report check_library(const std::string& path, const Policy& policy) {
  Report r;
  r.policy = policy;
  const size_t slash = path.find_last_of('/');
  r.library = slash == std::string::npos ? path : path.substr(slash + 1);
  const platform::VariantKeyParse parsed = platform::parse_variant_key(policy.variant);
  if (!parsed.key) {
    r.violations.push_back({"variant", parsed.error});
    return r;
  }
  const VariantKey& v = *parsed.key;
  if (!policy.max_glibc.empty() && policy.max_glibc.find_first_not_of("0123456789.") != std::string::npos) {
    r.violations.push_back({"glibc", "the allowed glibc '" + policy.max_glibc + "' is not a version such as 2.34"});
    return r;
  }
  Elf elf;
  if (!elf.load(path)) {
    r.violations.push_back({"elf", elf.error});
    return r;
  }
  inspect(elf, policy, v, r);
  inspect_device_code(elf, v, r);
  return r;
}

std::string report_json(const Report& r) {
  nlohmann::ordered_json j;
  j["schema"] = 1;
  j["library"] = r.library;
  j["variant"] = r.policy.variant;
  j["ok"] = r.ok();
  j["policy"] = {{"allow_libstdcxx", r.policy.allow_libstdcxx}, {"max_glibc", r.policy.max_glibc}};
  j["exports"] = r.exports;
  j["needed"] = r.needed;
  j["undefined"] = nlohmann::ordered_json::object();
  for (const UndefinedBy& u : r.undefined) j["undefined"][u.library] = u.count;
  j["glibc"] = r.newest_glibc;
  j["gpu_code"] = nlohmann::ordered_json::array();
  for (const GpuCode& c : r.gpu_code) {
    nlohmann::ordered_json code = {{"kind", c.kind}, {"arch", c.arch}};
    if (c.code_object != 0) code["code_object"] = c.code_object;
    j["gpu_code"].push_back(std::move(code));
  }
  if (r.code_object != 0) j["code_object"] = r.code_object;
  if (!r.runtime.empty()) j["runtime"] = r.runtime;
  j["violations"] = nlohmann::ordered_json::array();
  for (const Violation& x : r.violations) j["violations"].push_back({{"rule", x.rule}, {"message", x.message}});
  return j.dump(2) + "\n";
}

std::string report_text(const Report& r) {
  std::string out;
  if (r.ok()) {
    std::string code;
    for (const GpuCode& c : r.gpu_code) code += (code.empty() ? "" : ", ") + c.kind + " " + c.arch;
    out = r.library + ": ABI ok for " + r.policy.variant + " (exports " + std::to_string(r.exports.size()) +
          ", needs GLIBC_" + (r.newest_glibc.empty() ? "-" : r.newest_glibc) +
          (code.empty() ? "" : ", device code: " + code) +
          (r.runtime.empty() ? "" : ", code-object v" + std::to_string(r.code_object) + ", HIP runtime " + r.runtime + "+") +
          ")\n";
    return out;
  }
  for (const Violation& v : r.violations) out += r.library + ": " + v.rule + ": " + v.message + "\n";
  return out;
}

}  // namespace kh::abi_check
