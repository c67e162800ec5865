// The settings table (install/src/settings.cpp): every KH_* variable lands in Settings as
// documented, a bad value is refused naming its variable, and the registry options made
// from it (http options per hub, write credentials, locks, trust) say the same.
#include <doctest/doctest.h>

#include <cstdlib>

#include "../registry/test_util.hpp"
#include "kh/install/settings.hpp"

using kh::install::Settings;
using kh_test::ScopedEnv;

namespace {

// Every variable of the table unset for a scope (the test's own environment may set some).
struct CleanEnvironment {
  std::vector<std::unique_ptr<ScopedEnv>> saved;
  CleanEnvironment() {
    for (const auto& d : kh::install::setting_docs()) {
      saved.push_back(std::make_unique<ScopedEnv>(d.name, ""));
      ::unsetenv(d.name);
    }
  }
};

}  // namespace

TEST_CASE("defaults: nothing set gives the documented values") {
  CleanEnvironment clean;
  const Settings s = Settings::from_environment();
  CHECK(s.metadata_ttl_s == 600);
  CHECK(s.stale_grace_s == 7 * 86400);
  CHECK(s.refresh_timeout_s == 15);
  CHECK(s.parallel_downloads == 4);
  CHECK(s.lock_timeout_s == 30);
  const kh::registry::HttpOptions d = s.http_options("http://127.0.0.1/hub");
  CHECK(d.transfer_min_timeout_s == 30);
  CHECK(d.transfer_min_rate == 64 * 1024);
  CHECK(d.operation_timeout_s == 1800);
  CHECK(d.floor_rate == 8192);
  CHECK(d.floor_window_s == 10);
  CHECK(d.floor_grace_s == 10);
  CHECK(d.progress == kh::registry::HttpOptions::Progress::Auto);
  CHECK_FALSE(s.trust_options().allow_unsigned);
}

TEST_CASE("the cache follows KH_CACHE, XDG_CACHE_HOME, HOME") {
  CleanEnvironment clean;
  ScopedEnv env{{"KH_CACHE", "/k"}, {"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}};
  CHECK(Settings::from_environment().cache_root() == "/k");
  ::unsetenv("KH_CACHE");
  CHECK(Settings::from_environment().cache_root() == "/x/kh");
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(Settings::from_environment().cache_root() == "/h/.cache/kh");
  ::unsetenv("HOME");
  kh_test::expect_status([] { (void)Settings::from_environment().cache_root(); }, KH_ERROR_IO);
}

TEST_CASE("deadlines, parallelism, locks and progress come from the environment and are checked") {
  CleanEnvironment clean;
  {
    ScopedEnv env({{"KH_TRANSFER_MIN_TIMEOUT", "12.5"}, {"KH_TRANSFER_MIN_RATE", "1000"}, {"KH_OPERATION_TIMEOUT", "0"},
                   {"KH_PARALLEL_DOWNLOADS", "8"}, {"KH_LOCK_TIMEOUT", "0.25"}, {"KH_PROGRESS", "0"},
                   {"KH_TRANSFER_FLOOR_RATE", "0"}, {"KH_TRANSFER_FLOOR_WINDOW", "2.5"}, {"KH_TRANSFER_FLOOR_GRACE", "0"}});
    const Settings s = Settings::from_environment();
    const kh::registry::HttpOptions o = s.http_options("http://127.0.0.1/hub");
    CHECK(o.floor_rate == 0);
    CHECK(o.floor_window_s == doctest::Approx(2.5));
    CHECK(o.floor_grace_s == 0);
    CHECK(o.transfer_min_timeout_s == doctest::Approx(12.5));
    CHECK(o.transfer_min_rate == doctest::Approx(1000));
    CHECK(o.operation_timeout_s == 0);
    CHECK(o.max_parallel == 8);
    CHECK(o.progress == kh::registry::HttpOptions::Progress::Never);
    CHECK(s.lock_policy().timeout_s == doctest::Approx(0.25));
    CHECK_FALSE(s.lock_policy().announce_wait);
    CHECK(s.hub_access("http://127.0.0.1/hub").locks.timeout_s == doctest::Approx(0.25));
  }
  for (const auto& [name, value] : std::vector<std::pair<const char*, const char*>>{
           {"KH_OPERATION_TIMEOUT", "soon"}, {"KH_PARALLEL_DOWNLOADS", "0"}, {"KH_PARALLEL_DOWNLOADS", "17"},
           {"KH_LOCK_TIMEOUT", "soon"}, {"KH_TRANSFER_MIN_RATE", "0"}, {"KH_METADATA_TTL", "-1"},
           {"KH_STALE_GRACE", "1.5"}, {"KH_REFRESH_TIMEOUT", "0"}, {"KH_PROGRESS", "yes"},
           {"KH_TRANSFER_FLOOR_RATE", "-1"}, {"KH_TRANSFER_FLOOR_WINDOW", "0"}, {"KH_TRANSFER_FLOOR_GRACE", "soon"}}) {
    CAPTURE(name);
    CAPTURE(value);
    ScopedEnv bad(name, value);
    const std::string msg = kh_test::expect_status([] { (void)Settings::from_environment(); }, KH_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE(msg.find(name) != std::string::npos, msg);  // the message names the variable
  }
}

TEST_CASE("the token comes from KH_TOKEN, else from the config file for the hub") {
  CleanEnvironment clean;
  kh_test::TempDir d;
  kh::registry::make_directories(d / "kh");
  kh_test::write_text(d / "kh/config.json",
                      R"({"hubs": {"https://hub.example.com/kh/": {"token": "tok-a"},
                                  "https://hub.example.com": {"token": "tok-host"},
                                  "https://other.example.com": {"token": "tok-b"}}})",
                      0600);
  ScopedEnv xdg("XDG_CONFIG_HOME", d.path());
  const Settings s = Settings::from_environment();
  CHECK(s.http_options("https://hub.example.com/kh").token == "tok-a");
  CHECK(s.http_options("https://hub.example.com/kh/sub").token == "tok-a");
  CHECK(s.http_options("https://hub.example.com/other").token == "tok-host");
  CHECK(s.http_options("https://other.example.com.evil.org/kh").token.empty());
  CHECK(s.http_options("http://hub.example.com/kh").token.empty());
  {
    ScopedEnv token("KH_TOKEN", "tok-env");
    CHECK(Settings::from_environment().http_options("https://hub.example.com/kh").token == "tok-env");
  }
  kh_test::write_text(d / "kh/config.json", "{not json", 0600);
  kh_test::expect_status([&] { (void)s.http_options("https://hub.example.com/kh"); }, KH_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("write credentials: basic auth needs both halves; a token goes as bearer") {
  CleanEnvironment clean;
  {
    ScopedEnv user("KH_PUBLISH_USER", "publisher");
    const std::string msg = kh_test::expect_status([] { (void)Settings::from_environment(); }, KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find("KH_PUBLISH_PASSWORD") != std::string::npos);
  }
  {
    ScopedEnv both{{"KH_PUBLISH_USER", "publisher"}, {"KH_PUBLISH_PASSWORD", "pa55"}};
    const kh::registry::HubAccess a = Settings::from_environment().hub_access("https://h/kh");
    CHECK(a.write.user == "publisher");
    CHECK(a.write.password == "pa55");
  }
  ScopedEnv token("KH_PUBLISH_TOKEN", "t0k");
  CHECK(Settings::from_environment().hub_access("https://h/kh").write.bearer == "t0k");
}

TEST_CASE("flags: any value but 0 turns them on") {
  CleanEnvironment clean;
  ScopedEnv env{{"KH_OFFLINE", "yes"}, {"KH_ALLOW_EXPIRED", "1"}, {"KH_ALLOW_UNSIGNED", "0"}};
  const Settings s = Settings::from_environment();
  CHECK(s.offline);
  CHECK(s.trust_options().allow_expired);
  CHECK_FALSE(s.trust_options().allow_unsigned);
}

TEST_CASE("the documentation lists every variable of the table, under its group") {
  const std::string md = kh::install::settings_markdown();
  for (const auto& d : kh::install::setting_docs()) {
    CAPTURE(d.name);
    CHECK(md.find(std::string("| `") + d.name + "` |") != std::string::npos);
    CHECK(md.find(std::string("## ") + d.group) != std::string::npos);
  }
}

TEST_CASE("oci:// credentials: KH_REGISTRY_AUTH, else the Docker config's auths; KH_TOKEN as a registry token") {
  CleanEnvironment clean;
  kh_test::TempDir d;
  ScopedEnv docker("DOCKER_CONFIG", d.path());
  const std::string url = "oci://registry.example.com:5000/team/kernels";
  // user:pa55 in base64, as `docker login` writes it; another registry by https:// key.
  kh_test::write_text(d / "config.json",
                      R"({"auths": {"registry.example.com:5000": {"auth": "dXNlcjpwYTU1"},
                                   "https://other.example.com": {"username": "u2", "password": "p2"}}})");
  kh::registry::HubAccess a = Settings::from_environment().hub_access(url);
  CHECK(a.registry.user == "user");
  CHECK(a.registry.password == "pa55");
  a = Settings::from_environment().hub_access("oci://other.example.com/kh");
  CHECK(a.registry.user == "u2");
  CHECK(a.registry.password == "p2");
  a = Settings::from_environment().hub_access("oci://other.example.com:443/kh");  // the default port, said or not
  CHECK(a.registry.user == "u2");
  CHECK(Settings::from_environment().hub_access("oci://unknown.example.com/kh").registry.user.empty());
  CHECK(Settings::from_environment().hub_access("https://registry.example.com:5000/x").registry.user.empty());
  {
    ScopedEnv env{{"KH_REGISTRY_AUTH", "ci:t0ken:with:colons"}, {"KH_TOKEN", "reg-token"}};
    a = Settings::from_environment().hub_access(url);
    CHECK(a.registry.user == "ci");                   // KH_REGISTRY_AUTH wins over the config
    CHECK(a.registry.password == "t0ken:with:colons");  // the first ':' splits
    CHECK(a.registry.bearer == "reg-token");
  }
  {
    ScopedEnv bad("KH_REGISTRY_AUTH", "no-colon");
    const std::string msg = kh_test::expect_status([] { (void)Settings::from_environment(); }, KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find("KH_REGISTRY_AUTH") != std::string::npos);
  }
  kh_test::write_text(d / "config.json", R"({"auths": {"registry.example.com:5000": {"auth": "not base64!"}}})");
  std::string msg = kh_test::expect_status([&] { (void)Settings::from_environment().hub_access(url); }, KH_ERROR_INVALID_ARGUMENT);
  CHECK(msg.find("base64") != std::string::npos);
  kh_test::write_text(d / "config.json", "{broken");
  msg = kh_test::expect_status([&] { (void)Settings::from_environment().hub_access(url); }, KH_ERROR_INVALID_ARGUMENT);
  CHECK(msg.find("DOCKER_CONFIG") != std::string::npos);
}
