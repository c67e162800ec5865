// The build chooser install::resolve() takes (install/session.hpp), made from the loader's
// selection for this machine: the entry points (kh_load_kernel, the `kernels` verbs) hand
// it to their session, so that resolution itself knows no host facts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kh/loader/host_facts.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/loader/variant_select.hpp"

namespace kh::loader {

// For `device` of this machine (default: device 0 / the first GPU).
inline auto host_build_chooser(DeviceRequest device = {}) {
  return [device](const std::vector<registry::VariantEntry>& builds, const std::string& forced_key) {
    return select_build(builds, host_facts(), device, forced_key);
  };
}

// install::Options::selection_key of a choice made by host_build_chooser(device): the device,
// and which HostFacts object describes the machine (a test that describes another machine with
// KH_TEST_HOST_FACTS gets another one), so remembered answers never cross either.
inline std::string host_selection_key(const DeviceRequest& device) {
  return std::to_string(device.device_type) + ":" + std::to_string(device.device_id) + "@" +
         std::to_string(reinterpret_cast<uintptr_t>(&host_facts()));
}

}  // namespace kh::loader
