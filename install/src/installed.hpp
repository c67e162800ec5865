// Describing a package tree of the cache as an InstalledPackage; shared by resolve.cpp and
// install.cpp. Internal to install/.
#pragma once

#include <string>

#include "kh/install/resolve.hpp"

namespace kh::install {

// The package at dir, installed from blob sha256 of hub_url, described by its manifest (as
// the cache parsed it while installing or finding the tree: never read twice).
InstalledPackage describe_installed(const std::string& dir, const std::string& sha256, const std::string& hub_url,
                                    registry::PackageManifest manifest);
// The same, its manifest read from dir.
InstalledPackage describe_installed(const std::string& dir, const std::string& sha256, const std::string& hub_url);
// The same, checked to be the build `r` names (repo, version, variant), else KH_ERROR_VERIFICATION.
InstalledPackage installed_as_resolved(const Resolution& r, const std::string& dir);

}  // namespace kh::install
