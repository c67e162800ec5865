// The target table and this machine's toolchains.
#include "kh/author/targets.hpp"

#include <sys/utsname.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "kh/author/process.hpp"
#include "kh/kernel_abi.h"
#include "kh/registry/fs.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::author {
namespace {

std::string host_cpu() {
  struct utsname u {};
  if (::uname(&u) != 0) return "x86_64";
  const std::string m = u.machine;
  if (m == "amd64") return "x86_64";
  if (m == "arm64") return "aarch64";
  return m;
}

// nvcc: $CUDACXX, PATH, /usr/local/cuda/bin (where the toolkit installs it).
std::string find_nvcc() {
  if (const char* env = std::getenv("CUDACXX"); env != nullptr && *env != '\0')
    return find_program(env);
  return find_program("nvcc", {"/usr/local/cuda/bin"});
}

// "release 13.0," in `nvcc --version`.
std::string nvcc_version(const std::string& nvcc) {
  const ProcessResult r = run_process({nvcc, "--version"}, {{}, "", true, ""});
  std::smatch m;
  if (r.exit_code == 0 && std::regex_search(r.output, m, std::regex("release ([0-9]+\\.[0-9]+)"))) return m[1];
  return "";
}

// HIP_VERSION_MAJOR/MINOR of the HIP headers a build would use ($ROCM_PATH, then Debian's).
std::string hip_version() {
  std::vector<std::string> roots;
  if (const char* env = std::getenv("ROCM_PATH"); env != nullptr && *env != '\0') roots.push_back(env);
  roots.push_back("/opt/rocm");
  roots.push_back("/usr");
  for (const std::string& root : roots) {
    std::ifstream in(root + "/include/hip/hip_version.h");
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    std::smatch major, minor;
    if (std::regex_search(s, major, std::regex("#define HIP_VERSION_MAJOR ([0-9]+)")) &&
        std::regex_search(s, minor, std::regex("#define HIP_VERSION_MINOR ([0-9]+)")))
      return major[1].str() + "." + minor[1].str();
  }
  return "";
}

}  // namespace

const Target& TargetTable::find(const std::string& key) const {
  std::string keys;
  for (const Target& t : targets) {
    if (t.key == key) return t;
    keys += (keys.empty() ? "" : ", ") + t.key;
  }
  fail(KH_ERROR_INVALID_ARGUMENT, "unknown target '" + key + "'; the targets are " + keys + " (`kernels targets`)");
}

TargetTable read_target_table(const std::string& path) {
  const std::string text = registry::read_file(path, 1u << 20);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(KH_ERROR_BAD_METADATA, path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  auto bad = [&](const std::string& what) { fail(KH_ERROR_BAD_METADATA, path + ": " + what); };
  TargetTable table;
  if (!doc.is_object() || !doc.contains("max_glibc") || !doc["max_glibc"].is_string()) bad("no string \"max_glibc\"");
  table.max_glibc = doc["max_glibc"].get<std::string>();
  if (!doc.contains("targets") || !doc["targets"].is_array()) bad("no \"targets\" list");
  for (const nlohmann::json& t : doc["targets"]) {
    Target target;
    for (const char* field : {"key", "backend", "arch"})
      if (!t.is_object() || !t.contains(field) || !t[field].is_string()) bad(std::string("a target has no string \"") + field + "\"");
    target.key = t["key"].get<std::string>();
    target.backend = t["backend"].get<std::string>();
    target.arch = t["arch"].get<std::string>();
    if (t.contains("toolchain") && t["toolchain"].is_string()) target.toolchain = t["toolchain"].get<std::string>();
    if (t.contains("requires")) {
      if (!t["requires"].is_array()) bad("target " + target.key + ": \"requires\" is not a list");
      for (const nlohmann::json& r : t["requires"]) {
        if (!r.is_string()) bad("target " + target.key + ": a \"requires\" entry is not a string");
        const std::string req = r.get<std::string>();
        const size_t eq = req.find('=');
        target.requires.push_back({req.substr(0, eq), eq == std::string::npos ? "" : req.substr(eq + 1)});
      }
    }
    table.targets.push_back(std::move(target));
  }
  if (table.targets.empty()) bad("the target list is empty");
  return table;
}

ToolchainStatus probe_toolchain(const Target& target) {
  ToolchainStatus status;
  status.present = true;
  for (const Requirement& req : target.requires) {
    const bool found = req.program == "nvcc" ? !find_nvcc().empty() : !find_program(req.program).empty();
    if (found) continue;
    status.present = false;
    status.missing = req.program == "nvcc"
                         ? "nvcc (the CUDA toolkit: install it at /usr/local/cuda, or set CUDACXX to its nvcc)"
                         : req.program + " (apt-get install " + (req.package.empty() ? req.program : req.package) + ")";
    break;
  }
  const std::string abi = "-abi" + std::to_string(KH_ABI_VERSION_MAJOR) + "-" + host_cpu() + "-linux";
  if (target.backend == "cpu") {
    status.variant_key = "cpu-" + target.arch + abi;
  } else if (target.backend == "cuda") {
    const std::string nvcc = find_nvcc();
    status.compiler_version = nvcc.empty() ? "" : nvcc_version(nvcc);
    status.variant_key = "cuda" + (status.compiler_version.empty() ? "<version>" : status.compiler_version) + "-" +
                         target.arch + abi;
  } else {
    status.compiler_version = hip_version();
    status.variant_key = target.backend + (status.compiler_version.empty() ? "<version>" : status.compiler_version) +
                         "-" + target.arch + abi;
  }
  return status;
}

std::string host_cpu_target() { return "cpu-" + host_cpu(); }

}  // namespace kh::author
