// The author kit an installed `kernels` carries (docs/authoring.md): the CMake modules, the
// target table, the ABI and helper headers, the HIP shim and the package template, under
// <prefix>/share/kh/author/ with the relative paths they have in kh's source tree.
#pragma once

#include <string>
#include <vector>

namespace kh::author {

struct Kit {
  std::string root;    // the kit: cmake/KhAuthor.cmake, build-matrix/matrix.json, ...
  std::string prefix;  // the kh installation it belongs to (root/../../..)
  // <prefix>/lib*/cmake/kh when kh is installed there (find_package(kh COMPONENTS author) and
  // kh::kh for a package's own CMakeLists.txt and tests); "" in a build tree.
  std::string cmake_dir;
  std::string kh_version;  // of this kh ("0.1.0")

  std::string matrix_json() const { return root + "/build-matrix/matrix.json"; }
  std::string template_dir() const { return root + "/build-matrix/author/template"; }
  std::string generic_project() const { return root + "/cmake/package"; }
};

// `kit_dir` when not empty (KH_AUTHOR_KIT), else <folder of the running executable>/../share/kh/author.
// Throws StatusError(KH_ERROR_NOT_FOUND) saying what is missing and what to do.
Kit find_kit(const std::string& kh_version, const std::string& kit_dir = "");

}  // namespace kh::author
