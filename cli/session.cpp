// See session.hpp.
#include "session.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "kh/loader/host_build_chooser.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::cli {

const install::Settings& settings() {
  static const install::Settings s = install::Settings::from_environment();
  return s;
}

std::unique_ptr<install::Session> open_session(const install::Options& options, const loader::DeviceRequest& device) {
  install::Options with_key = options;
  with_key.selection_key = loader::host_selection_key(device);
  return std::make_unique<install::Session>(settings(), with_key, loader::host_build_chooser(device));
}

std::unique_ptr<install::Session> open_session_choosing_any(const install::Options& options) {
  // Every build fits: the forced one, else the first (the verb chooses or takes them all).
  auto any = [](const std::vector<registry::VariantEntry>& builds, const std::string& forced_key) {
    install::BuildSelection selection;
    selection.machine = "any machine";
    selection.forced = !forced_key.empty();
    for (const auto& v : builds) selection.verdicts.push_back({v.key, true, 0, "", "", "", "taken as one of all builds"});
    if (selection.forced) selection.chosen = forced_key;
    else if (!builds.empty()) selection.chosen = builds.front().key;
    return selection;
  };
  return std::make_unique<install::Session>(settings(), options, any);
}

registry::Cache open_cache(const std::string& cache_root) {
  return registry::Cache(cache_root.empty() ? settings().cache_root() : cache_root, settings().lock_policy());
}

std::string publisher_name() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const char* user = std::getenv("USER");
  return std::string(user != nullptr && *user != '\0' ? user : "someone") + "@" + (host[0] ? host : "localhost") +
         " (pid " + std::to_string(::getpid()) + ")";
}

registry::PublishOptions publish_options(const std::vector<std::string>& key_files, int expires_days) {
  const install::Settings& s = settings();
  std::vector<std::string> files = key_files;
  if (files.empty() && !s.signing_key.empty()) files.push_back(s.signing_key);
  registry::PublishOptions options;
  options.expires_days = expires_days;
  for (const auto& path : files) options.signing_keys.push_back(registry::read_secret_key_file(path));
  options.trust_cache = s.cache_root();
  options.cache_locks = s.lock_policy();
  options.trust = s.trust_options();
  options.who = publisher_name();
  return options;
}

}  // namespace kh::cli
