// The rate floor of http hubs against the fault server (issue 43): once a request is past
// its grace period, an average below the floor over the last window ends it, whether the
// server drips a body, sends its headers a byte at a time (slowloris), or stalls before or
// after them; the error names the hub, the bytes received, the rate seen and the setting.
// A link that is slow but steady above the floor is never cut, and one that brought real
// progress before it faltered resumes. Grace and window are 1 s here (the defaults are 10 s
// each: tests/install/test_slow_hub.cpp times one case with them).
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "../servers/fault_server.hpp"
#include "http_test_util.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::Blob, kh_test::FaultServer, kh_test::HttpConnection, kh_test::HttpRequest, kh_test::seconds_since;
using std::chrono::milliseconds;

namespace {

constexpr double kGrace = 1, kWindow = 1;  // seconds
const std::string kIndex = "repos/a/b/index.json";

// A floor of 8 KiB/s after 1 s, over 1 s; every other limit far away, so the floor is what
// ends a slow request.
HttpOptions floor_options() {
  HttpOptions o = kh_test::fast_options();
  o.floor_rate = 8 * 1024;
  o.floor_grace_s = kGrace;
  o.floor_window_s = kWindow;
  o.transfer_min_timeout_s = 60;
  o.operation_timeout_s = 60;
  o.low_speed_bytes_per_s = 1;
  o.low_speed_time_s = 60;
  return o;
}

// The floor's message: hub, bytes, rate, setting.
void check_floor_message(const std::string& msg, const FaultServer& s, const std::string& what) {
  CHECK_MESSAGE(msg.find("hub " + s.origin() + "/hub: GET '" + what + "' ended after ") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find(" bytes received, ") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find(" bytes/s over the last ") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("below the floor of 8192 bytes/s (KH_TRANSFER_FLOOR_RATE") != std::string::npos, msg);
}

}  // namespace

TEST_CASE("the rate floor ends a slow or stalled request after its grace and one window, once") {
  const milliseconds forever(30000);
  struct Case {
    const char* name;
    FaultServer::Handler serve;
  };
  const std::vector<Case> cases = {
      {"a body dripped at 2 KiB/s after a 200",
       [&](const HttpRequest&, HttpConnection& c) {
         c.send_head("200 OK", {"Content-Type: application/json"});
         c.drip(std::string(100, ' '), milliseconds(50), forever);
       }},
      {"slowloris: the response head one byte every 5 s",
       [&](const HttpRequest&, HttpConnection& c) {
         for (char ch : std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"))
           if (!c.drip(std::string(1, ch), milliseconds(5000), milliseconds(1))) return;
         c.hold(forever);
       }},
      {"headers, then nothing",
       [&](const HttpRequest&, HttpConnection& c) {
         c.send_head("200 OK", {"Content-Length: 1000"});
         c.hold(forever);
       }},
      {"the request read, never answered",
       [&](const HttpRequest&, HttpConnection& c) { c.hold(forever); }},
  };
  for (const Case& k : cases) {
    CAPTURE(k.name);
    FaultServer s(k.serve);
    auto hub = open_http_hub(s.origin() + "/hub", floor_options());
    const auto t0 = std::chrono::steady_clock::now();
    const std::string msg = kh_test::expect_status([&] { hub->fetch_metadata(kIndex, kMaxIndexBytes); }, KH_ERROR_NETWORK);
    const double took = seconds_since(t0);
    CHECK(took >= kGrace * 0.9);
    CHECK(took < kGrace + kWindow + 1.5);  // libcurl looks at the floor about once a second
    CHECK(s.request_count() == 1);         // no retry starts the drip over
    check_floor_message(msg, s, kIndex);
  }
}

TEST_CASE("a blob dripped below the floor ends at the floor, not at the deadline its size gives") {
  Blob b(4 << 20);
  FaultServer s([&](const HttpRequest&, HttpConnection& c) {
    c.send_head("200 OK", {"Content-Length: " + std::to_string(b.bytes.size())});
    c.drip(b.bytes.substr(0, 100), milliseconds(50), milliseconds(30000));  // 2 KB/s
  });
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = kh_test::expect_status([&] { b.fetch(s.origin() + "/hub", floor_options()); }, KH_ERROR_NETWORK);
  CHECK(seconds_since(t0) < kGrace + kWindow + 1.5);
  CHECK(s.request_count() == 1);
  check_floor_message(msg, s, blob_path(b.sha));
}

TEST_CASE("a slow link steady above the floor is never cut") {
  // 256 KiB at ~96 KiB/s: well past grace + window, well above the floor.
  Blob b(256 << 10);
  FaultServer s([&](const HttpRequest&, HttpConnection& c) {
    c.send_head("200 OK", {"Content-Length: " + std::to_string(b.bytes.size())});
    for (size_t at = 0; at < b.bytes.size() && !c.stopping(); at += 4800)
      if (!c.drip(b.bytes.substr(at, 4800), milliseconds(50), milliseconds(1))) return;
  });
  const auto t0 = std::chrono::steady_clock::now();
  b.fetch(s.origin() + "/hub", floor_options());
  CHECK(seconds_since(t0) > kGrace + kWindow);
  CHECK(b.out_size() == b.bytes.size());
  CHECK(s.request_count() == 1);
}

TEST_CASE("a blob transfer that brought real progress before it stalled resumes, within the operation's deadline") {
  Blob b(3 << 20);
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    if (r.index == 0) {  // 1.5 MiB at once, then a stall the floor ends
      c.send_head("200 OK", {"Content-Length: " + std::to_string(b.bytes.size())});
      c.send(b.bytes.substr(0, 3 << 19));
      c.hold(milliseconds(30000));
      return;
    }
    const size_t from = std::stoul(r.header("range").substr(6));
    c.send_head("206 Partial Content", {kh_test::range_header(from, b.bytes.size()),
                                        "Content-Length: " + std::to_string(b.bytes.size() - from)});
    c.send(b.bytes.substr(from));
  });
  b.fetch(s.origin() + "/hub", floor_options());
  CHECK(kh_test::read_text(b.out) == b.bytes);
  REQUIRE(s.request_count() == 2);
  CHECK(s.requests()[1].header("range") == "bytes=" + std::to_string(3 << 19) + "-");
}
