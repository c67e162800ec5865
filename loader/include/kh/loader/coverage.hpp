// Which GPUs a release runs on, and how: selection run for a machine like this one with each
// GPU kh knows (kh/platform/known_targets.hpp) and the newest driver and runtime, so that what
// is left is the device code. For `kernels info --coverage`.
#pragma once

#include <string>
#include <vector>

#include "kh/loader/host_facts.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/loader/variant_select.hpp"

namespace kh::loader {

struct CoverageRow {
  enum class Runs : uint8_t { Native, PtxJit, No };
  platform::Backend backend = platform::Backend::Cuda;
  std::string arch;      // "sm90", "gfx942"
  std::string examples;  // "H100, H200, GH200"
  Runs runs = Runs::No;
  std::string variant;   // the build that would run there; empty for Runs::No
  platform::Fit fit = platform::Fit::None;
  std::string reason;    // the chosen build's reason, or why the best GPU build was refused
};
const char* runs_name(CoverageRow::Runs runs);  // "native", "ptx-jit", "no"

std::vector<CoverageRow> release_coverage(const std::vector<registry::VariantEntry>& variants, const HostFacts& like);

}  // namespace kh::loader
