// Picks the build of a release that fits this machine, and says why each other build was
// refused (for `kernels get --explain` and error messages).
#pragma once

#include <string>
#include <vector>

#include "host_facts.hpp"
#include "kh/registry/repo_index.hpp"

namespace kh::loader {

struct VariantVerdict {
  const registry::VariantEntry* entry = nullptr;
  bool compatible = false;
  int rank = 0;        // higher is better among compatible builds
  std::string reason;  // why compatible (what matched) or why refused
};

struct VariantSelection {
  const registry::VariantEntry* chosen = nullptr;  // nullptr: none fits
  std::vector<VariantVerdict> verdicts;            // one per offered build, best first
};

VariantSelection select_variant(const std::vector<registry::VariantEntry>& variants, const HostFacts& host);

// The chosen entry, or throws StatusError: KH_ERROR_NO_COMPATIBLE_VARIANT listing every
// build with its reason. `forced_key` non-empty (--target, KH_TARGET) picks that build as is,
// whatever this machine's facts say, glibc floor included (KH_ERROR_NOT_FOUND
// if the release lacks it). `what` names the repo and version for messages.
const registry::VariantEntry& choose_variant(const std::vector<registry::VariantEntry>& variants, const HostFacts& host,
                                             const std::string& forced_key, const std::string& what);

}  // namespace kh::loader
