// The publish lock of a hub that offers none (http(s), oci): a lease file in the hub,
// taken with Fischer's timed mutual exclusion over plain reads and writes. Internal to
// the registry's backends.
#pragma once

#include <memory>
#include <string>

#include "kh/registry/hub_writer.hpp"

namespace kh::registry::detail {

// Where the lease lives in a hub.
inline constexpr const char* kPublishLeasePath = "kh-publish.lease";

// Takes the lease of `hub` for `who` (see LeaseTiming): waits while another publisher's
// fresh lease is there (a line on stderr says whose), takes over a stale one, and throws
// StatusError(KH_ERROR_NETWORK) naming the holder after timing.wait_s. The result removes
// the lease when destroyed, if it is still this publisher's.
std::unique_ptr<PublishLock> acquire_lease(HubWriter& hub, const std::string& who, const LeaseTiming& timing);

}  // namespace kh::registry::detail
