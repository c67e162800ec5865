// The `kernels` command's one reading of the settings (install::Settings, on first use),
// and the install::Session a verb runs in.
#pragma once

#include <memory>

#include "kh/install/session.hpp"
#include "kh/install/settings.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/publish.hpp"
#include "kh/loader/variant_select.hpp"

namespace kh::cli {

// Read from the environment once per process, when a verb first needs them (so that a bad
// variable fails the verbs that read it, not `kernels --help`).
const install::Settings& settings();

// A session for one verb, choosing builds for `device` of this machine (the loader's
// selection; default: device 0, the first GPU).
std::unique_ptr<install::Session> open_session(const install::Options& options, const loader::DeviceRequest& device = {});
// A session whose chooser takes any build (the forced one, else the first): for verbs that
// take a release as a whole (--all-targets) or choose and explain themselves (--explain).
std::unique_ptr<install::Session> open_session_choosing_any(const install::Options& options);

// The cache at cache_root (--cache), else the settings' (KH_CACHE), locking as they say: for
// the verbs that look after the cache without a session (list, cache).
registry::Cache open_cache(const std::string& cache_root);

// "user@host (pid N)": names a publisher to another one waiting for a hub's publish lock.
std::string publisher_name();

// How a verb that writes a hub's indexes (publish, yank) signs and checks: the secret keys in
// key_files (none given: KH_SIGNING_KEY's), the indexes' expiry, the cache's pinned roots to
// verify the hub's current indexes against, and this publisher's name.
registry::PublishOptions publish_options(const std::vector<std::string>& key_files, int expires_days);

}  // namespace kh::cli
