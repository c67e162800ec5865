// Why each build of a release was chosen or refused for one request: what a BuildChooser (the
// loader's selection for a machine and one of its devices) answers, carried in the Resolution,
// so that `kernels get --explain`, `kernels doctor` and kh_load_kernel read one result and can
// never disagree. Resolution itself knows no host facts: it only reads the verdicts.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kh/registry/repo_index.hpp"

namespace kh::install {

struct BuildVerdict {
  std::string key;
  bool fits = false;    // the build runs here
  int rank = 0;         // higher is better among the builds that fit
  std::string fit;      // how a GPU build's device code fits the device ("exact", "ptx", ...); "" otherwise
  std::string refusal;  // why it does not fit, typed ("gpu-arch", "glibc", "driver", ...); "" when it fits
  std::string device;   // the GPU a GPU build was judged against ("cuda:0"); "" for CPU builds
  std::string reason;   // the same, in words
};

struct BuildSelection {
  std::string chosen;   // the build's key; "" when none fits
  bool forced = false;  // chosen as asked (--target, KH_TARGET, kh_load_options.variant), verdicts aside
  std::string machine;  // what it was chosen for: "x86_64-linux, CUDA device 0"
  std::vector<BuildVerdict> verdicts;  // every build offered, best first
  // The verdict on `key`; nullptr when the build was not offered.
  const BuildVerdict* verdict(const std::string& key) const;
};

// "\n  <key>: <reason>" per build, the list errors end with (" none" without builds).
std::string list_verdicts(const BuildSelection& selection);

// Judges a release's builds for one request. forced_key non-empty: that build, whatever the
// verdicts say (they are still given). Throws StatusError only for a request it cannot judge
// (a device this machine lacks).
using BuildChooser =
    std::function<BuildSelection(const std::vector<registry::VariantEntry>& builds, const std::string& forced_key)>;

// The chosen build among `builds`: StatusError KH_ERROR_NOT_FOUND for a forced key the release
// lacks, KH_ERROR_NO_COMPATIBLE_VARIANT listing every build with its reason when none fits.
// `what` names the repo and version.
const registry::VariantEntry& chosen_build(const BuildSelection& selection,
                                           const std::vector<registry::VariantEntry>& builds, const std::string& what);

}  // namespace kh::install
