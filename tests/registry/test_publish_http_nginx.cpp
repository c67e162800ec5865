// Publishing over HTTP PUT to a real nginx with WebDAV: basic auth over http, a bearer
// token over https, the upload order (blobs before signatures before the index), signed
// indexes that clients verify, the catalog kept whole, and refusals that leave the hub as
// it was (wrong credentials, other bytes for a published build, a server without PUT).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "../servers/nginx_fixture.hpp"
#include "http_test_util.hpp"
#include "test_util.hpp"
#include "kh/install/settings.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/trust.hpp"

using namespace kh::registry;
using kh_test::NginxServer;
using kh_test::ScopedEnv;
using kh_test::TempDir;

namespace {

const char* kVariant = "cpu-x86_64-abi1-x86_64-linux";
const char* kToken = "s3cret-publish-token";

// nginx serving www/ with two writable hubs: /basic (basic auth for PUT and DELETE) and
// /bearer (a bearer token for PUT and DELETE); reading needs nothing. /readonly has no PUT.
struct World {
  TempDir d;
  ScopedEnv publisher_cache{{"KH_CACHE", d / "publisher-cache"}};  // where publish checks the hub's index
  std::string www = d / "www";
  minisign::SecretKey key = minisign::generate_key();
  std::unique_ptr<NginxServer> nginx;

  World() {
    for (const char* hub : {"basic", "bearer", "readonly"}) make_directories(www + "/" + hub);
    make_directories(d / "nginx");
    kh_test::write_text(d / "htpasswd", "publisher:{PLAIN}pa55word\n");
    const std::string dav =
        "    dav_methods PUT DELETE;\n    create_full_put_path on;\n    dav_access user:rw group:r all:r;\n"
        "    client_max_body_size 0;\n";
    NginxServer::Config c;
    c.root = www;
    c.extra_http = "location /basic/ {\n" + dav + "    limit_except GET HEAD { auth_basic \"kh\"; auth_basic_user_file " +
                   d / "htpasswd" + "; }\n  }\n";
    c.extra_https = "location /bearer/ {\n" + dav +
                    "    set $kh_deny \"\";\n"
                    "    if ($request_method ~ ^(PUT|DELETE)$) { set $kh_deny \"y\"; }\n"
                    "    if ($http_authorization = \"Bearer " + kToken + "\") { set $kh_deny \"\"; }\n"
                    "    if ($kh_deny = \"y\") { return 401; }\n  }\n";
    nginx = std::make_unique<NginxServer>(d / "nginx", c);
    // Each hub gets root 1 = {key} for both roles, as `kernels trust init` writes it.
    for (const char* hub : {"basic", "bearer"}) {
      RootSpec s;
      s.root_keys = {key.public_key()};
      s.index_keys = {key.public_key()};
      s.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 365 * 86400;
      write_next_root_to_file_hub(www + "/" + hub, s, {key});
    }
    pin(nginx->http_url("/basic"), www + "/basic");
    pin(nginx->https_url("/bearer"), www + "/bearer");
  }

  // The publisher trusts the hub's root 1, as after `kernels trust root.json --hub url`.
  void pin(const std::string& url, const std::string& hub_dir, bool replace = false) const {
    Cache cache(d / "publisher-cache");
    TrustStore(cache, open_http_hub(url, HttpOptions{})->id())
        .pin_root(kh_test::read_text(hub_dir + "/root/1.root.json"), "root/1.root.json", replace);
  }

  // A dist folder with one archive of repo@version whose library holds `content`.
  std::string dist(const std::string& repo, const std::string& version, const std::string& content) {
    const std::string dir = d / ("dist-" + std::to_string(dists_++));
    make_directories(dir + "-build");
    kh_test::write_text(dir + "-build/libkh_fake.so", content, 0755);
    PackageManifest m;
    m.name = repo;
    m.version = version;
    m.variant = kVariant;
    m.abi = "1.0";
    m.ops = {{"fake_op", "fake_op(Tensor(a!) out, Tensor x) -> ()"}};
    pack_package(dir + "-build/libkh_fake.so", m, dir);
    return dir;
  }

  // The index of repo as a client sees it: fetched over http(s) and verified against root 1.
  RepoIndex client_index(const std::string& hub_url, const std::string& repo, const std::string& hub_dir) {
    HttpOptions o = kh_test::fast_options();
    o.ca_bundle = nginx->ca_file();
    auto hub = open_http_hub(hub_url, o);
    Cache cache(d / ("cache-" + std::to_string(dists_++)));
    TrustStore(cache, hub->id()).pin_root(kh_test::read_text(hub_dir + "/root/1.root.json"), "root/1.root.json");
    return fetch_verified_index(*hub, cache, repo, TrustOptions{});
  }

  std::vector<std::string> log() const {
    std::vector<std::string> lines;
    std::istringstream in(nginx->access_log());
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }

 private:
  int dists_ = 0;
};

// What `kernels publish` does: the settings' credentials and trust cache, the hub's write
// half (a short lease settle: loopback writes take milliseconds).
HubAccess access_for(const std::string& url, kh::install::Settings* settings = nullptr) {
  kh::install::Settings s = kh::install::Settings::from_environment();
  HubAccess a = s.hub_access(url);
  a.lease.settle_s = 0.2;
  if (settings) *settings = s;
  return a;
}

std::vector<PublishedVariant> publish_http(const std::string& dist, const std::string& url,
                                           const std::vector<minisign::SecretKey>& keys = {}) {
  kh::install::Settings s;
  const HubAccess a = access_for(url, &s);
  PublishOptions o;
  o.signing_keys = keys;
  o.trust_cache = s.cache_root();
  o.trust = s.trust_options();
  return publish(dist, *open_hub_writer(url, a), o);
}

RootMetadata write_root_http(const std::string& url, const RootSpec& spec, const std::vector<minisign::SecretKey>& signers,
                             bool first) {
  return write_next_root(*open_hub_writer(url, access_for(url)), spec, signers, first ? RootStep::First : RootStep::Rotate);
}

// Position of the first access-log line holding all of `needles`, or -1.
int line_of(const std::vector<std::string>& log, const std::string& a, const std::string& b = "") {
  for (size_t i = 0; i < log.size(); ++i)
    if (log[i].find(a) != std::string::npos && log[i].find(b) != std::string::npos) return static_cast<int>(i);
  return -1;
}

}  // namespace

TEST_CASE("publish over http with basic auth: blobs, then signatures, then the index; clients verify it") {
  World w;
  const std::string url = w.nginx->http_url("/basic");
  const std::string hub_dir = w.www + "/basic";
  ScopedEnv creds{{"KH_PUBLISH_USER", "publisher"}, {"KH_PUBLISH_PASSWORD", "pa55word"}};

  auto published = publish_http(w.dist("org/one", "1.0.0", "lib one 1.0.0"), url, {w.key});
  REQUIRE(published.size() == 1);
  CHECK_FALSE(published[0].already_present);
  CHECK(kh_test::read_text(hub_dir + "/" + blob_path(published[0].sha256)).size() == published[0].size);

  RepoIndex idx = w.client_index(url, "org/one", hub_dir);
  CHECK(idx.version == 1);
  REQUIRE(idx.releases.size() == 1);
  CHECK(idx.releases[0].variants.at(0).sha256 == published[0].sha256);

  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // nginx logs just after answering
  const auto log = w.log();
  const int blob = line_of(log, "PUT /basic/" + blob_path(published[0].sha256));
  const int sig = line_of(log, "PUT /basic/repos/org/one/index.json.minisig");
  const int index = line_of(log, "PUT /basic/repos/org/one/index.json ");
  CHECK(blob >= 0);
  CHECK(sig > blob);
  CHECK(index > sig);

  // A second repo and a new version of the first: merged, version bumped, catalog whole.
  publish_http(w.dist("org/two", "0.1.0", "lib two"), url, {w.key});
  publish_http(w.dist("org/one", "1.1.0", "lib one 1.1.0"), url, {w.key});
  idx = w.client_index(url, "org/one", hub_dir);
  CHECK(idx.version == 2);
  CHECK(idx.releases.size() == 2);
  auto catalog = nlohmann::json::parse(kh_test::read_text(hub_dir + "/catalog.json"));
  REQUIRE(catalog["repos"].size() == 2);
  CHECK(catalog["repos"][0]["repo"] == "org/one");
  CHECK(catalog["repos"][0]["latest"] == "1.1.0");
  CHECK(catalog["repos"][1]["repo"] == "org/two");

  // The same archive again: nothing new, and its blob is not uploaded a second time.
  auto count_blob_puts = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto now = w.log();
    return std::count_if(now.begin(), now.end(),
                         [](const std::string& l) { return l.find("PUT /basic/blobs/") != std::string::npos; });
  };
  const auto puts_before = count_blob_puts();
  auto same = publish_http(w.dist("org/two", "0.1.0", "lib two"), url, {w.key});
  CHECK(same.at(0).already_present);
  CHECK(count_blob_puts() == puts_before);
}

TEST_CASE("publish over https with a bearer token; other bytes for a published build are refused, hub untouched") {
  World w;
  const std::string url = w.nginx->https_url("/bearer");
  const std::string hub_dir = w.www + "/bearer";
  ScopedEnv env{{"KH_CA_BUNDLE", w.nginx->ca_file()}, {"KH_PUBLISH_TOKEN", kToken}};

  auto first = publish_http(w.dist("org/one", "1.0.0", "original bytes"), url, {w.key});
  const std::string index_before = kh_test::read_text(hub_dir + "/repos/org/one/index.json");
  const std::string sig_before = kh_test::read_text(hub_dir + "/repos/org/one/index.json.minisig");

  std::string msg = kh_test::expect_status(
      [&] { publish_http(w.dist("org/one", "1.0.0", "other bytes"), url, {w.key}); },
      KH_ERROR_INVALID_ARGUMENT);
  CHECK(msg.find("already published") != std::string::npos);
  CHECK(kh_test::read_text(hub_dir + "/repos/org/one/index.json") == index_before);
  CHECK(kh_test::read_text(hub_dir + "/repos/org/one/index.json.minisig") == sig_before);
  CHECK(w.client_index(url, "org/one", hub_dir).releases.at(0).variants.at(0).sha256 == first.at(0).sha256);

  // Signing with a key the hub's root does not name is refused before anything is uploaded.
  const auto stranger = minisign::generate_key();
  kh_test::expect_status([&] { publish_http(w.dist("org/one", "2.0.0", "v2"), url, {stranger}); },
                         KH_ERROR_SIGNATURE);
  CHECK(kh_test::read_text(hub_dir + "/repos/org/one/index.json") == index_before);
}

TEST_CASE("publish refusals: no or wrong credentials, a server without PUT; the message says what to do") {
  World w;
  {
    ScopedEnv env{{"KH_CA_BUNDLE", w.nginx->ca_file()}, {"KH_PUBLISH_TOKEN", "wrong"}};
    std::string msg = kh_test::expect_status(
        [&] { publish_http(w.dist("org/one", "1.0.0", "x"), w.nginx->https_url("/bearer"), {w.key}); },
        KH_ERROR_NETWORK);
    CHECK(msg.find("401") != std::string::npos);
    CHECK(msg.find("KH_PUBLISH_TOKEN") != std::string::npos);
    CHECK(msg.find("wrong") == std::string::npos);  // the token never appears in messages
    CHECK_FALSE(path_exists(w.www + "/bearer/repos"));
  }
  {
    ScopedEnv env{{"KH_PUBLISH_USER", "publisher"}, {"KH_PUBLISH_PASSWORD", "not-it"}};
    kh_test::expect_status(
        [&] { publish_http(w.dist("org/one", "1.0.0", "x"), w.nginx->http_url("/basic"), {w.key}); },
        KH_ERROR_NETWORK);
    CHECK_FALSE(path_exists(w.www + "/basic/repos"));
  }
  {
    std::string msg = kh_test::expect_status(
        [&] { publish_http(w.dist("org/one", "1.0.0", "x"), w.nginx->http_url("/readonly"), {}); },
        KH_ERROR_NETWORK);
    CHECK(msg.find("405") != std::string::npos);
    CHECK(msg.find("dav_methods") != std::string::npos);
  }
  {
    ScopedEnv env{{"KH_PUBLISH_USER", "publisher"}};
    kh_test::expect_status([&] { publish_http(w.dist("org/one", "1.0.0", "x"), w.nginx->http_url("/basic")); },
                           KH_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("an http hub's roots are written over PUT: init, rotate, and init refused once a root exists") {
  World w;
  const std::string url = w.nginx->https_url("/bearer");
  const std::string hub_dir = w.www + "/bearer";
  ScopedEnv env{{"KH_CA_BUNDLE", w.nginx->ca_file()}, {"KH_PUBLISH_TOKEN", kToken}};
  remove_tree(hub_dir + "/root");  // World wrote root 1 on disk; start from none
  RootSpec spec;
  spec.root_keys = {w.key.public_key()};
  spec.index_keys = {w.key.public_key()};
  spec.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 30 * 86400;
  kh_test::expect_status([&] { write_root_http(url, spec, {w.key}, false); }, KH_ERROR_INVALID_ARGUMENT);
  CHECK(write_root_http(url, spec, {w.key}, true).version == 1);
  CHECK(path_exists(hub_dir + "/root/1.root.json"));
  w.pin(url, hub_dir, true);
  kh_test::expect_status([&] { write_root_http(url, spec, {w.key}, true); }, KH_ERROR_INVALID_ARGUMENT);

  // Rotate to a new key: signed by the old root key and the new one, as clients require.
  const auto next_key = minisign::generate_key();
  RootSpec next = spec;
  next.root_keys = {next_key.public_key()};
  next.index_keys = {next_key.public_key()};
  kh_test::expect_status([&] { write_root_http(url, next, {next_key}, false); }, KH_ERROR_SIGNATURE);
  CHECK_FALSE(path_exists(hub_dir + "/root/2.root.json"));
  CHECK(write_root_http(url, next, {w.key, next_key}, false).version == 2);
  // A client pinned on root 1 walks to root 2 and accepts an index signed by the new key.
  publish_http(w.dist("org/one", "1.0.0", "after rotation"), url, {next_key});
  CHECK(w.client_index(url, "org/one", hub_dir).version == 1);
}

TEST_CASE("publish merges only into an index that verifies: unpinned publisher and tampered index refused") {
  World w;
  const std::string url = w.nginx->http_url("/basic");
  const std::string hub_dir = w.www + "/basic";
  ScopedEnv creds{{"KH_PUBLISH_USER", "publisher"}, {"KH_PUBLISH_PASSWORD", "pa55word"}};
  publish_http(w.dist("org/one", "1.0.0", "v1"), url, {w.key});
  const std::string index = hub_dir + "/repos/org/one/index.json";

  // Someone with write access but not the key slips a build into the index.
  nlohmann::json doc = nlohmann::json::parse(kh_test::read_text(index));
  doc["releases"]["1.0.0"]["variants"]["cpu-x86_64_v3-abi1-x86_64-linux"] =
      doc["releases"]["1.0.0"]["variants"]["cpu-x86_64-abi1-x86_64-linux"];
  kh_test::write_text(index, doc.dump(2));
  std::string msg = kh_test::expect_status(
      [&] { publish_http(w.dist("org/one", "1.1.0", "v1.1"), url, {w.key}); }, KH_ERROR_SIGNATURE);
  CHECK(msg.find("does not verify") != std::string::npos);
  CHECK(kh_test::read_text(index) == doc.dump(2));  // not signed, not replaced

  // A publisher that never pinned the hub's root cannot check the index: refused too.
  ScopedEnv fresh{{"KH_CACHE", w.d / "unpinned-cache"}};
  msg = kh_test::expect_status([&] { publish_http(w.dist("org/one", "1.2.0", "v1.2"), url, {w.key}); },
                               KH_ERROR_SIGNATURE);
  CHECK(msg.find("kernels trust") != std::string::npos);
}
