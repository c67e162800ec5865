// Options shared by the verbs that reach a hub or the cache.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "kh/install/session.hpp"

namespace kh::cli {

// --hub alone: for a verb that reads only a hub's unsigned files (search), so has no use for
// the cache, offline mode or expiry options add_hub_options adds.
inline void add_hub_option(CLI::App* cmd, std::string& hub_url) {
  cmd->add_option("--hub", hub_url, "Hub URL, e.g. file:///srv/kh-hub (default: $KH_HUB)");
}

// --cache alone: for a verb that only looks after the cache (list, cache); open_cache opens it.
inline void add_cache_option(CLI::App* cmd, std::string& cache_root) {
  cmd->add_option("--cache", cache_root, "Cache directory (default: $KH_CACHE, else $XDG_CACHE_HOME/kh)");
}

// Adds --hub, --cache, --offline, --allow-expired and --timeout to cmd, bound to options.
inline void add_hub_options(CLI::App* cmd, install::Options& options) {
  add_hub_option(cmd, options.hub_url);
  add_cache_option(cmd, options.cache_root);
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
