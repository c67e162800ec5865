// http and https hubs against a real nginx on loopback: a hub tree published by the
// registry API, fetched over http and over https with a test CA (KH_CA_BUNDLE), ETag and
// 304, kept-alive connections, redirects between schemes and hosts (the token's reach),
// and Cache::ensure_package through an https hub.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
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
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/semver.hpp"
#include "http_test_util.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::NginxServer;
using kh_test::ScopedEnv;
using kh_test::TempDir;

namespace {

const char* kRepo = "test-org/http-kernel";
const char* kVariant = "cpu-x86_64-abi1-x86_64-linux";

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

  // Publishes `variants` builds of kRepo 1.0.0 (the first one is kVariant), each a
  // library of library_bytes random bytes.
  explicit World(size_t library_bytes = 300 * 1024, size_t variants = 1) {
    std::mt19937 rng(11);
    for (size_t v = 0; v < variants; ++v) {
      std::string lib = "\x7f" "ELF";
      lib.resize(library_bytes);
      for (size_t i = 4; i < lib.size(); ++i) lib[i] = static_cast<char>(rng() & 0xff);
      if (v == 0) library = lib;
      const std::string build = d / ("build" + std::to_string(v));
      make_directories(build);
      kh_test::write_text(build + "/libkh_http.so", lib, 0755);
      PackageManifest m;
      m.name = kRepo;
      m.version = "1.0.0";
      m.variant = v == 0 ? kVariant : "cuda13.0-sm" + std::to_string(80 + v) + "-abi1-x86_64-linux";
      m.abi = "1.0";
      m.ops = {{"fake_op", "fake_op(Tensor(a!) out, Tensor x) -> ()"}};
      pack_package(build + "/libkh_http.so", m, d / "dist");
    }
    auto all = publish_to_file_hub(d / "dist", hub_dir);
    REQUIRE(all.size() == variants);
    for (const auto& p : all)
      if (p.variant == kVariant) published = p;
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

TEST_CASE("nginx over https: the test CA as the CA bundle (KH_CA_BUNDLE); without it, a message naming it") {
  World w;
  SUBCASE("trusted") {
    HubAccess access;
    access.http.ca_bundle = w.nginx->ca_file();
    auto hub = open_hub(w.nginx->https_url(), access);
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

namespace {
// Access-log lines of successful GETs of a blob.
size_t blob_downloads(const std::vector<std::string>& log, const std::string& sha) {
  size_t n = 0;
  for (const auto& l : log)
    if (l.find("GET /" + blob_path(sha)) != std::string::npos && l.find(" 200 ") != std::string::npos) ++n;
  return n;
}
}  // namespace

TEST_CASE("N processes fetching one package into one cache make one download, and all succeed") {
  World w(4 * 1024 * 1024);
  const std::string cache_dir = w.d / "shared-cache";
  constexpr int kProcesses = 6;
  int gate[2];
  REQUIRE(::pipe(gate) == 0);
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {  // a separate process: its own hub connection, the shared cache
      ::close(gate[1]);
      char c;
      while (::read(gate[0], &c, 1) > 0) {
      }  // all start together once the parent closes the gate
      int code = 1;
      try {
        auto hub = open_http_hub(w.nginx->http_url(), quiet());
        RepoIndex idx = parse_repo_index(hub->fetch_metadata(repo_index_path(kRepo), 1 << 20), "index");
        const Release& rel = resolve_release(idx, parse_version_request("1"));
        Cache cache(cache_dir);
        std::string dir = cache.ensure_package(*hub, kRepo, rel, rel.variants.front());
        code = kh_test::read_text(dir + "/lib/libkh_http.so") == w.library ? 0 : 2;
      } catch (...) {
        code = 3;
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  const auto log = w.log_lines(kProcesses * 2);  // an index and at most one blob each
  CHECK(blob_downloads(log, w.published.sha256) == 1);
  CHECK(Cache(cache_dir).package_dir(w.published.sha256).has_value());
}

TEST_CASE("Cache::ensure_packages downloads several builds at once from nginx and installs each") {
  World w(2 * 1024 * 1024, 4);
  auto hub = open_http_hub(w.nginx->https_url(), quiet(w.nginx->ca_file()));
  RepoIndex idx = parse_repo_index(hub->fetch_metadata(repo_index_path(kRepo), 1 << 20), "index over https");
  const Release& rel = resolve_release(idx, parse_version_request("1"));
  REQUIRE(rel.variants.size() == 4);
  Cache cache(w.d / "cache");
  std::vector<Cache::PackageRequest> batch;
  for (const auto& v : rel.variants) batch.push_back({kRepo, &rel, &v});
  batch.push_back({kRepo, &rel, &rel.variants.front()});  // asked twice: fetched once
  const auto dirs_of = [](const std::vector<InstalledTree>& trees) {
    std::vector<std::string> dirs;
    for (const InstalledTree& t : trees) dirs.push_back(t.dir);
    return dirs;
  };
  const std::vector<InstalledTree> trees = cache.ensure_packages(*hub, batch);
  const std::vector<std::string> dirs = dirs_of(trees);
  REQUIRE(dirs.size() == 5);
  CHECK(dirs[4] == dirs[0]);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(cache.package_dir(rel.variants[i].sha256) == dirs[i]);
    CHECK(read_file(dirs[i] + "/" + kManifestName, 1 << 20).find(rel.variants[i].key) != std::string::npos);
    // The manifest comes back as the cache checked it: the build asked for.
    CHECK(trees[i].manifest.variant == rel.variants[i].key);
    CHECK(trees[i].manifest.name == kRepo);
  }
  const auto log = w.log_lines(5);
  for (const auto& v : rel.variants) CHECK(blob_downloads(log, v.sha256) == 1);

  // All present: a second batch downloads nothing.
  const size_t lines = log.size();
  CHECK(dirs_of(cache.ensure_packages(*hub, batch)) == dirs);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(w.log_lines(0).size() == lines);
}
