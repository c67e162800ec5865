// `kernels build --verify <org>/<name>@<version>`: each build of the release whose
// provenance names a commit is rebuilt from that commit (exported from the local checkout at
// request.package_dir) for its target, where the toolchain is here, and its archive compared
// with the one the hub serves (verified against the signed index): "matches", or the first
// differing file. Returns the exit status: 0 when every build checked matches (and at least one
// was), 1 otherwise.
#pragma once

#include <functional>
#include <string>

#include "kh/author/kit.hpp"
#include "kh/author/package_build.hpp"
#include "kh/install/session.hpp"

namespace kh::cli {

int verify_release(const std::string& spec, const author::BuildRequest& request, const install::Options& hub,
                   const author::Kit& kit, const std::function<void(const std::string&)>& progress);

}  // namespace kh::cli
