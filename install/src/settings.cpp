// The table of KH_* variables (settings.hpp): each row names a variable, documents it and
// says how its value lands in Settings. from_environment() walks the rows; the same rows
// render docs/settings.md, so the documentation cannot drift from what is read.
#include "kh/install/settings.hpp"

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kh/registry/fs.hpp"
#include "kh/registry/json_limits.hpp"
#include "kh/registry/minisign.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::install {
namespace {

using Apply = std::function<void(Settings&, const std::string& name, const std::string& value)>;

struct Row {
  SettingDoc doc;
  Apply apply;  // called only when the variable is set and not empty
};

[[noreturn]] void bad(const std::string& name, const std::string& value, const std::string& takes) {
  fail(KH_ERROR_INVALID_ARGUMENT, name + "='" + value + "' must be " + takes);
}

bool flag(const std::string& value) { return value != "0"; }

// A number (fractions allowed), at least `min`.
double number(const std::string& name, const std::string& value, double min, const std::string& takes) {
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(value.c_str(), &end);
  if (errno != 0 || end == value.c_str() || *end != '\0' || !(d >= min) || d > 1e12) bad(name, value, takes);
  return d;
}

// A whole number in [min, max].
long long whole(const std::string& name, const std::string& value, long long min, long long max,
                const std::string& takes) {
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(value.c_str(), &end, 10);
  if (errno != 0 || end == value.c_str() || *end != '\0' || n < min || n > max) bad(name, value, takes);
  return n;
}

// The apply of a row whose value is a number (fractions allowed), at least `min`, stored in
// `member`: one function for the many such rows, `takes` saying what a bad value must be.
Apply number_into(double Settings::*member, double min, const char* takes) {
  return [member, min, takes](Settings& s, const std::string& n, const std::string& v) {
    s.*member = number(n, v, min, takes);
  };
}

// The apply of a row whose value is kept as it is, in `member`.
Apply text_into(std::string Settings::*member) {
  return [member](Settings& s, const std::string&, const std::string& v) { s.*member = v; };
}

// The apply of a row whose value must be one line (a header or URL is made of it), stored in
// `member`. The error shows "..." for the value: a token, or a URL that may carry credentials.
Apply one_line_into(std::string Settings::*member, const char* takes) {
  return [member, takes](Settings& s, const std::string& n, const std::string& v) {
    if (v.find_first_of("\r\n") != std::string::npos) bad(n, "...", takes);
    s.*member = v;
  };
}

const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
      {{"KH_HUB", "URL", "none", "The hub `kernels get`, `info`, `lock`, `doctor` and `kh_load_kernel` use when none "
        "is given (`--hub`, `kh_load_options.hub`): `file:///path`, `https://host/path`.", "Where packages come from"},
       text_into(&Settings::hub)},
      {{"KH_CACHE", "folder", "`$XDG_CACHE_HOME/kh`, else `~/.cache/kh`",
        "The cache: verified archives, unpacked packages, each hub's verified metadata and trust state.",
        "Where packages come from"},
       text_into(&Settings::cache)},
      {{"KH_TARGET", "variant key", "none: select for this machine",
        "Fetch and load this build (e.g. `cuda13.0-sm90a-abi1-x86_64-linux`) whatever this machine is.",
        "Where packages come from"},
       text_into(&Settings::target)},
      {{"KH_LOCKFILE", "file", "none", "Resolve only what this `kernels.lock` pins, and accept only its bytes.",
        "Where packages come from"},
       text_into(&Settings::lockfile)},
      {{"KH_OFFLINE", "`1` (any value but `0`)", "off",
        "Use the cache and its verified metadata only; open no connection.", "Where packages come from"},
       [](Settings& s, const std::string&, const std::string& v) { s.offline = flag(v); }},

      {{"KH_METADATA_TTL", "seconds", "600",
        "How long `kh_load_kernel` reuses a hub's verified index without asking the hub again (`kernels get` "
        "always asks).", "Freshness"},
       [](Settings& s, const std::string& n, const std::string& v) {
         s.metadata_ttl_s = whole(n, v, 0, int64_t{1} << 40, "a whole number of seconds, 0 or more");
       }},
      {{"KH_STALE_GRACE", "seconds", "604800 (7 days)",
        "When the hub cannot be asked, a cached verified index at most this long past its TTL is used, with a "
        "warning; never past its signed expiry. `0`: never.", "Freshness"},
       [](Settings& s, const std::string& n, const std::string& v) {
         s.stale_grace_s = whole(n, v, 0, int64_t{1} << 40, "a whole number of seconds (0: never)");
       }},
      {{"KH_REFRESH_TIMEOUT", "seconds", "15",
        "With such a cached copy at hand, asking an http(s) hub may take at most this long.", "Freshness"},
       [](Settings& s, const std::string& n, const std::string& v) {
         s.refresh_timeout_s = number(n, v, 0, "a number of seconds above 0");
         if (s.refresh_timeout_s <= 0) bad(n, v, "a number of seconds above 0");
       }},

      {{"KH_ALLOW_EXPIRED", "`1`", "off",
        "Accept hub metadata past its expiry time (it may be frozen: you may miss fixes); `--allow-expired`.",
        "Trust"},
       [](Settings& s, const std::string&, const std::string& v) { s.allow_expired = flag(v); }},
      {{"KH_ALLOW_UNSIGNED", "`1`", "off",
        "Accept unsigned metadata from a hub with no pinned root (local development, tests); warns every time.",
        "Trust"},
       [](Settings& s, const std::string&, const std::string& v) { s.allow_unsigned = flag(v); }},
      {{"KH_TRUSTED_ROOT", "`root.json` file", "none",
        "A hub's root of trust, shipped with the host: a cache with no pinned root for the hub is pinned to "
        "exactly this one on first use (no `kernels trust` needed); a cache pinned to another root for that hub "
        "is an error naming both, never re-pinned. `kh_load_options.trusted_root` wins over it (docs/trust.md).",
        "Trust"},
       text_into(&Settings::trusted_root_file)},

      {{"KH_TOKEN", "token", "the config file's token for the hub",
        "Bearer token for reading a hub; sent only to the hub's own scheme, host and port.", "Talking to hubs"},
       one_line_into(&Settings::token, "a token without line breaks")},
      {{"KH_CA_BUNDLE", "PEM file", "the system's CAs", "CAs to trust instead of the system's (a private hub's CA).",
        "Talking to hubs"},
       text_into(&Settings::ca_bundle)},
      {{"KH_PROGRESS", "`0` or `1`", "on when stderr is a terminal",
        "`0`: never show progress and wait lines on stderr; `1`: always.", "Talking to hubs"},
       [](Settings& s, const std::string& n, const std::string& v) {
         if (v != "0" && v != "1") bad(n, v, "0 (never) or 1 (always)");
         s.progress = v == "0" ? registry::HttpOptions::Progress::Never : registry::HttpOptions::Progress::Always;
       }},
      {{"KH_PARALLEL_DOWNLOADS", "1 to 16", "4", "Blob transfers in flight at once.", "Talking to hubs"},
       [](Settings& s, const std::string& n, const std::string& v) {
         s.parallel_downloads = static_cast<int>(whole(n, v, 1, registry::kMaxParallelDownloads,
                                                       "a whole number from 1 to " +
                                                           std::to_string(registry::kMaxParallelDownloads)));
       }},
      {{"KH_TRANSFER_MIN_TIMEOUT", "seconds", "30",
        "Every transfer may take at least this long (its deadline is the larger of this and size / rate).",
        "Talking to hubs"},
       number_into(&Settings::transfer_min_timeout_s, 1, "a number, at least 1")},
      {{"KH_TRANSFER_MIN_RATE", "bytes/s", "65536", "The rate a transfer's deadline assumes: a slow link lowers it.",
        "Talking to hubs"},
       number_into(&Settings::transfer_min_rate, 1, "a number, at least 1")},
      {{"KH_TRANSFER_FLOOR_RATE", "bytes/s", "8192",
        "The rate floor: once a transfer (metadata or blob) is past `KH_TRANSFER_FLOOR_GRACE`, an average below "
        "this over the last `KH_TRANSFER_FLOOR_WINDOW` seconds ends it, so a hub that drips, stalls or sends a byte "
        "now and then costs seconds; the error names the hub, the bytes received and the rate seen. A transfer "
        "that had brought 1 MiB since its last failure resumes instead. `0`: no floor.",
        "Talking to hubs"},
       number_into(&Settings::floor_rate, 0, "a number of bytes/s, 0 or more (0: no floor)")},
      {{"KH_TRANSFER_FLOOR_WINDOW", "seconds", "10", "The window the rate floor averages over.", "Talking to hubs"},
       number_into(&Settings::floor_window_s, 0.1, "a number of seconds, at least 0.1")},
      {{"KH_TRANSFER_FLOOR_GRACE", "seconds", "10",
        "How long a transfer runs before the rate floor applies (connecting, a hub slow to start answering).",
        "Talking to hubs"},
       number_into(&Settings::floor_grace_s, 0, "a number of seconds, 0 or more")},
      {{"KH_OPERATION_TIMEOUT", "seconds", "1800",
        "One get or load may spend at most this long waiting on hubs and cache locks, retries included "
        "(`kh_load_options.timeout_ms` and `--timeout` set it for one call); past it the call fails with "
        "`KH_ERROR_TIMEOUT` naming the hub and what it waited for, and the cache is as before the call (but for a "
        "partial download of 1 MiB or more, kept to be resumed). `0`: no limit.",
        "Talking to hubs"},
       number_into(&Settings::operation_timeout_s, 0, "a number, at least 0")},
      {{"KH_LOCK_TIMEOUT", "seconds", "30",
        "How long to wait for another process's cache lock (10 times as long while that process runs).",
        "Talking to hubs"},
       number_into(&Settings::lock_timeout_s, 0, "a number of seconds (0 or more; e.g. 30, the default)")},

      {{"KH_PUBLISH_USER", "user name", "none", "With `KH_PUBLISH_PASSWORD`: HTTP basic auth for uploads.",
        "Publishing"},
       [](Settings& s, const std::string& n, const std::string& v) {
         if (v.find(':') != std::string::npos) bad(n, v, "a user name without ':'");
         s.publish_user = v;
       }},
      {{"KH_PUBLISH_PASSWORD", "password", "none", "The password of `KH_PUBLISH_USER`.", "Publishing"},
       text_into(&Settings::publish_password)},
      {{"KH_PUBLISH_TOKEN", "token", "the hub's read token", "Bearer token for uploads.", "Publishing"},
       one_line_into(&Settings::publish_token, "a token without line breaks")},
      {{"KH_SIGNING_KEY", "secret key file", "none", "The key `kernels publish` signs indexes with when no `--key` is given.",
        "Publishing"},
       text_into(&Settings::signing_key)},

      {{"KH_AUTHOR_KIT", "folder", "`<prefix>/share/kh/author` beside `kernels`",
        "The author kit `kernels build` and `kernels init` use (docs/authoring.md).", "Building packages"},
       text_into(&Settings::author_kit)},
      {{"KH_SOURCE_REPOSITORY", "URL", "the checkout's `origin` remote",
        "The source repository a build's provenance names (credentials in a URL are removed).", "Building packages"},
       one_line_into(&Settings::source_repository, "a URL on one line")},
      {{"KH_BUILD_CMAKE_ARGS", "arguments", "none",
        "More arguments for each target's configure in `kernels build`, separated by spaces (after any "
        "`--cmake-arg`), e.g. `-DCMAKE_C_FLAGS=-g`.",
        "Building packages"},
       [](Settings& s, const std::string&, const std::string& v) {
         s.build_cmake_args.clear();
         size_t start = 0;
         while (start < v.size()) {
           const size_t end = v.find(' ', start);
           const std::string word = v.substr(start, end == std::string::npos ? std::string::npos : end - start);
           if (!word.empty()) s.build_cmake_args.push_back(word);
           if (end == std::string::npos) break;
           start = end + 1;
         }
       }},

      {{"KH_REGISTRY_AUTH", "`user:password`", "the `auths` of the Docker config",
        "Credentials for `oci://` hubs, reading and publishing alike: sent as Basic auth when the registry asks "
        "for it, or to its token service for a bearer token (`KH_TOKEN` is taken as such a token itself).",
        "OCI registries"},
       [](Settings& s, const std::string& n, const std::string& v) {
         if (v.find(':') == std::string::npos || v.find_first_of("\r\n") != std::string::npos)
           bad(n, "...", "user:password");
         s.registry_auth = v;
       }},
  };
  return table;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string strip_slashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// A JSON file of the user's (the config file, the Docker config), nullopt when there is
// none; `what` names it and `fix` says what to do in the error for one that is not JSON.
std::optional<nlohmann::json> read_user_json(const std::string& path, const std::string& what, const std::string& fix) {
  if (path.empty() || !registry::path_exists(path)) return std::nullopt;
  try {
    const std::string text = registry::read_file(path, 1u << 20);
    registry::check_json_depth(text, path, KH_ERROR_INVALID_ARGUMENT);
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(KH_ERROR_INVALID_ARGUMENT, what + " " + path + " is not valid JSON (" + e.what() + "); " + fix);
  }
}

// The config file's token for `url`, if any.
std::string token_from_config(const std::string& path, const std::string& url) {
  const std::optional<nlohmann::json> file = read_user_json(path, "config file", "fix it or remove it");
  if (!file) return "";
  const nlohmann::json& j = *file;
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
      fail(KH_ERROR_INVALID_ARGUMENT, "config file " + path + ": hub \"" + registry::sanitize_url(key) +
                                          "\" needs {\"token\": \"...\"}");
    best_key = key;
    best_token = entry["token"].get<std::string>();
  }
  return best_token;
}

// "user:password" for the registry of an oci:// URL from a Docker config.json's `auths`
// (keys "host[:port]" or "https://host[:port]"; entries {"auth": base64("user:password")}
// or {"username", "password"}); "" when it names none.
std::string docker_config_auth(const std::string& path, const std::string& oci_url) {
  std::optional<nlohmann::json> file = read_user_json(path, "Docker config", "fix it or set DOCKER_CONFIG");
  if (!file) return "";
  nlohmann::json& j = *file;
  std::string host = oci_url.substr(6);
  host = host.substr(0, host.find('/'));
  if (!j.is_object() || !j.contains("auths") || !j["auths"].is_object()) return "";
  std::string plain = host;
  if (plain.size() > 4 && plain.compare(plain.size() - 4, 4, ":443") == 0) plain.resize(plain.size() - 4);
  for (const std::string& key : {host, "https://" + host, plain, "https://" + plain}) {
    if (!j["auths"].contains(key)) continue;
    const auto& e = j["auths"][key];
    if (!e.is_object()) break;
    if (e.contains("auth") && e["auth"].is_string()) {
      std::string decoded;
      if (!registry::minisign::base64_decode(e["auth"].get<std::string>(), &decoded) ||
          decoded.find(':') == std::string::npos)
        fail(KH_ERROR_INVALID_ARGUMENT, "Docker config " + path + ": the \"auth\" of \"" + key +
                                            "\" is not base64 of user:password");
      return decoded;
    }
    if (e.contains("username") && e.contains("password") && e["username"].is_string() && e["password"].is_string())
      return e["username"].get<std::string>() + ":" + e["password"].get<std::string>();
  }
  return "";
}

}  // namespace

Settings Settings::from_environment() {
  Settings s;
  for (const Row& row : rows()) {
    const std::string value = env(row.doc.name);
    if (!value.empty()) row.apply(s, row.doc.name, value);
  }
  if (!s.publish_user.empty() && s.publish_password.empty())
    fail(KH_ERROR_INVALID_ARGUMENT, "KH_PUBLISH_USER is set but KH_PUBLISH_PASSWORD is not; set both for basic auth");
  // Where the cache is when KH_CACHE does not say: the XDG layout.
  if (s.cache.empty()) {
    if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty())
      s.cache = xdg + "/kh";
    else if (const std::string home = env("HOME"); !home.empty())
      s.cache = home + "/.cache/kh";
  }
  if (const std::string xdg = env("XDG_CONFIG_HOME"); !xdg.empty())
    s.config_file = xdg + "/kh/config.json";
  else if (const std::string home = env("HOME"); !home.empty())
    s.config_file = home + "/.config/kh/config.json";
  if (const std::string tmp = env("TMPDIR"); !tmp.empty()) s.tmp_dir = tmp;
  if (const std::string dc = env("DOCKER_CONFIG"); !dc.empty())
    s.docker_config_file = dc + "/config.json";
  else if (const std::string home = env("HOME"); !home.empty())
    s.docker_config_file = home + "/.docker/config.json";
  return s;
}

const std::string& Settings::cache_root() const {
  if (cache.empty())
    fail(KH_ERROR_IO, "cannot find a cache directory: none of KH_CACHE, XDG_CACHE_HOME, HOME is set; set KH_CACHE");
  return cache;
}

registry::HttpOptions Settings::http_options(const std::string& hub_url) const {
  registry::HttpOptions o;
  o.token = token.empty() ? token_from_config(config_file, strip_slashes(hub_url)) : token;
  o.ca_bundle = ca_bundle;
  o.progress = progress;
  o.max_parallel = parallel_downloads;
  o.transfer_min_timeout_s = transfer_min_timeout_s;
  o.transfer_min_rate = transfer_min_rate;
  o.operation_timeout_s = operation_timeout_s;
  o.floor_rate = floor_rate;
  o.floor_window_s = floor_window_s;
  o.floor_grace_s = floor_grace_s;
  return o;
}

registry::HubAccess Settings::hub_access(const std::string& hub_url) const {
  registry::HubAccess a;
  a.http = http_options(hub_url);
  a.write.user = publish_user;
  a.write.password = publish_password;
  a.write.bearer = publish_token;
  a.locks = lock_policy();
  if (hub_url.rfind("oci://", 0) == 0) {
    a.registry.bearer = token;
    std::string auth = registry_auth;
    if (auth.empty()) auth = docker_config_auth(docker_config_file, hub_url);
    const size_t colon = auth.find(':');
    if (colon != std::string::npos) {
      a.registry.user = auth.substr(0, colon);
      a.registry.password = auth.substr(colon + 1);
    }
  }
  return a;
}

registry::TrustOptions Settings::trust_options() const {
  registry::TrustOptions t;
  t.allow_expired = allow_expired;
  t.allow_unsigned = allow_unsigned;
  return t;
}

registry::LockPolicy Settings::lock_policy() const {
  return registry::LockPolicy{lock_timeout_s, progress != registry::HttpOptions::Progress::Never};
}

const std::vector<SettingDoc>& setting_docs() {
  static const std::vector<SettingDoc> docs = [] {
    std::vector<SettingDoc> out;
    for (const Row& r : rows()) out.push_back(r.doc);
    return out;
  }();
  return docs;
}

std::string settings_markdown() {
  std::string md =
      "# Settings\n\n"
      "<!-- Generated by `kernels settings --markdown` from the table in install/src/settings.cpp;\n"
      "     a test fails when this file differs from it. Edit the table, then regenerate. -->\n\n"
      "kh reads these environment variables once per `kernels` command and once per\n"
      "`kh_load_kernel` call. A command-line option or a `kh_load_options` field, where there\n"
      "is one, wins over its variable. An empty variable counts as unset; a value outside what\n"
      "a variable takes is an error that names it. `kernels settings` shows the values in\n"
      "effect.\n";
  std::string group;
  for (const SettingDoc& d : setting_docs()) {
    if (group != d.group) {
      group = d.group;
      md += "\n## " + group + "\n\n| variable | takes | default | what it does |\n| --- | --- | --- | --- |\n";
    }
    md += std::string("| `") + d.name + "` | " + d.takes + " | " + d.fallback + " | " + d.doc + " |\n";
  }
  md +=
      "\n## Read from elsewhere\n\n"
      "| variable | what kh does with it |\n| --- | --- |\n"
      "| `XDG_CACHE_HOME`, `HOME` | the cache's default place (`KH_CACHE` unset) |\n"
      "| `XDG_CONFIG_HOME`, `HOME` | the config file, `$XDG_CONFIG_HOME/kh/config.json` (else "
      "`~/.config/kh/config.json`): per-hub tokens, `{\"hubs\": {\"https://hub.example/kh\": {\"token\": \"...\"}}}` |\n"
      "| `TMPDIR` | scratch folders (default `/tmp`) |\n"
      "| `DOCKER_CONFIG`, `HOME` | the Docker config, `$DOCKER_CONFIG/config.json` (else `~/.docker/config.json`): "
      "its `auths` give `oci://` registries' credentials, as `docker login` or `skopeo login` write them "
      "(`skopeo login --authfile` that file too; credential helpers are not run) |\n"
      "| `USER` | names a publisher to another one waiting for a hub's publish lock |\n"
      "| `https_proxy`, `http_proxy`, `all_proxy`, `no_proxy` | proxies, read by libcurl as usual |\n"
      "\n`KH_LIBRARY` is the Python binding's (which libkh it loads, docs/python.md); kernel packages may\n"
      "read variables of their own, documented with their ops.\n";
  return md;
}

}  // namespace kh::install
