// `kernels init <org>/<name> [DIR]`: a new package repository from the kit's template
// (template/ beside this library in kh's tree, share/kh/author/build-matrix/author/template
// installed): kernel.json with one documented op, CPU/CUDA/HIP sources, a test against a
// reference, a README, the CI script and workflow, .gitignore. It builds and passes its test
// as written.
#pragma once

#include <string>
#include <vector>

namespace kh::author {

struct ScaffoldRequest {
  std::string package;  // "acme/scale"
  std::string dir;      // default: ./<name>
  std::vector<std::string> backends = {"cpu", "cuda", "hip"};  // the package folder's backends
};

// The files written, relative to the new folder, sorted. Throws StatusError
// (KH_ERROR_INVALID_ARGUMENT) for a bad name or backend, or a folder that exists and is not
// empty; writes into a temporary sibling and renames it into place, so a failure leaves nothing.
std::vector<std::string> scaffold_package(const ScaffoldRequest& request, const std::string& template_dir);

// "rocm" -> "hip"; cpu, cuda, hip as they are; "" for anything else.
std::string package_backend_name(const std::string& word);

}  // namespace kh::author
