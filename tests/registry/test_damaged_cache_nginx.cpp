// A damaged cached index heals itself (issue 16, item 7): a signed hub served by a real
// nginx; the client's cached index.json (or its signature) loses one byte; the next fetch
// must not reuse it after a 304, but drop it and fetch the index again unconditionally.
#include <doctest/doctest.h>

#include <chrono>
#include <ctime>
#include <sstream>
#include <thread>
#include <vector>

#include "../servers/nginx_fixture.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "http_test_util.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::NginxServer;
using kh_test::TempDir;

namespace {

const char* kRepo = "test-org/heal-kernel";

struct World {
  TempDir d;
  std::string hub_dir = d / "hub";
  minisign::SecretKey key = minisign::generate_key();
  std::unique_ptr<NginxServer> nginx;
  std::unique_ptr<Hub> hub;
  Cache cache{d / "cache"};
  std::string rel = repo_index_path(kRepo);

  explicit World(bool signed_hub) {
    if (signed_hub) {
      RootSpec s;
      s.root_keys = {key.public_key()};
      s.index_keys = {key.public_key()};
      s.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
      write_next_root_to_file_hub(hub_dir, s, {key});
    }
    make_directories(d / "build");
    kh_test::write_text(d / "build/libkh_heal.so", "a library", 0755);
    PackageManifest m;
    m.name = kRepo;
    m.version = "1.0.0";
    m.variant = "cpu-x86_64-abi1-x86_64-linux";
    m.abi = "1.0";
    m.ops = {{"fake_op", "fake_op(Tensor(a!) out, Tensor x) -> ()"}};
    pack_package(d / "build/libkh_heal.so", m, d / "dist");
    publish_to_file_hub(d / "dist", hub_dir, 365, signed_hub ? std::vector<minisign::SecretKey>{key}
                                                             : std::vector<minisign::SecretKey>{});
    make_directories(d / "nginx");
    NginxServer::Config c;
    c.root = hub_dir;
    nginx = std::make_unique<NginxServer>(d / "nginx", c);
    HttpOptions o = kh_test::fast_options();
    hub = open_http_hub(nginx->http_url(), o);
    if (signed_hub)
      TrustStore(cache, hub->id()).pin_root(kh_test::read_text(hub_dir + "/root/1.root.json"), "root/1.root.json");
  }

  std::string cached_file(const std::string& r) const { return cache.root() + "/hubs/" + hub->id() + "/" + r; }

  // Changes one byte of a cached file in place (same size: a validator would not notice).
  void damage(const std::string& r, char from, char to) {
    std::string text = kh_test::read_text(cached_file(r));
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text[at] = to;
    kh_test::write_text(cached_file(r), text);
  }

  // Status codes of the access log's requests for the index, in order.
  std::vector<std::string> index_statuses() const {
    std::vector<std::string> out;
    for (int i = 0; i < 100; ++i) {
      out.clear();
      std::istringstream in(nginx->access_log());
      for (std::string l; std::getline(in, l);) {
        if (l.find("GET /" + rel + " ") == std::string::npos) continue;
        std::istringstream fields(l);
        std::string host, serial, count, status;
        fields >> host >> serial >> count >> status;
        out.push_back(status);
      }
      if (!out.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return out;
  }
};

}  // namespace

TEST_CASE("a damaged cached index is dropped and fetched again unconditionally (signed hub, nginx)") {
  if (kh_test::find_nginx().empty()) {
    MESSAGE("nginx is not installed; skipping");
    return;
  }
  World w(true);
  TrustOptions o;
  CHECK(fetch_verified_index(*w.hub, w.cache, kRepo, o).version == 1);
  REQUIRE_FALSE(w.cache.load_metadata_etag(w.hub->id(), w.rel).empty());
  // The warm path: nginx says 304 and the intact copy is reused.
  CHECK(fetch_verified_index(*w.hub, w.cache, kRepo, o).version == 1);

  SUBCASE("one byte of the cached index changed") { w.damage(w.rel, ':', ';'); }
  SUBCASE("one byte of the cached signature changed") { w.damage(w.rel + ".minisig", 'R', 'Q'); }

  // Was: KH_ERROR_SIGNATURE on every later fetch (the 304 kept confirming the damaged copy).
  CHECK(fetch_verified_index(*w.hub, w.cache, kRepo, o).version == 1);
  const std::vector<std::string> statuses = w.index_statuses();
  REQUIRE(statuses.size() == 4);
  CHECK(statuses[0] == "200");
  CHECK(statuses[1] == "304");
  CHECK(statuses[2] == "304");  // confirmed the damaged copy: it failed verification ...
  CHECK(statuses[3] == "200");  // ... so it was dropped and fetched without If-None-Match
  // The cache holds the hub's bytes again, and offline reads verify.
  CHECK(kh_test::read_text(w.cached_file(w.rel)) == kh_test::read_text(w.hub_dir + "/" + w.rel));
  CHECK(kh_test::read_text(w.cached_file(w.rel + ".minisig")) == kh_test::read_text(w.hub_dir + "/" + w.rel + ".minisig"));
  CHECK(load_verified_cached_index(w.cache, w.hub->id(), w.hub->url(), kRepo, o)->version == 1);
}

TEST_CASE("a damaged cached index of an unsigned hub is fetched again too (nginx)") {
  if (kh_test::find_nginx().empty()) {
    MESSAGE("nginx is not installed; skipping");
    return;
  }
  World w(false);
  TrustOptions o;
  o.allow_unsigned = true;
  CHECK(fetch_verified_index(*w.hub, w.cache, kRepo, o).version == 1);
  w.damage(w.rel, '{', '[');
  CHECK(fetch_verified_index(*w.hub, w.cache, kRepo, o).version == 1);
  const std::vector<std::string> statuses = w.index_statuses();
  REQUIRE(statuses.size() == 3);
  CHECK(statuses[1] == "304");
  CHECK(statuses[2] == "200");
  CHECK(kh_test::read_text(w.cached_file(w.rel)) == kh_test::read_text(w.hub_dir + "/" + w.rel));
}
