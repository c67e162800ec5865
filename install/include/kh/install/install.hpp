// Making resolved builds present in the cache: download what is missing (together, in
// parallel from http hubs, one batch per hub, on the session's connections), verify every
// byte against the signed index, unpack, check the tree against its manifest. And get():
// resolve() + install() for one spec, with the in-process memo kh_load_kernel relies on.
#pragma once

#include <string>
#include <vector>

#include "kh/install/resolve.hpp"
#include "kh/install/session.hpp"

namespace kh::install {

// Returns the packages in the order of `resolved`. A progress line shows on stderr when
// the settings say so (KH_PROGRESS, a terminal). Throws StatusError naming the package
// that failed; nothing unverified is ever installed.
std::vector<InstalledPackage> install(Session& session, const std::vector<Resolution>& resolved);

// resolve() then install() for one spec. With options().metadata_max_age_s > 0 (a host's
// loads), the same request made again within that many seconds reuses the last answer
// (the tree is still checked to be complete and intact), as the verified index it came
// from would give the same.
InstalledPackage get(Session& session, const std::string& spec);

}  // namespace kh::install
