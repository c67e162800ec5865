// catalog.json as publish and mirror write it: the hub's entries kept, the touched repos'
// replaced. Internal to the registry's publish/.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "kh/registry/repo_index.hpp"

namespace kh::registry::detail {

// The newest release a plain "@latest" would pick, else the newest of any kind ("" for none).
std::string latest_version(const RepoIndex& index);

// The hub's catalog (`remote`, if any; KH_ERROR_BAD_METADATA when it is not JSON) with an
// entry {"repo", "latest"} for each of latest_by_repo, sorted by repo.
std::string merged_catalog(const std::optional<std::string>& remote, const std::map<std::string, std::string>& latest_by_repo);

}  // namespace kh::registry::detail
