// Options shared by the verbs that reach a hub or the cache.
#pragma once

#include <CLI/CLI.hpp>

#include "kh/install/session.hpp"

namespace kh::cli {

// Adds --hub, --cache, --offline and --allow-expired to cmd, bound to options.
inline void add_hub_options(CLI::App* cmd, install::Options& options) {
  cmd->add_option("--hub", options.hub_url, "Hub URL, e.g. file:///srv/kh-hub (default: $KH_HUB)");
  cmd->add_option("--cache", options.cache_root, "Cache directory (default: $KH_CACHE, else $XDG_CACHE_HOME/kh)");
  cmd->add_flag("--offline", options.offline, "Use the cache and cached metadata only; open no connection");
  cmd->add_flag("--allow-expired", options.allow_expired,
                "Accept hub metadata past its expiry time (it may be frozen: you may miss fixes)");
}

}  // namespace kh::cli
