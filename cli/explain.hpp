// Printing this machine's facts and why each build of a release was chosen or refused:
// shared by `kernels doctor` and `kernels get --explain`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host_facts.hpp"
#include "kh/registry/repo_index.hpp"
#include "variant_select.hpp"

namespace kh::cli {

nlohmann::json host_facts_json(const loader::HostFacts& facts);
void print_host_facts(const loader::HostFacts& facts);

nlohmann::json selection_json(const loader::VariantSelection& selection);
// "  chosen  cuda13.0-sm90a-...: exact arch sm90a for NVIDIA H200 (sm90)" and one line per other build.
void print_selection(const std::string& title, const loader::VariantSelection& selection);

}  // namespace kh::cli
