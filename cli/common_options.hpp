// Options shared by the verbs that reach a hub or the cache.
#pragma once

#include <CLI/CLI.hpp>

#include "kh/install/session.hpp"

namespace kh::cli {

// Adds --hub, --cache, --offline, --allow-expired and --timeout to cmd, bound to options.
inline void add_hub_options(CLI::App* cmd, install::Options& options) {
  cmd->add_option("--hub", options.hub_url, "Hub URL, e.g. file:///srv/kh-hub (default: $KH_HUB)");
  cmd->add_option("--cache", options.cache_root, "Cache directory (default: $KH_CACHE, else $XDG_CACHE_HOME/kh)");
  cmd->add_flag("--offline", options.offline, "Use the cache and cached metadata only; open no connection");
  cmd->add_flag("--allow-expired", options.allow_expired,
                "Accept hub metadata past its expiry time (it may be frozen: you may miss fixes)");
  cmd->add_option_function<double>(
         "--timeout",
         [&options](double seconds) {
           options.timeout_s = seconds;
           options.timeout_setting = "--timeout";
         },
         "Give up after this many seconds (fractions allowed) of waiting on hubs and cache locks, with the cache as "
         "before (default: $KH_OPERATION_TIMEOUT, 1800)")
      ->check(CLI::PositiveNumber);
}

}  // namespace kh::cli
