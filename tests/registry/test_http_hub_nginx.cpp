// http and https hubs against a real nginx on loopback: a hub tree published by the
// registry API, fetched over http and over https with a test CA (KH_CA_BUNDLE), ETag and
// 304, kept-alive connections, redirects between schemes and hosts (the token's reach),
// and Cache::ensure_package through an https hub.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "../servers/nginx_fixture.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/semver.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::NginxServer;
using kh_test::TempDir;

namespace {

const char* kRepo = "test-org/http-kernel";
const char* kVariant = "cpu-x86_64-abi1-x86_64-linux";

struct NoProxyForLoopback {
  NoProxyForLoopback() {
    ::setenv("no_proxy", "127.0.0.1,127.0.0.2,localhost", 1);
    ::setenv("NO_PROXY", "127.0.0.1,127.0.0.2,localhost", 1);
  }
} const no_proxy_for_loopback;

// Sets an environment variable for a scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

HttpOptions quiet(const std::string& ca = "") {
  HttpOptions o;
  o.ca_bundle = ca;
  o.progress = HttpOptions::Progress::Never;
  o.backoff_initial_ms = 10;
  o.backoff_max_ms = 50;
  o.max_attempts = 2;
  return o;
}

// A hub tree with one published package, served by nginx.
struct World {
  TempDir d;
  std::string hub_dir = d / "hub";
  std::string library;
  PublishedVariant published;
  std::unique_ptr<NginxServer> nginx;

  explicit World(size_t library_bytes = 300 * 1024) {
    std::mt19937 rng(11);
    library = "\x7f" "ELF";
    library.resize(library_bytes);
    for (size_t i = 4; i < library.size(); ++i) library[i] = static_cast<char>(rng() & 0xff);
    make_directories(d / "build");
    kh_test::write_text(d / "build/libkh_http.so", library, 0755);
    PackageManifest m;
    m.name = kRepo;
    m.version = "1.0.0";
    m.variant = kVariant;
    m.abi = "1.0";
    m.ops = {{"fake_op", "fake_op(Tensor(a!) out, Tensor x) -> ()"}};
    pack_package(d / "build/libkh_http.so", m, d / "dist");
    auto all = publish_to_file_hub(d / "dist", hub_dir);
    REQUIRE(all.size() == 1);
    published = all[0];
    make_directories(d / "nginx");
    NginxServer::Config c;
    c.root = hub_dir;
    c.extra_http = "location /to-https/ { rewrite ^/to-https/(.*)$ https://127.0.0.1:{HTTPS_PORT}/$1 redirect; }";
    c.extra_https =
        "location /to-http/ { rewrite ^/to-http/(.*)$ http://127.0.0.1:{HTTP_PORT}/$1 redirect; }\n"
        "location /to-other/ { rewrite ^/to-other/(.*)$ https://127.0.0.2:{HTTPS_PORT}/$1 redirect; }";
    nginx = std::make_unique<NginxServer>(d / "nginx", c);
  }

  // Downloads the published blob through `hub` into a fresh file; returns its bytes.
  std::string fetch_blob(Hub& hub) const {
    std::string out = d / ("out-" + std::to_string(counter_++));
    int fd = ::open(out.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    try {
      hub.fetch_blob(published.sha256, published.size, fd);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return kh_test::read_text(out);
  }
  std::string archive() const { return kh_test::read_text(hub_dir + "/" + blob_path(published.sha256)); }

  // The access log once it has at least n lines (nginx writes it just after answering).
  std::vector<std::string> log_lines(size_t n) const {
    std::vector<std::string> lines;
    for (int i = 0; i < 100; ++i) {
      lines.clear();
      std::istringstream in(nginx->access_log());
      for (std::string l; std::getline(in, l);) lines.push_back(l);
      if (lines.size() >= n) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return lines;
  }

 private:
  mutable int counter_ = 0;
};

}  // namespace

TEST_CASE("nginx over http: metadata, blobs, ETag and 304, one kept-alive connection") {
  World w;
  auto hub = open_http_hub(w.nginx->http_url(), quiet());
  const std::string index_rel = repo_index_path(kRepo);
  const std::string on_disk = kh_test::read_text(w.hub_dir + "/" + index_rel);

  MetadataFetch first = hub->fetch_metadata_conditional(index_rel, 1 << 20, "");
  CHECK_FALSE(first.not_modified);
  CHECK(first.text == on_disk);
  REQUIRE_FALSE(first.etag.empty());
  RepoIndex idx = parse_repo_index(first.text, "index over http");
  CHECK(idx.repo == kRepo);

  MetadataFetch again = hub->fetch_metadata_conditional(index_rel, 1 << 20, first.etag);
  CHECK(again.not_modified);
  CHECK(again.text.empty());

  CHECK(w.fetch_blob(*hub) == w.archive());

  // The file changes (another size, so nginx's mtime-size ETag changes even within a second).
  kh_test::write_text(w.hub_dir + "/" + index_rel, on_disk + "\n");
  MetadataFetch changed = hub->fetch_metadata_conditional(index_rel, 1 << 20, first.etag);
  CHECK_FALSE(changed.not_modified);
  CHECK(changed.text == on_disk + "\n");
  CHECK(changed.etag != first.etag);

  kh_test::expect_status([&] { hub->fetch_metadata("repos/no/such/index.json", 1 << 20); }, KH_ERROR_NOT_FOUND);

  // Five requests, one connection (keep-alive through the hub's handle).
  auto lines = w.log_lines(5);
  REQUIRE(lines.size() == 5);
  std::string conn;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::istringstream f(lines[i]);
    std::string addr, serial, nreq, status;
    f >> addr >> serial >> nreq >> status;
    CAPTURE(lines[i]);
    if (i == 0) conn = serial;
    CHECK(serial == conn);
    CHECK(nreq == std::to_string(i + 1));
  }
  CHECK(lines[1].find(" 304 ") != std::string::npos);
}

TEST_CASE("nginx over https: the test CA through KH_CA_BUNDLE; without it, a message naming it") {
  World w;
  SUBCASE("trusted") {
    ScopedEnv ca("KH_CA_BUNDLE", w.nginx->ca_file());
    auto hub = open_hub(w.nginx->https_url());
    CHECK(hub->id().rfind("https-", 0) == 0);
    CHECK(hub->fetch_metadata("kh-hub.json", 1 << 16) == kh_test::read_text(w.hub_dir + "/kh-hub.json"));
    CHECK(w.fetch_blob(*hub) == w.archive());
    MetadataFetch m = hub->fetch_metadata_conditional("kh-hub.json", 1 << 16, "");
    MetadataFetch m2 = hub->fetch_metadata_conditional("kh-hub.json", 1 << 16, m.etag);
    CHECK(m2.not_modified);
  }
  SUBCASE("untrusted") {
    auto hub = open_http_hub(w.nginx->https_url(), quiet());
    std::string msg = kh_test::expect_status([&] { hub->fetch_metadata("kh-hub.json", 1 << 16); }, KH_ERROR_NETWORK);
    CHECK(msg.find("KH_CA_BUNDLE") != std::string::npos);
    CHECK(msg.find(w.nginx->https_url()) != std::string::npos);
  }
}

TEST_CASE("nginx redirects: https to http refused; to another host followed without the token") {
  World w;
  HttpOptions o = quiet(w.nginx->ca_file());
  o.token = "tok-123";
  SUBCASE("https -> http is refused") {
    auto hub = open_http_hub(w.nginx->https_url("/to-http"), o);
    std::string msg = kh_test::expect_status([&] { w.fetch_blob(*hub); }, KH_ERROR_NETWORK);
    CHECK(msg.find("refused") != std::string::npos);
    CHECK(msg.find("tok-123") == std::string::npos);
    auto lines = w.log_lines(1);
    CHECK(lines.size() == 1);  // nothing reached the http listener
  }
  SUBCASE("https 127.0.0.1 -> https 127.0.0.2: followed, token only on the first hop") {
    auto hub = open_http_hub(w.nginx->https_url("/to-other"), o);
    CHECK(w.fetch_blob(*hub) == w.archive());
    auto lines = w.log_lines(2);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].rfind("127.0.0.1 ", 0) == 0);
    CHECK(lines[0].find(" 302 ") != std::string::npos);
    CHECK(lines[0].find("auth=Bearer tok-123") != std::string::npos);
    CHECK(lines[1].rfind("127.0.0.2 ", 0) == 0);
    CHECK(lines[1].find(" 200 ") != std::string::npos);
    CHECK(lines[1].find("auth=-") != std::string::npos);
  }
  SUBCASE("http -> https is followed (another origin: no token)") {
    auto hub = open_http_hub(w.nginx->http_url("/to-https"), o);
    CHECK(w.fetch_blob(*hub) == w.archive());
    auto lines = w.log_lines(2);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].find("auth=Bearer tok-123") != std::string::npos);
    CHECK(lines[1].find("auth=-") != std::string::npos);
  }
}

TEST_CASE("Cache::ensure_package through an https hub, and a larger blob over http/2") {
  World w(6 * 1024 * 1024);
  auto hub = open_http_hub(w.nginx->https_url(), quiet(w.nginx->ca_file()));
  RepoIndex idx = parse_repo_index(hub->fetch_metadata(repo_index_path(kRepo), 1 << 20), "index over https");
  const Release& rel = resolve_release(idx, parse_version_request("1"));
  REQUIRE(!rel.variants.empty());
  Cache cache(w.d / "cache");
  std::string dir = cache.ensure_package(*hub, kRepo, rel, rel.variants.front());
  CHECK(kh_test::read_text(dir + "/lib/libkh_http.so") == w.library);
  CHECK(cache.package_dir(w.published.sha256).has_value());
}
