// `kernels info --coverage`: for every GPU arch kh knows, whether a release runs there
// natively, through PTX, or not at all (loader/src/coverage.hpp computes it).
#pragma once

#include <nlohmann/json.hpp>

#include "kh/registry/repo_index.hpp"

namespace kh::cli {

void print_coverage(const std::string& repo, const registry::Release& release);
nlohmann::json coverage_json(const registry::Release& release);

}  // namespace kh::cli
