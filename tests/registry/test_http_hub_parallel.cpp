// Hub::fetch_blobs over http: several blobs in flight at once on one multi handle, each
// verified on its own; a blob the server makes restart is rewound without disturbing the
// others; a blob that cannot be had fails the batch with its name.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "../servers/fault_server.hpp"
#include "http_test_util.hpp"

using namespace kh::registry;
using kh_test::fast_options;
using kh_test::FaultServer;
using kh_test::HttpConnection;
using kh_test::HttpRequest;
using kh_test::random_bytes;
using kh_test::TempDir;

namespace {

// Blobs served by a FaultServer at /hub/blobs/sha256/..., each fetched into its own file.
struct Batch {
  std::vector<std::string> bytes, shas, outs;
  TempDir d;
  explicit Batch(size_t count, size_t size) {
    for (size_t i = 0; i < count; ++i) {
      bytes.push_back(random_bytes(size, static_cast<unsigned>(100 + i)));
      shas.push_back(sha256_hex(bytes.back()));
      outs.push_back(d / ("out" + std::to_string(i) + ".bin"));
    }
  }
  // Which blob a request asks for; -1 for none.
  int blob_of(const HttpRequest& r) const {
    for (size_t i = 0; i < shas.size(); ++i)
      if (r.target == "/hub/" + blob_path(shas[i])) return static_cast<int>(i);
    return -1;
  }
  void fetch(const std::string& hub_url, const HttpOptions& o) const {
    auto hub = open_http_hub(hub_url, o);
    std::vector<int> fds;
    std::vector<BlobRequest> reqs;
    for (size_t i = 0; i < shas.size(); ++i) {
      int fd = ::open(outs[i].c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      REQUIRE(fd >= 0);
      fds.push_back(fd);
      reqs.push_back(BlobRequest{shas[i], bytes[i].size(), fd, 0, "org/pkg-" + std::to_string(i) + " 1.0.0"});
    }
    struct CloseAll {
      std::vector<int>& fds;
      ~CloseAll() {
        for (int fd : fds) ::close(fd);
      }
    } close_all{fds};
    hub->fetch_blobs(reqs);
  }
  void check_all_arrived() const {
    for (size_t i = 0; i < outs.size(); ++i) CHECK_MESSAGE(kh_test::read_text(outs[i]) == bytes[i], "blob " << i);
  }
};

// Counts the responses being sent at the same moment, and the most seen.
struct InFlight {
  std::atomic<int> now{0}, most{0};
  void enter() {
    int n = ++now;
    int m = most.load();
    while (n > m && !most.compare_exchange_weak(m, n)) {
    }
  }
  void leave() { --now; }
};

// Sends a blob in two halves with a pause between, so that transfers overlap when the
// client runs them at once. A transfer counts as in flight until its last bytes go out:
// it leaves before them, since the client may start its next request as soon as they
// arrive, before this thread would run again on a loaded machine.
void send_slowly(HttpConnection& c, const std::string& body, InFlight& flight) {
  flight.enter();
  c.send_head("200 OK", {"Content-Length: " + std::to_string(body.size())});
  c.send(body.substr(0, body.size() / 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  flight.leave();
  c.send(body.substr(body.size() / 2));
}

}  // namespace

// Fetches `count` blobs, each served slowly, with max_parallel transfers; returns the
// most responses the server was sending at one moment.
static int most_at_once(size_t count, int max_parallel) {
  Batch batch(count, 256 * 1024);
  InFlight flight;
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    int i = batch.blob_of(r);
    if (i < 0) return (void)c.respond("404 Not Found", "");
    send_slowly(c, batch.bytes[static_cast<size_t>(i)], flight);
  });
  HttpOptions o = fast_options();
  o.max_parallel = max_parallel;
  batch.fetch(s.origin() + "/hub", o);
  batch.check_all_arrived();
  CHECK(s.request_count() == count);
  return flight.most.load();
}

TEST_CASE("fetch_blobs runs up to max_parallel transfers at once, each verified") {
  CHECK(most_at_once(5, 3) == 3);  // never more than asked for, and really at once
  CHECK(most_at_once(3, 1) == 1);  // max_parallel 1: one blob after another
}

TEST_CASE("in a batch, a blob whose server ignores Range restarts alone; a dropped one resumes") {
  Batch batch(3, 400 * 1024);
  std::mutex mu;
  std::map<int, int> seen;  // blob -> requests so far
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    int i = batch.blob_of(r);
    if (i < 0) return (void)c.respond("404 Not Found", "");
    const std::string& body = batch.bytes[static_cast<size_t>(i)];
    int n;
    {
      std::lock_guard<std::mutex> lock(mu);
      n = seen[i]++;
    }
    if (i != 2 && n == 0) {  // blobs 0 and 1: the first answer stops half way
      c.send_head("200 OK", {"Content-Length: " + std::to_string(body.size())});
      c.send(body.substr(0, body.size() / 2));
      return;
    }
    if (i == 1) return (void)c.respond("200 OK", body);  // ignores Range: the whole blob again
    if (r.has("range")) {
      size_t from = std::stoul(r.header("range").substr(6));
      return (void)c.respond("206 Partial Content", body.substr(from), {kh_test::range_header(from, body.size())});
    }
    c.respond("200 OK", body);
  });
  batch.fetch(s.origin() + "/hub", fast_options());
  batch.check_all_arrived();
  std::lock_guard<std::mutex> lock(mu);
  CHECK(seen[0] == 2);
  CHECK(seen[1] == 2);
  CHECK(seen[2] == 1);
}

TEST_CASE("a blob the hub lacks fails the whole batch, naming that blob") {
  Batch batch(3, 64 * 1024);
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    int i = batch.blob_of(r);
    if (i < 0 || i == 1) return (void)c.respond("404 Not Found", "");
    c.respond("200 OK", batch.bytes[static_cast<size_t>(i)]);
  });
  std::string msg = kh_test::expect_status([&] { batch.fetch(s.origin() + "/hub", fast_options()); }, KH_ERROR_NOT_FOUND);
  CHECK(msg.find(batch.shas[1]) != std::string::npos);
}

TEST_CASE("a blob with other bytes fails verification inside a batch") {
  Batch batch(2, 64 * 1024);
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    int i = batch.blob_of(r);
    if (i < 0) return (void)c.respond("404 Not Found", "");
    std::string body = batch.bytes[static_cast<size_t>(i)];
    if (i == 0) body[100] = static_cast<char>(body[100] ^ 1);
    c.respond("200 OK", body);
  });
  std::string msg =
      kh_test::expect_status([&] { batch.fetch(s.origin() + "/hub", fast_options()); }, KH_ERROR_VERIFICATION);
  CHECK(msg.find(batch.shas[0]) != std::string::npos);
}

namespace {
// Runs f with stderr sent to a file; returns what it wrote there.
template <typename F>
std::string stderr_of(const TempDir& d, F&& f) {
  const std::string path = d / "stderr.txt";
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  ::dup2(fd, STDERR_FILENO);
  ::close(fd);
  try {
    f();
  } catch (...) {
    std::fflush(stderr);
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    throw;
  }
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  return kh_test::read_text(path);
}
}  // namespace

TEST_CASE("a hub slow to answer shows a waiting line (host, seconds, attempt) when progress is on") {
  TempDir d;
  FaultServer s([](const HttpRequest&, HttpConnection& c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3300));
    c.respond("200 OK", "{}");
  });
  HttpOptions o = fast_options();
  o.progress = HttpOptions::Progress::Always;
  std::string got;
  const std::string shown =
      stderr_of(d, [&] { got = open_http_hub(s.origin() + "/hub", o)->fetch_metadata("kh-hub.json", 1000); });
  CHECK(got == "{}");
  CHECK_MESSAGE(shown.find("kh: waiting for " + s.origin() + " to answer (2 s, attempt 1)") != std::string::npos, shown);
  CHECK(shown.find("(3 s, attempt 1)") != std::string::npos);
  CHECK(shown.back() == '\n');  // ended when the answer came
  o.progress = HttpOptions::Progress::Never;
  CHECK(stderr_of(d, [&] { open_http_hub(s.origin() + "/hub", o)->fetch_metadata("kh-hub.json", 1000); }).empty());
}

TEST_CASE("the progress line: one line for a batch when asked, nothing on a pipe or when off") {
  Batch batch(3, 128 * 1024);
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    int i = batch.blob_of(r);
    if (i < 0) return (void)c.respond("404 Not Found", "");
    c.respond("200 OK", batch.bytes[static_cast<size_t>(i)]);
  });
  HttpOptions o = fast_options();
  o.progress = HttpOptions::Progress::Always;
  const std::string shown = stderr_of(batch.d, [&] { batch.fetch(s.origin() + "/hub", o); });
  CHECK(shown.find("kh: 3 packages") != std::string::npos);
  CHECK(shown.find("100%") != std::string::npos);
  CHECK(shown.back() == '\n');  // the line is ended, so later output starts on its own line
  Batch one(1, 64 * 1024);
  FaultServer s1([&](const HttpRequest& r, HttpConnection& c) {
    if (one.blob_of(r) < 0) return (void)c.respond("404 Not Found", "");
    c.respond("200 OK", one.bytes[0]);
  });
  const std::string named = stderr_of(one.d, [&] { one.fetch(s1.origin() + "/hub", o); });
  CHECK_MESSAGE(named.find("kh: org/pkg-0 1.0.0  ") != std::string::npos, named);  // the package, by name
  for (auto mode : {HttpOptions::Progress::Never, HttpOptions::Progress::Auto}) {  // Auto: stderr is a file here
    o.progress = mode;
    CHECK(stderr_of(batch.d, [&] { batch.fetch(s.origin() + "/hub", o); }).empty());
  }
}
