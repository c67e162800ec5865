// Every setting kh takes from the environment, gathered once at an entry point (each
// kh_load_kernel call, the `kernels` command) into one struct, from one table
// (settings.cpp) that also renders their documentation (docs/settings.md: `kernels
// settings --markdown`). Nothing below this layer reads the environment: the registry
// gets what it needs as options (HubAccess, TrustOptions, LockPolicy) made from here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kh/registry/fs.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/signed_metadata.hpp"

namespace kh::install {

struct Settings {
  // Where packages come from and go.
  std::string hub;       // KH_HUB
  std::string cache;     // KH_CACHE, else $XDG_CACHE_HOME/kh, else $HOME/.cache/kh ("" when none is set)
  std::string target;    // KH_TARGET: a variant key fetched instead of selecting one
  std::string lockfile;  // KH_LOCKFILE
  bool offline = false;  // KH_OFFLINE

  // Freshness of cached metadata.
  int64_t metadata_ttl_s = 600;       // KH_METADATA_TTL (kh_load_kernel; `kernels get` always asks)
  int64_t stale_grace_s = 7 * 86400;  // KH_STALE_GRACE
  double refresh_timeout_s = 15;      // KH_REFRESH_TIMEOUT

  // Trust.
  bool allow_expired = false;   // KH_ALLOW_EXPIRED
  bool allow_unsigned = false;  // KH_ALLOW_UNSIGNED
  std::string trusted_root_file;  // KH_TRUSTED_ROOT: a root.json to pin on first use

  // Talking to hubs.
  std::string token;      // KH_TOKEN (else the config file's token for the hub)
  std::string ca_bundle;  // KH_CA_BUNDLE
  registry::HttpOptions::Progress progress = registry::HttpOptions::Progress::Auto;  // KH_PROGRESS
  int parallel_downloads = 4;          // KH_PARALLEL_DOWNLOADS
  double transfer_min_timeout_s = 30;  // KH_TRANSFER_MIN_TIMEOUT
  double transfer_min_rate = 64 * 1024;  // KH_TRANSFER_MIN_RATE
  double operation_timeout_s = 1800;   // KH_OPERATION_TIMEOUT
  double floor_rate = 8 * 1024;        // KH_TRANSFER_FLOOR_RATE (bytes/s; 0: none)
  double floor_window_s = 10;          // KH_TRANSFER_FLOOR_WINDOW
  double floor_grace_s = 10;           // KH_TRANSFER_FLOOR_GRACE
  double lock_timeout_s = registry::kDefaultLockTimeoutSeconds;  // KH_LOCK_TIMEOUT

  // Publishing.
  std::string publish_user, publish_password;  // KH_PUBLISH_USER, KH_PUBLISH_PASSWORD
  std::string publish_token;                   // KH_PUBLISH_TOKEN
  std::string signing_key;                     // KH_SIGNING_KEY

  // Building packages (`kernels build`, `kernels init`).
  std::string author_kit;                    // KH_AUTHOR_KIT: the author kit's folder, else beside `kernels`
  std::string source_repository;             // KH_SOURCE_REPOSITORY: the repository provenance names
  std::vector<std::string> build_cmake_args;  // KH_BUILD_CMAKE_ARGS: more arguments for each configure

  // OCI registries (oci:// hubs).
  std::string registry_auth;  // KH_REGISTRY_AUTH: "user:password"
  // $DOCKER_CONFIG/config.json, else $HOME/.docker/config.json: its `auths` name the
  // credentials of each registry (as `docker login` and `skopeo login` write them).
  std::string docker_config_file;

  // $XDG_CONFIG_HOME/kh/config.json, else $HOME/.config/kh/config.json ("" without either).
  std::string config_file;
  // $TMPDIR, else /tmp: scratch folders.
  std::string tmp_dir = "/tmp";

  // Reads every row of the table. Throws StatusError(KH_ERROR_INVALID_ARGUMENT) naming
  // the variable and the values it takes, for a value that is not one of them.
  static Settings from_environment();

  // The cache folder, or StatusError(KH_ERROR_IO) saying which variables to set.
  const std::string& cache_root() const;
  // The options of a connection to the hub at url: the token is KH_TOKEN, else the config
  // file's for that hub (the key naming it exactly, or the longest path prefix of it on
  // the same scheme, host and port): {"hubs": {"https://hub.example/kh": {"token": "..."}}}.
  // Throws StatusError(KH_ERROR_INVALID_ARGUMENT) for a malformed config file.
  registry::HttpOptions http_options(const std::string& hub_url) const;
  // Everything opening the hub at url needs (http options, write credentials, locks; for
  // an oci:// hub the registry's credentials: KH_REGISTRY_AUTH, else the Docker config's
  // `auths` entry for its host[:port], and KH_TOKEN as a registry token). Throws
  // StatusError(KH_ERROR_INVALID_ARGUMENT) for a malformed Docker config.
  registry::HubAccess hub_access(const std::string& hub_url) const;
  registry::TrustOptions trust_options() const;
  registry::LockPolicy lock_policy() const;
};

// One row of the table: a variable, what it takes, its default, what it does.
struct SettingDoc {
  const char* name;
  const char* takes;     // "seconds", "URL", "0 or 1", ...
  const char* fallback;  // the default, in words
  const char* doc;
  const char* group;     // the heading it is listed under
};
// Every KH_* variable kh reads, in the order docs/settings.md lists them.
const std::vector<SettingDoc>& setting_docs();
// docs/settings.md, as generated from the table.
std::string settings_markdown();

}  // namespace kh::install
