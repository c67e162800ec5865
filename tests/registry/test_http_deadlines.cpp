// Deadlines and caps of http hubs against the fault server (issue 16, items 2 and 13): a
// body dripped just above libcurl's low-speed floor is cut off at its transfer deadline
// (from the size it may have and a floor rate), once, not retried; the operation's
// deadline bounds servers that never answer and retry loops; a body past its cap is
// reported as the cap (chunked, gzip bomb), never as whatever libcurl made of the cut.
#include <zlib.h>

#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "../servers/fault_server.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/repo_index.hpp"
#include "http_test_util.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::Blob;
using kh_test::FaultServer;
using kh_test::HttpConnection;
using kh_test::HttpRequest;
using kh_test::seconds_since;
using std::chrono::milliseconds;

namespace {

const std::string kIndex = "repos/a/b/index.json";

// Deadlines short enough for a test: a transfer may take max(1 s, size / 1 MiB/s); the
// low-speed floor (100 B/s for 5 s) is far below the drips used here.
HttpOptions deadline_options() {
  HttpOptions o = kh_test::fast_options();
  o.low_speed_bytes_per_s = 100;
  o.low_speed_time_s = 5;
  o.transfer_min_timeout_s = 1;
  o.transfer_min_rate = 1 << 20;
  return o;
}

std::string gzip(const std::string& in) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

TEST_CASE("a body dripped above the low-speed floor is cut off at its transfer deadline, once") {
  // 2 KB/s of whitespace after a 200: the attack that held `kernels get` for ~9 h.
  FaultServer s([](const HttpRequest&, HttpConnection& c) {
    c.send_head("200 OK", {"Content-Type: application/json"});  // no length: ends with the connection
    c.drip(std::string(100, ' '), milliseconds(50), milliseconds(20000));
  });
  auto hub = open_http_hub(s.origin() + "/hub", deadline_options());
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = kh_test::expect_status([&] { hub->fetch_metadata(kIndex, 1 << 20); }, KH_ERROR_NETWORK);
  const double took = seconds_since(t0);
  CHECK(took >= 0.9);
  CHECK(took < 5);
  CHECK(s.request_count() == 1);  // a deadline is final: no retry starts the drip over
  CHECK_MESSAGE(msg.find("cut off after") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("the deadline of a transfer of up to 1048576 bytes") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("KH_TRANSFER_MIN_RATE") != std::string::npos, msg);
}

TEST_CASE("a blob dripped slowly is cut off at the deadline its signed size gives") {
  Blob b(64 * 1024);
  FaultServer s([&](const HttpRequest&, HttpConnection& c) {
    c.send_head("200 OK", {"Content-Length: " + std::to_string(b.bytes.size())});
    c.drip(b.bytes.substr(0, 10), milliseconds(20), milliseconds(20000));  // 500 B/s
  });
  HttpOptions o = deadline_options();
  o.transfer_min_timeout_s = 1.5;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = kh_test::expect_status([&] { b.fetch(s.origin() + "/hub", o); }, KH_ERROR_NETWORK);
  CHECK(seconds_since(t0) < 5);
  CHECK(s.request_count() == 1);
  CHECK_MESSAGE(msg.find("up to 65536 bytes") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("= 1.5 s") != std::string::npos, msg);
}

TEST_CASE("the operation's deadline bounds a server that never answers, and retry loops") {
  HttpOptions o = deadline_options();
  o.transfer_min_timeout_s = 30;
  o.operation_timeout_s = 1;

  SUBCASE("accepts, reads the request, never answers") {
    FaultServer s([](const HttpRequest&, HttpConnection& c) { c.hold(milliseconds(20000)); });
    auto hub = open_http_hub(s.origin() + "/hub", o);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string msg = kh_test::expect_status([&] { hub->fetch_metadata(kIndex, 1 << 20); }, KH_ERROR_TIMEOUT);
    CHECK(seconds_since(t0) < 4);
    CHECK_MESSAGE(msg.find("the operation's deadline of 1 s (KH_OPERATION_TIMEOUT) passed while waiting for '" + kIndex +
                           "'") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("hub " + s.origin() + "/hub") != std::string::npos, msg);
  }
  SUBCASE("503 with Retry-After, again and again") {
    FaultServer s([](const HttpRequest&, HttpConnection& c) { c.respond("503 Service Unavailable", "", {"Retry-After: 1"}); });
    o.max_attempts = 20;
    auto hub = open_http_hub(s.origin() + "/hub", o);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string msg = kh_test::expect_status([&] { hub->fetch_metadata(kIndex, 1 << 20); }, KH_ERROR_TIMEOUT);
    CHECK(seconds_since(t0) < 4);
    CHECK(s.request_count() <= 2);
    CHECK_MESSAGE(msg.find("KH_OPERATION_TIMEOUT") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("last failure: HTTP 503") != std::string::npos, msg);
  }
}

TEST_CASE("a body past its cap is reported as the cap, whatever libcurl says") {
  SUBCASE("a chunked index of ~100 MB") {
    FaultServer s([](const HttpRequest&, HttpConnection& c) {
      c.send_head("200 OK", {"Transfer-Encoding: chunked"});
      const std::string chunk(64 * 1024, ' ');
      for (int i = 0; i < 1600 && !c.stopping(); ++i)
        if (!c.send_chunk(chunk)) return;
      c.send_chunk("");
    });
    auto hub = open_http_hub(s.origin() + "/hub", kh_test::fast_options());
    const std::string msg = kh_test::expect_status([&] { hub->fetch_metadata(kIndex, 1 << 20); }, KH_ERROR_BAD_METADATA);
    CHECK_MESSAGE(msg.find("is larger than the 1048576 bytes allowed for it") != std::string::npos, msg);
    CHECK(msg.find("libcurl") == std::string::npos);
  }
  SUBCASE("a gzip bomb past the index's own cap names its encoding, not what libcurl made of the cut") {
    // The cap is larger than what the reader holds at once, so libcurl's transfer is paused
    // and resumed while the bomb inflates: that once surfaced as "libcurl cannot resume a
    // transfer: A libcurl function was given a bad argument".
    const std::string bomb = gzip(std::string(kMaxIndexBytes * 4, ' '));
    FaultServer s([&](const HttpRequest&, HttpConnection& c) {
      c.respond("200 OK", bomb, {"Content-Encoding: gzip", "Content-Type: application/json"});
    });
    auto hub = open_http_hub(s.origin() + "/hub", kh_test::fast_options());
    const std::string msg = kh_test::expect_status([&] { hub->fetch_metadata(kIndex, kMaxIndexBytes); }, KH_ERROR_BAD_METADATA);
    CHECK_MESSAGE(msg.find("hub " + s.origin() + "/hub: '" + kIndex + "' is larger than the " +
                           std::to_string(kMaxIndexBytes) + " bytes allowed for it once decoded (Content-Encoding: gzip") !=
                      std::string::npos, msg);
    CHECK_MESSAGE(msg.find("libcurl") == std::string::npos, msg);
  }
  SUBCASE("a gzip bomb (64 KB on the wire, 64 MB inflated)") {
    const std::string bomb = gzip(std::string(64u << 20, ' '));
    FaultServer s([&](const HttpRequest&, HttpConnection& c) {
      c.respond("200 OK", bomb, {"Content-Encoding: gzip", "Content-Type: application/json"});
    });
    auto hub = open_http_hub(s.origin() + "/hub", kh_test::fast_options());
    const std::string msg = kh_test::expect_status([&] { hub->fetch_metadata(kIndex, 1 << 20); }, KH_ERROR_BAD_METADATA);
    CHECK_MESSAGE(msg.find("is larger than the 1048576 bytes allowed for it") != std::string::npos, msg);
    CHECK(msg.find("libcurl") == std::string::npos);
  }
}

