// Loads one kernel library: open the file, optionally check its sha256 on the open
// descriptor, dlopen that same descriptor (so no swap can slip in between), negotiate the
// ABI and validate the module descriptor.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kh/loader/call_check.hpp"
#include "kh/kernel_abi.h"

namespace kh::loader {

class KernelLibrary {
 public:
  // expected_sha256 empty: no hash check (kh_load_kernel_library). Throws StatusError:
  // KH_ERROR_VERIFICATION (hash), KH_ERROR_LOAD_FAILED (dlopen, no entry point, bad
  // descriptor), KH_ERROR_ABI_MISMATCH (no common ABI version, with both ranges named).
  static std::unique_ptr<KernelLibrary> open(const std::string& path, const std::string& expected_sha256);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  const kh_module_desc& module() const { return *module_; }
  uint32_t abi_version() const { return abi_version_; }
  const std::vector<CheckedOp>& ops() const { return ops_; }
  const std::string& path() const { return path_; }

 private:
  KernelLibrary() = default;
  void* handle_ = nullptr;
  int fd_ = -1;  // the loaded file, open for as long as it is loaded
  const kh_module_desc* module_ = nullptr;
  uint32_t abi_version_ = 0;
  std::vector<CheckedOp> ops_;
  std::string path_;
};

// The ABI range this loader speaks.
constexpr uint32_t kLoaderMinAbi = KH_MAKE_ABI_VERSION(KH_ABI_VERSION_MAJOR, 0);
constexpr uint32_t kLoaderMaxAbi = KH_ABI_VERSION;
std::string abi_version_text(uint32_t version);  // "1.0"

}  // namespace kh::loader
