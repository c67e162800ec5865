// Repeated kills (issue 39, item 5): twelve rounds of three `kernels get` processes fetching
// one 33 MB blob at once from nginx (limit_rate 8 MB/s, so every round is cut mid-download),
// each round ended with SIGKILL. One process downloads at a time (the blob's lock); the
// others wait, then resume what the killed one left. After the rounds tmp/ holds at most one
// partial; the next get resumes it (a Range request, 206) and leaves tmp/ empty.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "../registry/test_util.hpp"
#include "../servers/nginx_fixture.hpp"
#include "../servers/server_util.hpp"
#include "kh/registry/cache.hpp"
#include "../registry/signed_hub.hpp"

namespace {

// The size of the largest file of blob `sha` in the cache's tmp/ (a download in progress, or
// the partial one left), 0 when there is none.
uint64_t largest_work_file(const std::string& tmp, const std::string& sha) {
  uint64_t largest = 0;
  for (const std::string& name : kh_test::names_in(tmp)) {
    struct stat st;
    if (name.rfind(sha, 0) == 0 && ::stat((tmp + "/" + name).c_str(), &st) == 0)
      largest = std::max<uint64_t>(largest, static_cast<uint64_t>(st.st_size));
  }
  return largest;
}

}  // namespace

TEST_CASE("twelve kills during concurrent downloads of one blob leave one partial, which the next get resumes") {
  kh_test::SignedHub hub;
  const std::string sha = hub.publish_bytes(33u << 20, "test-org/big");
  kh::registry::make_directories(hub.dir + "/nginx");
  kh_test::NginxServer::Config config;
  config.root = hub.dir;
  config.extra_http = "location /hub/blobs/ { limit_rate 8m; }";
  kh_test::NginxServer nginx(hub.dir + "/nginx", config);
  const std::string url = nginx.http_url("/hub"), cache = hub.dir + "/cache", tmp = cache + "/tmp";
  const kh_test::ScopedEnv env({{"KH_TRUSTED_ROOT", hub.root_file()}, {"KH_PROGRESS", "0"}});
  const std::vector<std::string> args = {"get", "test-org/big@1", "--hub", url, "--cache", cache};

  for (int round = 0; round < 12; ++round) {
    CAPTURE(round);
    std::vector<pid_t> gets;
    for (int i = 0; i < 3; ++i)
      gets.push_back(kh_test::spawn_logged(KH_KERNELS_EXE, args, hub.dir + "/get-" + std::to_string(i) + ".log"));
    // Killed once the blob's bytes on disk have grown by 1 MiB (the least a partial is kept
    // for), whatever the machine's load: a fixed delay cut slow starts before any byte came.
    const uint64_t before = largest_work_file(tmp, sha);
    for (int i = 0; i < 400 && largest_work_file(tmp, sha) < before + (1u << 20); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    std::this_thread::sleep_for(std::chrono::milliseconds(10 * (round % 5)));
    for (pid_t pid : gets) ::kill(pid, SIGKILL);
    for (pid_t pid : gets) ::waitpid(pid, nullptr, 0);
    size_t partials = 0;
    for (const std::string& name : kh_test::names_in(tmp)) partials += name.find(".partial") != std::string::npos;
    CHECK(partials <= 1);
  }
  REQUIRE_FALSE(kh::registry::Cache(cache).package_dir(sha));  // every round was cut short

  const std::string log_before = nginx.access_log();
  const kh_test::ShellRun last = kh_test::run_shell("'" KH_KERNELS_EXE "' get test-org/big@1 --hub '" + url +
                                                    "' --cache '" + cache + "'");
  CHECK_MESSAGE(last.exit_code == 0, last.output);
  CHECK(kh::registry::Cache(cache).package_dir(sha));
  CHECK(kh_test::names_in(tmp).empty());
  // nginx logs a request once it is answered: the last get's blob request was a Range (206).
  std::string log;
  for (int i = 0; i < 100 && (log = nginx.access_log().substr(log_before.size())).find("/hub/blobs/") == std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CAPTURE(log);
  CHECK(log.find(" 206 \"GET /hub/blobs/sha256/") != std::string::npos);
  CHECK(log.find(" 200 \"GET /hub/blobs/sha256/") == std::string::npos);
}
