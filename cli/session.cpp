// See session.hpp.
#include "session.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "host_build_chooser.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::cli {

const install::Settings& settings() {
  static const install::Settings s = install::Settings::from_environment();
  return s;
}

std::unique_ptr<install::Session> open_session(const install::Options& options) {
  return std::make_unique<install::Session>(settings(), options, loader::host_build_chooser());
}

std::unique_ptr<install::Session> open_session_choosing_any(const install::Options& options) {
  auto any = [](const std::vector<registry::VariantEntry>& builds, const std::string& forced_key,
                const std::string& what) -> const registry::VariantEntry& {
    const auto it = std::find_if(builds.begin(), builds.end(), [&](const registry::VariantEntry& v) {
      return forced_key.empty() || v.key == forced_key;
    });
    if (it == builds.end())
      fail(forced_key.empty() ? KH_ERROR_NO_COMPATIBLE_VARIANT : KH_ERROR_NOT_FOUND,
           what + (forced_key.empty() ? " has no builds" : " has no build " + forced_key));
    return *it;
  };
  return std::make_unique<install::Session>(settings(), options, any);
}

std::string publisher_name() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const char* user = std::getenv("USER");
  return std::string(user != nullptr && *user != '\0' ? user : "someone") + "@" + (host[0] ? host : "localhost") +
         " (pid " + std::to_string(::getpid()) + ")";
}

}  // namespace kh::cli
