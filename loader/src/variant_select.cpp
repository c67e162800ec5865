// Variant selection; see variant_select.hpp. GPU builds are ranked above CPU builds; among
// CPU builds, the highest ISA level the host supports wins.
#include "variant_select.hpp"

#include <algorithm>

#include "kh/kernel_abi.h"
#include "kh/registry/status_error.hpp"
#include "variant_key.hpp"

namespace kh::loader {
namespace {

// "x86_64" -> 1, "x86_64_v2" -> 2, ... ; 0 if not an x86-64 ISA level name.
int x86_isa_level_of(const std::string& arch) {
  if (arch == "x86_64") return 1;
  if (arch.size() == 9 && arch.compare(0, 8, "x86_64_v") == 0 && arch[8] >= '2' && arch[8] <= '4') return arch[8] - '0';
  return 0;
}

VariantVerdict judge(const registry::VariantEntry& entry, const HostFacts& host) {
  VariantVerdict v;
  v.entry = &entry;
  const auto key = parse_variant_key(entry.key);
  if (!key) {
    v.reason = "not a well-formed variant key";
    return v;
  }
  if (key->abi_major != KH_ABI_VERSION_MAJOR) {
    v.reason = "built for kernel ABI " + std::to_string(key->abi_major) + ", this loader speaks " +
               std::to_string(KH_ABI_VERSION_MAJOR);
    return v;
  }
  if (key->os != host.os) {
    v.reason = "built for " + key->os + ", this machine runs " + host.os;
    return v;
  }
  if (key->cpu != host.cpu) {
    v.reason = "built for " + key->cpu + " CPUs, this machine is " + host.cpu;
    return v;
  }
  if (key->backend == "cpu") {
    const int level = x86_isa_level_of(key->arch);
    if (host.cpu == "x86_64" && level == 0) {
      v.reason = "unknown x86-64 ISA level '" + key->arch + "'";
      return v;
    }
    if (level > host.x86_isa_level) {
      v.reason = "needs ISA level x86-64-v" + std::to_string(level) + ", this CPU supports v" +
                 std::to_string(host.x86_isa_level);
      return v;
    }
    v.compatible = true;
    v.rank = level;
    v.reason = "CPU build for " + key->arch + " (this CPU supports x86-64-v" + std::to_string(host.x86_isa_level) + ")";
    return v;
  }
  v.reason = "a " + key->backend + " build; no " + key->backend + " device was detected on this machine";
  return v;
}

std::string list_verdicts(const VariantSelection& selection) {
  std::string out;
  for (const auto& v : selection.verdicts) out += "\n  " + v.entry->key + ": " + v.reason;
  return out;
}

}  // namespace

VariantSelection select_variant(const std::vector<registry::VariantEntry>& variants, const HostFacts& host) {
  VariantSelection selection;
  for (const auto& entry : variants) selection.verdicts.push_back(judge(entry, host));
  std::stable_sort(selection.verdicts.begin(), selection.verdicts.end(), [](const VariantVerdict& a, const VariantVerdict& b) {
    if (a.compatible != b.compatible) return a.compatible;
    return a.rank > b.rank;
  });
  if (!selection.verdicts.empty() && selection.verdicts.front().compatible)
    selection.chosen = selection.verdicts.front().entry;
  return selection;
}

const registry::VariantEntry& choose_variant(const std::vector<registry::VariantEntry>& variants, const HostFacts& host,
                                             const std::string& forced_key, const std::string& what) {
  if (!forced_key.empty()) {
    for (const auto& entry : variants)
      if (entry.key == forced_key) return entry;
    std::string offered;
    for (const auto& entry : variants) offered += "\n  " + entry.key;
    fail(KH_ERROR_NOT_FOUND, what + " has no build '" + forced_key + "'; it offers:" + offered);
  }
  const VariantSelection selection = select_variant(variants, host);
  if (selection.chosen == nullptr)
    fail(KH_ERROR_NO_COMPATIBLE_VARIANT,
         what + " has no build for this machine (" + host.cpu + "-" + host.os + "); builds offered:" +
             (selection.verdicts.empty() ? std::string(" none") : list_verdicts(selection)));
  return *selection.chosen;
}

}  // namespace kh::loader
