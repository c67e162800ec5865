// Where an http(s) hub's options come from: the environment and the config file
// ($XDG_CONFIG_HOME/kh/config.json); see http_options.hpp.
#include <cerrno>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "http_url.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/json_limits.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry {
namespace {

using detail::strip_slashes;

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// The token in the config file for `url`, if any.
std::string token_from_config(const std::string& url) {
  std::string dir = env_or_empty("XDG_CONFIG_HOME");
  if (dir.empty()) {
    std::string home = env_or_empty("HOME");
    if (home.empty()) return "";
    dir = home + "/.config";
  }
  const std::string path = dir + "/kh/config.json";
  if (!path_exists(path)) return "";
  nlohmann::json j;
  try {
    const std::string text = read_file(path, 1u << 20);
    check_json_depth(text, path, KH_ERROR_INVALID_ARGUMENT);
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(KH_ERROR_INVALID_ARGUMENT, "config file " + path + " is not valid JSON (" + e.what() +
                                        "); fix it or remove it");
  }
  if (!j.is_object() || !j.contains("hubs")) return "";
  const auto& hubs = j["hubs"];
  if (!hubs.is_object())
    fail(KH_ERROR_INVALID_ARGUMENT, "config file " + path + ": \"hubs\" must be an object of hub URL -> {\"token\": ...}");
  std::string best_key, best_token;
  for (auto it = hubs.begin(); it != hubs.end(); ++it) {
    std::string key = strip_slashes(it.key());
    if (key.empty() || !(url == key || url.rfind(key + "/", 0) == 0)) continue;
    if (key.size() <= best_key.size()) continue;
    const auto& entry = it.value();
    if (!entry.is_object() || !entry.contains("token") || !entry["token"].is_string())
      fail(KH_ERROR_INVALID_ARGUMENT, "config file " + path + ": hub \"" + sanitize_url(key) +
                                          "\" needs {\"token\": \"...\"}");
    best_key = key;
    best_token = entry["token"].get<std::string>();
  }
  return best_token;
}

// A positive number (fractions allowed) from the environment, at least `min`; `fallback`
// when unset. Throws KH_ERROR_INVALID_ARGUMENT naming the variable otherwise.
double seconds_from_env(const char* name, double fallback, double min) {
  const std::string v = env_or_empty(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(v.c_str(), &end);
  if (errno != 0 || end == v.c_str() || *end != '\0' || !(d >= min) || d > 1e12)
    fail(KH_ERROR_INVALID_ARGUMENT, std::string(name) + "='" + v + "' must be a number, at least " +
                                        std::to_string(static_cast<long long>(min)));
  return d;
}

}  // namespace

std::string sanitize_url(const std::string& url) {
  std::string s = url;
  size_t scheme_end = s.find("://");
  size_t host_start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  size_t path_start = s.find_first_of("/?#", host_start);
  size_t at = s.rfind('@', path_start == std::string::npos ? std::string::npos : path_start);
  if (at != std::string::npos && at >= host_start && (path_start == std::string::npos || at < path_start))
    s.erase(host_start, at + 1 - host_start);
  size_t q = s.find_first_of("?#");
  if (q != std::string::npos) s = s.substr(0, q) + (s[q] == '?' ? "?..." : "");
  return printable(s);  // a URL may come from a server (Location): no control bytes reach a terminal
}

HttpOptions http_options_from_environment(const std::string& url) {
  HttpOptions o;
  o.token = env_or_empty("KH_TOKEN");
  if (o.token.empty()) o.token = token_from_config(strip_slashes(url));
  o.ca_bundle = env_or_empty("KH_CA_BUNDLE");
  const std::string progress = env_or_empty("KH_PROGRESS");
  if (progress == "0") o.progress = HttpOptions::Progress::Never;
  if (progress == "1") o.progress = HttpOptions::Progress::Always;
  o.transfer_min_timeout_s = seconds_from_env("KH_TRANSFER_MIN_TIMEOUT", o.transfer_min_timeout_s, 1);
  o.transfer_min_rate = seconds_from_env("KH_TRANSFER_MIN_RATE", o.transfer_min_rate, 1);
  o.operation_timeout_s = seconds_from_env("KH_OPERATION_TIMEOUT", o.operation_timeout_s, 0);
  const std::string parallel = env_or_empty("KH_PARALLEL_DOWNLOADS");
  if (!parallel.empty()) {
    char* end = nullptr;
    long n = std::strtol(parallel.c_str(), &end, 10);
    if (end == parallel.c_str() || *end != '\0' || n < 1 || n > kMaxParallelDownloads)
      fail(KH_ERROR_INVALID_ARGUMENT, "KH_PARALLEL_DOWNLOADS='" + parallel + "' must be a whole number from 1 to " +
                                          std::to_string(kMaxParallelDownloads));
    o.max_parallel = static_cast<int>(n);
  }
  return o;
}

}  // namespace kh::registry
