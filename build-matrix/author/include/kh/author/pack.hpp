// Packing one built kernel library into a package archive: what `kernels pack` does and what
// `kernels build` does for each target it builds. What the archive says about the build
// (name, version, variant, ABI, ops) is read from the library itself, so it cannot drift from
// the code; the op docs come from kernel.json, whose ops must be the library's op table.
#pragma once

#include <string>
#include <vector>

#include "kh/abi_check/abi_check.hpp"
#include "kh/registry/provenance.hpp"

namespace kh::author {

struct PackRequest {
  std::string library;       // the built .so
  std::string package_json;  // the package's kernel.json
  std::string out_dir;       // where the .tar.zst goes
  // The ABI check: with abi.variant set, a failing library (or incomplete op docs) is refused;
  // without, dev and sanitizer builds still pack, with warnings.
  abi_check::Policy abi;
  bool no_abi_check = false;
  registry::Provenance provenance;  // recorded in the manifest when not empty
};

struct PackResult {
  std::string archive;
  std::string name, version, variant;
  std::vector<std::string> warnings;  // what an unenforced pack let through, for the caller to print
};

// Throws StatusError(KH_ERROR_INVALID_ARGUMENT) naming what is wrong and how to fix it.
PackResult pack_kernel_library(PackRequest request);

}  // namespace kh::author
