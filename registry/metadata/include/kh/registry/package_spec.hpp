// "org/name@request": which package a user asks for.
#pragma once

#include <string>
#include <string_view>

#include "kh/registry/semver.hpp"

namespace kh::registry {

struct PackageSpec {
  std::string org;   // [a-z0-9._-]+, not starting with '.'
  std::string name;  // same rules
  VersionRequest request;
  std::string repo() const { return org + "/" + name; }
};

// Throws StatusError(KH_ERROR_INVALID_ARGUMENT) naming the spec and what is wrong with it.
PackageSpec parse_package_spec(std::string_view spec);
// True when s is a valid org or name.
bool is_valid_repo_part(std::string_view s);

}  // namespace kh::registry
