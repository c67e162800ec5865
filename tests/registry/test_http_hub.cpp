// http hubs against the fault-injecting loopback server: dropped connections resumed with
// Range, servers that ignore or botch Range, 5xx/429 retries and Retry-After, slow drips,
// bodies over the signed size, redirects across hosts and schemes, the token's reach,
// proxies from the environment; plus URL, token-config and cache-ETag units.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "../servers/fault_server.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "http_test_util.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::FaultServer;
using kh_test::HttpConnection;
using kh_test::HttpRequest;
using kh_test::Blob;
using kh_test::fast_options;
using kh_test::random_bytes;
using kh_test::range_header;
using kh_test::TempDir;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("a connection dropped mid-body is resumed with Range and a 206") {
  Blob b;
  const size_t half = b.bytes.size() / 2;
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    if (r.index == 0) {
      c.send_head("200 OK", {"Content-Length: " + std::to_string(b.bytes.size())});
      c.send(b.bytes.substr(0, half));  // then the connection closes
      return;
    }
    size_t from = std::stoul(r.header("range").substr(6));
    c.respond("206 Partial Content", b.bytes.substr(from), {range_header(from, b.bytes.size())});
  });
  b.fetch(s.origin() + "/hub");
  CHECK(kh_test::read_text(b.out) == b.bytes);
  auto reqs = s.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].target == b.target());
  CHECK_FALSE(reqs[0].has("range"));
  CHECK(reqs[1].header("range") == "bytes=" + std::to_string(half) + "-");
}

TEST_CASE("a server that ignores Range (200) restarts the blob from byte 0") {
  Blob b;
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    if (r.index == 0) {
      c.send_head("200 OK", {"Content-Length: " + std::to_string(b.bytes.size())});
      c.send(b.bytes.substr(0, 100000));
      return;
    }
    c.respond("200 OK", b.bytes);
  });
  b.fetch(s.origin() + "/hub");
  CHECK(kh_test::read_text(b.out) == b.bytes);  // not the first 100000 bytes twice
  auto reqs = s.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[1].header("range") == "bytes=100000-");
}

TEST_CASE("a 206 with the wrong Content-Range restarts from 0 without Range") {
  Blob b;
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    if (r.index == 0) {
      c.send_head("200 OK", {"Content-Length: " + std::to_string(b.bytes.size())});
      c.send(b.bytes.substr(0, 100000));
      return;
    }
    if (r.has("range")) {  // answer a part that starts 10 bytes early
      c.respond("206 Partial Content", b.bytes.substr(99990), {range_header(99990, b.bytes.size())});
      return;
    }
    c.respond("200 OK", b.bytes);
  });
  b.fetch(s.origin() + "/hub");
  CHECK(kh_test::read_text(b.out) == b.bytes);
  auto reqs = s.requests();
  REQUIRE(reqs.size() == 3);
  CHECK(reqs[1].has("range"));
  CHECK_FALSE(reqs[2].has("range"));
}

TEST_CASE("a 500 is retried, then succeeds") {
  Blob b;
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    if (r.index == 0) {
      c.respond("500 Internal Server Error", "oops");
      return;
    }
    c.respond("200 OK", b.bytes);
  });
  b.fetch(s.origin() + "/hub");
  CHECK(kh_test::read_text(b.out) == b.bytes);
  CHECK(s.request_count() == 2);
}

TEST_CASE("an endless error page is cut off; its status still decides (500: retried)") {
  Blob b;
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    if (r.index == 0) {
      c.send_head("500 Internal Server Error", {});
      const std::string junk(64 * 1024, 'x');
      for (int i = 0; i < 64; ++i)  // at most 4 MiB; stops once the client hangs up
        if (!c.send(junk)) return;
      return;
    }
    c.respond("200 OK", b.bytes);
  });
  b.fetch(s.origin() + "/hub");
  CHECK(kh_test::read_text(b.out) == b.bytes);
  CHECK(s.request_count() == 2);
}

TEST_CASE("503 and 429 honour Retry-After seconds") {
  for (const char* status : {"503 Service Unavailable", "429 Too Many Requests"}) {
    CAPTURE(status);
    Blob b;
    FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
      if (r.index == 0) {
        c.respond(status, "", {"Retry-After: 1"});
        return;
      }
      c.respond("200 OK", b.bytes);
    });
    auto t0 = std::chrono::steady_clock::now();
    b.fetch(s.origin() + "/hub");
    const double took = seconds_since(t0);
    CHECK(took >= 0.9);  // the backoff alone would be 10 ms
    CHECK(took < 5.0);
    CHECK(kh_test::read_text(b.out) == b.bytes);
    CHECK(s.request_count() == 2);
  }
}

TEST_CASE("persistent 5xx gives up after max_attempts with a message naming the URL") {
  Blob b;
  FaultServer s([&](const HttpRequest&, HttpConnection& c) { c.respond("502 Bad Gateway", ""); });
  std::string msg = kh_test::expect_status([&] { b.fetch(s.origin() + "/hub"); }, KH_ERROR_NETWORK);
  CHECK(s.request_count() == 4);
  CHECK(msg.find("HTTP 502") != std::string::npos);
  CHECK(msg.find(s.origin() + b.target()) != std::string::npos);
}

TEST_CASE("4xx other than 408/429 are not retried; 404 is KH_ERROR_NOT_FOUND") {
  Blob b;
  SUBCASE("404") {
    FaultServer s([&](const HttpRequest&, HttpConnection& c) { c.respond("404 Not Found", "no"); });
    kh_test::expect_status([&] { b.fetch(s.origin() + "/hub"); }, KH_ERROR_NOT_FOUND);
    CHECK(s.request_count() == 1);
  }
  SUBCASE("403 without a token says to set one") {
    FaultServer s([&](const HttpRequest&, HttpConnection& c) { c.respond("403 Forbidden", "no"); });
    std::string msg = kh_test::expect_status([&] { b.fetch(s.origin() + "/hub"); }, KH_ERROR_NETWORK);
    CHECK(s.request_count() == 1);
    CHECK(msg.find("KH_TOKEN") != std::string::npos);
  }
  SUBCASE("400") {
    FaultServer s([&](const HttpRequest&, HttpConnection& c) { c.respond("400 Bad Request", "no"); });
    kh_test::expect_status([&] { b.fetch(s.origin() + "/hub"); }, KH_ERROR_NETWORK);
    CHECK(s.request_count() == 1);
  }
}

TEST_CASE("a slow drip hits the low-speed limit, is retried, then fails") {
  Blob b(4096);
  FaultServer s([&](const HttpRequest&, HttpConnection& c) {
    c.send_head("200 OK", {"Content-Length: " + std::to_string(b.bytes.size())});
    for (int i = 0; i < 40; ++i) {  // at most 4 s: one byte every 100 ms
      if (!c.send(b.bytes.substr(static_cast<size_t>(i), 1))) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  HttpOptions o = fast_options();
  o.low_speed_bytes_per_s = 1000;
  o.low_speed_time_s = 1;
  o.max_attempts = 2;
  auto t0 = std::chrono::steady_clock::now();
  std::string msg = kh_test::expect_status([&] { b.fetch(s.origin() + "/hub", o); }, KH_ERROR_NETWORK);
  const double took = seconds_since(t0);
  CHECK(took < 6.0);
  CHECK(s.request_count() == 2);
  CHECK(s.requests()[1].has("range"));  // the second try resumed after the bytes that came
  CHECK(msg.find("attempts") != std::string::npos);
}

TEST_CASE("a body larger than the signed size is refused and nothing past the size is written") {
  Blob b;
  const std::string longer = b.bytes + random_bytes(200000, 9);
  SUBCASE("announced by Content-Length: refused before the body") {
    FaultServer s([&](const HttpRequest&, HttpConnection& c) { c.respond("200 OK", longer); });
    kh_test::expect_status([&] { b.fetch(s.origin() + "/hub"); }, KH_ERROR_VERIFICATION);
    CHECK(b.out_size() == 0);
    CHECK(s.request_count() == 1);
  }
  SUBCASE("no Content-Length: cut off at the size") {
    FaultServer s([&](const HttpRequest&, HttpConnection& c) {
      c.send_head("200 OK", {});  // body delimited by the connection's end
      c.send(longer);
    });
    std::string msg = kh_test::expect_status([&] { b.fetch(s.origin() + "/hub"); }, KH_ERROR_VERIFICATION);
    CHECK(b.out_size() <= b.bytes.size());
    CHECK(s.request_count() == 1);
    CHECK(msg.find("more") != std::string::npos);
  }
  SUBCASE("a 206 longer than the rest") {
    FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
      if (r.index == 0) {
        c.send_head("200 OK", {"Content-Length: " + std::to_string(b.bytes.size())});
        c.send(b.bytes.substr(0, 1000));
        return;
      }
      c.send_head("206 Partial Content", {range_header(1000, longer.size())});
      c.send(longer.substr(1000));
    });
    kh_test::expect_status([&] { b.fetch(s.origin() + "/hub"); }, KH_ERROR_VERIFICATION);
    CHECK(b.out_size() <= b.bytes.size());
  }
}

TEST_CASE("a blob with other bytes of the right size fails verification") {
  Blob b;
  FaultServer s([&](const HttpRequest&, HttpConnection& c) { c.respond("200 OK", random_bytes(b.bytes.size(), 3)); });
  std::string msg = kh_test::expect_status([&] { b.fetch(s.origin() + "/hub"); }, KH_ERROR_VERIFICATION);
  CHECK(msg.find("sha256") != std::string::npos);
  CHECK(s.request_count() == 1);
}

TEST_CASE("redirects: same origin keeps the token; another host over http is refused") {
  Blob b;
  HttpOptions o = fast_options();
  o.token = "s3cr3t-token";
  FaultServer other([&](const HttpRequest&, HttpConnection& c) { c.respond("200 OK", b.bytes); }, "127.0.0.2");
  SUBCASE("same origin") {
    FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
      if (r.target.rfind("/hub/", 0) == 0) {
        c.respond("302 Found", "", {"Location: /moved/" + r.target.substr(5)});
        return;
      }
      c.respond("200 OK", b.bytes);
    });
    b.fetch(s.origin() + "/hub", o);
    CHECK(kh_test::read_text(b.out) == b.bytes);
    auto reqs = s.requests();
    REQUIRE(reqs.size() == 2);
    CHECK(reqs[1].target == b.target("/moved"));
    CHECK(reqs[0].header("authorization") == "Bearer s3cr3t-token");
    CHECK(reqs[1].header("authorization") == "Bearer s3cr3t-token");
  }
  SUBCASE("another host over plain http") {
    FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
      c.respond("302 Found", "", {"Location: " + other.origin() + r.target});
    });
    std::string msg = kh_test::expect_status([&] { b.fetch(s.origin() + "/hub", o); }, KH_ERROR_NETWORK);
    CHECK(msg.find("refused") != std::string::npos);
    CHECK(msg.find("s3cr3t") == std::string::npos);
    CHECK(other.request_count() == 0);
    CHECK(s.request_count() == 1);
  }
  SUBCASE("too many redirects") {
    FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
      c.respond("302 Found", "", {"Location: " + r.target + "x"});
    });
    std::string msg = kh_test::expect_status([&] { b.fetch(s.origin() + "/hub", o); }, KH_ERROR_NETWORK);
    CHECK(msg.find("redirects") != std::string::npos);
    CHECK(s.request_count() == static_cast<size_t>(o.max_redirects) + 1);
  }
}

TEST_CASE("no token: no Authorization header") {
  Blob b;
  FaultServer s([&](const HttpRequest&, HttpConnection& c) { c.respond("200 OK", b.bytes); });
  b.fetch(s.origin() + "/hub");
  REQUIRE(s.request_count() == 1);
  CHECK_FALSE(s.requests()[0].has("authorization"));
}

TEST_CASE("metadata: size cap, ETag and 304, 404") {
  const std::string text = "{\"hello\": \"world\"}";
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    if (r.target == "/hub/missing.json") {
      c.respond("404 Not Found", "");
      return;
    }
    if (r.header("if-none-match") == "\"v1\"") {
      c.send_head("304 Not Modified", {"ETag: \"v1\""});
      return;
    }
    c.respond("200 OK", text, {"ETag: \"v1\"", "Content-Type: application/json"});
  });
  auto hub = open_http_hub(s.origin() + "/hub/", fast_options());
  CHECK(hub->url() == s.origin() + "/hub");
  CHECK(hub->id().rfind("http-", 0) == 0);
  CHECK(hub->fetch_metadata("kh-hub.json", 1000) == text);
  MetadataFetch first = hub->fetch_metadata_conditional("kh-hub.json", 1000, "");
  CHECK_FALSE(first.not_modified);
  CHECK(first.text == text);
  CHECK(first.etag == "\"v1\"");
  MetadataFetch again = hub->fetch_metadata_conditional("kh-hub.json", 1000, first.etag);
  CHECK(again.not_modified);
  CHECK(again.text.empty());
  CHECK(again.etag == "\"v1\"");
  CHECK(s.requests().back().header("if-none-match") == "\"v1\"");
  MetadataFetch stale = hub->fetch_metadata_conditional("kh-hub.json", 1000, "\"v0\"");
  CHECK_FALSE(stale.not_modified);
  CHECK(stale.text == text);
  // An ETag with a line break is never sent (header injection).
  MetadataFetch evil = hub->fetch_metadata_conditional("kh-hub.json", 1000, "\"v1\"\r\nX-Evil: 1");
  CHECK_FALSE(evil.not_modified);
  CHECK_FALSE(s.requests().back().has("x-evil"));
  kh_test::expect_status([&] { hub->fetch_metadata("kh-hub.json", 5); }, KH_ERROR_BAD_METADATA);
  kh_test::expect_status([&] { hub->fetch_metadata("missing.json", 1000); }, KH_ERROR_NOT_FOUND);
  kh_test::expect_status([&] { hub->fetch_metadata("../etc/passwd", 1000); }, KH_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("proxies come from the environment") {
  Blob b;
  FaultServer proxy([&](const HttpRequest&, HttpConnection& c) { c.respond("200 OK", b.bytes); });
  std::string saved_no_proxy = std::getenv("no_proxy") != nullptr ? std::getenv("no_proxy") : "";
  ::setenv("http_proxy", proxy.origin().c_str(), 1);
  ::setenv("no_proxy", "127.0.0.1", 1);
  ::setenv("NO_PROXY", "127.0.0.1", 1);
  try {
    b.fetch("http://127.0.0.3:9/hub");  // nothing listens there: only the proxy can answer
  } catch (...) {
    ::unsetenv("http_proxy");
    ::setenv("no_proxy", saved_no_proxy.c_str(), 1);
    ::setenv("NO_PROXY", saved_no_proxy.c_str(), 1);
    throw;
  }
  ::unsetenv("http_proxy");
  ::setenv("no_proxy", saved_no_proxy.c_str(), 1);
  ::setenv("NO_PROXY", saved_no_proxy.c_str(), 1);
  REQUIRE(proxy.request_count() == 1);
  CHECK(proxy.requests()[0].target == "http://127.0.0.3:9" + b.target());
  CHECK(kh_test::read_text(b.out) == b.bytes);
}

TEST_CASE("a connection refused is retried, then reported with the URL and what to do") {
  const int port = [] {
    FaultServer s([](const HttpRequest&, HttpConnection&) {});
    return s.port();
  }();  // closed again: nothing listens there now
  Blob b;
  HttpOptions o = fast_options();
  o.max_attempts = 2;
  std::string msg =
      kh_test::expect_status([&] { b.fetch("http://127.0.0.1:" + std::to_string(port) + "/hub", o); }, KH_ERROR_NETWORK);
  CHECK(msg.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(msg.find("2 attempts") != std::string::npos);
}

TEST_CASE("hub URLs: credentials, queries and bad schemes are refused; messages are sanitised") {
  kh_test::expect_status([] { open_http_hub("https://user:pw@hub.example.com/kh", HttpOptions{}); },
                         KH_ERROR_INVALID_ARGUMENT);
  kh_test::expect_status([] { open_http_hub("https://hub.example.com/kh?x=1", HttpOptions{}); },
                         KH_ERROR_INVALID_ARGUMENT);
  kh_test::expect_status([] { open_http_hub("ftp://hub.example.com/kh", HttpOptions{}); },
                         KH_ERROR_INVALID_ARGUMENT);
  std::string msg = kh_test::expect_status(
      [] { open_http_hub("https://user:pw@hub.example.com/kh", HttpOptions{}); }, KH_ERROR_INVALID_ARGUMENT);
  CHECK(msg.find("pw") == std::string::npos);
  CHECK(sanitize_url("https://u:p@h.example/a/b?sig=xyz#f") == "https://h.example/a/b?...");
  CHECK(sanitize_url("https://h.example/a") == "https://h.example/a");
  auto hub = open_hub("https://hub.example.com/kh/");
  CHECK(hub->url() == "https://hub.example.com/kh");
  CHECK(hub->id().rfind("https-", 0) == 0);
}


TEST_CASE("the cache keeps an ETag beside cached metadata") {
  TempDir d;
  Cache cache(d / "cache");
  CHECK(cache.load_metadata_etag("http-0123456789abcdef", "repos/a/b/index.json").empty());
  cache.store_metadata("http-0123456789abcdef", "repos/a/b/index.json", "{}", "\"e1\"");
  CHECK(cache.load_metadata_etag("http-0123456789abcdef", "repos/a/b/index.json") == "\"e1\"");
  CHECK(*cache.load_metadata("http-0123456789abcdef", "repos/a/b/index.json") == "{}");
  cache.store_metadata("http-0123456789abcdef", "repos/a/b/index.json", "{\"x\":1}");
  CHECK(cache.load_metadata_etag("http-0123456789abcdef", "repos/a/b/index.json").empty());
}
