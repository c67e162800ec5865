// Points the CPU kernel tests of tests/kernels at a build-matrix tree instead of kh's own
// build: force-included into the test_matrix_cpu_* executables, whose library paths and
// expected variant come from the environment (build-matrix/publish.sh sets them):
//   KH_MATRIX_CPU_DIR      <target build>/install (holds <package>/<variant>/libkh_<pkg>_cpu.so)
//   KH_MATRIX_CPU_VARIANT  the variant key, e.g. cpu-x86_64_v3-abi1-x86_64-linux
#pragma once

#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>

namespace kh_matrix_test {

inline std::string env_or_throw(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0')
    throw std::runtime_error(std::string(name) + " is not set: run through build-matrix/publish.sh");
  return v;
}

inline std::string cpu_variant() { return env_or_throw("KH_MATRIX_CPU_VARIANT"); }

// e.g. "rms-norm" -> <dir>/rms-norm/<variant>/libkh_rms_norm_cpu.so
inline const char* cpu_library(const std::string& package) {
  static std::map<std::string, std::string> paths;
  std::string lib = "libkh_" + package + "_cpu.so";
  for (char& c : lib)
    if (c == '-') c = '_';
  auto [it, inserted] = paths.emplace(package, "");
  if (inserted) it->second = env_or_throw("KH_MATRIX_CPU_DIR") + "/" + package + "/" + cpu_variant() + "/" + lib;
  return it->second.c_str();
}

}  // namespace kh_matrix_test
