// See selection.hpp.
#include "kh/install/selection.hpp"

#include "kh/registry/status_error.hpp"

namespace kh::install {

const BuildVerdict* BuildSelection::verdict(const std::string& key) const {
  for (const BuildVerdict& v : verdicts)
    if (v.key == key) return &v;
  return nullptr;
}

std::string list_verdicts(const BuildSelection& selection) {
  if (selection.verdicts.empty()) return " none";
  std::string out;
  for (const BuildVerdict& v : selection.verdicts) out += "\n  " + v.key + ": " + v.reason;
  return out;
}

const registry::VariantEntry& chosen_build(const BuildSelection& selection,
                                           const std::vector<registry::VariantEntry>& builds, const std::string& what) {
  if (const registry::VariantEntry* entry = registry::find_variant(builds, selection.chosen)) return *entry;
  if (selection.forced) {
    std::string offered;
    for (const auto& entry : builds) offered += "\n  " + entry.key;
    fail(KH_ERROR_NOT_FOUND, what + " has no build '" + selection.chosen + "'; it offers:" + offered);
  }
  fail(KH_ERROR_NO_COMPATIBLE_VARIANT,
       what + " has no build for this machine (" + selection.machine + "); builds offered:" + list_verdicts(selection));
}

}  // namespace kh::install
