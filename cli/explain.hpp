// Printing this machine's facts and why each build of a release was chosen or refused, for
// every GPU or one: shared by `kernels doctor` and `kernels get --explain`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kh/install/selection.hpp"
#include "kh/loader/host_facts.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/loader/variant_select.hpp"

namespace kh::cli {

void print_host_facts(const loader::HostFacts& facts);

// The requests `kernels doctor` explains: one per GPU of this machine (its backend and
// ordinal), or the default request alone on a machine without one.
std::vector<loader::DeviceRequest> every_device(const loader::HostFacts& facts);
// "cuda device 1 (NVIDIA A100-SXM4-80GB, sm80)", or "device 0 (no GPU: CPU builds only)".
std::string device_title(const loader::HostFacts& facts, const loader::DeviceRequest& request);

// A selection as resolution carries it (kh/install/selection.hpp): what `kernels get --explain`,
// `kernels doctor` and kh_load_kernel's refusals all show.
nlohmann::json selection_json(const install::BuildSelection& selection);
// "  chosen   cuda13.0-sm90a-...: arch-specific sm90a SASS for ..." and one line per other build,
// under `title`, each line indented by `indent` more spaces.
void print_selection(const std::string& title, const install::BuildSelection& selection, int indent = 0);

}  // namespace kh::cli
