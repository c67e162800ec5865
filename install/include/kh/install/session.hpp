// One get or load: its options (a verb's flags or kh_load_options, over the settings), the
// cache, and the hubs it talks to, each opened once and kept for the whole operation, so
// that the index and the blobs of one load share a connection (one TLS handshake per host).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kh/install/selection.hpp"
#include "kh/install/settings.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/deadline.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/repo_index.hpp"

namespace kh::install {

// What a caller asks beyond the settings. Empty strings and unset flags fall back to them.
struct Options {
  std::string hub_url;     // --hub, kh_load_options.hub; else KH_HUB
  std::string cache_root;  // --cache, kh_load_options.cache_dir; else the settings' cache
  std::string variant;     // --target, kh_load_options.variant; else KH_TARGET; else selection
  std::string lockfile;    // --lockfile, kh_load_options.lockfile; else KH_LOCKFILE
  bool offline = false;    // --offline, KH_LOAD_OFFLINE; also KH_OFFLINE
  bool allow_expired = false;  // --allow-expired; also KH_ALLOW_EXPIRED
  // Reuse cached metadata younger than this instead of asking the hub: kh_load_kernel sets
  // KH_METADATA_TTL; `kernels get` leaves 0 (always ask).
  int64_t metadata_max_age_s = 0;
  // What the chooser's answer depends on besides the builds (the device asked for and the
  // machine's facts), as the entry point spells it: answers remembered in this process are kept
  // per value, so one spec loaded for two GPUs of different archs resolves to two builds.
  std::string selection_key;
  // The operation's deadline in seconds (kh_load_options.timeout_ms, --timeout), counted
  // from the session's start; 0: KH_OPERATION_TIMEOUT's. timeout_setting names it.
  double timeout_s = 0;
  std::string timeout_setting;
  // A hub's root of trust the caller ships (kh_load_options.trusted_root: root.json's
  // bytes); empty: KH_TRUSTED_ROOT's file, if set. trusted_root_source names it in messages.
  std::string trusted_root;
  std::string trusted_root_source;
};

// How a build is chosen among a release's (selection.hpp): the loader's selection for this
// machine, given by the caller, so that resolution knows nothing of host facts.

class Session {
 public:
  Session(Settings settings, Options options, BuildChooser chooser);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Settings& settings() const { return settings_; }
  // The operation's deadline: every wait on a hub or a cache lock ends by it (KH_ERROR_TIMEOUT).
  const registry::Deadline& deadline() const { return deadline_; }
  // The caller's options with every fallback applied (hub, cache, target, lockfile, ...).
  const Options& options() const { return options_; }
  registry::Cache& cache() { return cache_; }
  const BuildChooser& chooser() const { return chooser_; }

  // The hub at url, opened on first use and kept for the session.
  registry::Hub& hub(const std::string& url);
  // The hub of options().hub_url, or StatusError(KH_ERROR_INVALID_ARGUMENT) saying how to
  // name one; `what` is what needed it ("kernels-community/rms-norm").
  const std::string& require_hub(const std::string& what) const;

  // The verified index of repo from the hub at hub_url (fresh, from the cache within the
  // metadata TTL, offline, or stale-if-error), read at most once per session and hub.
  const registry::RepoIndex& index(const std::string& repo, const std::string& hub_url);

 private:
  registry::RepoIndex load_index(const std::string& repo, const std::string& hub_url);
  // With a root of trust from the caller (or KH_TRUSTED_ROOT): the hub pinned to exactly
  // it in this cache, once per hub and session (registry::TrustStore::pin_or_match).
  void check_trusted_root(registry::Hub& hub, const std::string& hub_url);

  Settings settings_;
  Options options_;
  registry::Deadline deadline_;  // before cache_: its locks wait by it
  registry::Cache cache_;
  std::set<std::string> roots_checked_;  // hub ids
  BuildChooser chooser_;
  std::map<std::string, std::unique_ptr<registry::Hub>> hubs_;
  std::map<std::pair<std::string, std::string>, registry::RepoIndex> indexes_;  // (hub, repo)
};

}  // namespace kh::install
