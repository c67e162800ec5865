// The build chooser install::resolve() takes (install/session.hpp), made from the loader's
// selection for this machine: the entry points (kh_load_kernel, the `kernels` verbs) hand
// it to their session, so that resolution itself knows no host facts.
#pragma once

#include <string>
#include <vector>

#include "host_facts.hpp"
#include "kh/registry/repo_index.hpp"
#include "variant_select.hpp"

namespace kh::loader {

inline auto host_build_chooser() {
  return [](const std::vector<registry::VariantEntry>& builds, const std::string& forced_key,
            const std::string& what) -> const registry::VariantEntry& {
    return choose_variant(builds, host_facts(), forced_key, what);
  };
}

}  // namespace kh::loader
