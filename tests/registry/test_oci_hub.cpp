// oci:// hubs against Debian's docker-registry (CNCF distribution 2.8) on loopback over
// TLS: htpasswd basic auth, the bearer-token flow with our token server, chunked and
// monolithic pushes, HEAD before upload, conditional manifest reads, Range resume, a blob
// redirected to another host (without the registry's credentials), and interop with
// skopeo (it reads what kh published; kh reads what it copied to a second registry).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "../servers/nginx_fixture.hpp"
#include "../servers/registry_fixture.hpp"
#include "../servers/server_util.hpp"
#include "../servers/token_server.hpp"
#include "http_test_util.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::RegistryServer;
using kh_test::TempDir;

namespace {

const char* kRepo = "test-org/oci-kernel";

// Access to a registry: the test CA, fast retries, a short lease settle (loopback writes
// take milliseconds), small upload chunks so that pushes of a few hundred KB are chunked.
HubAccess access(const std::string& ca, const std::string& user = "", const std::string& password = "") {
  HubAccess a;
  a.http = kh_test::fast_options();
  a.http.ca_bundle = ca;
  a.registry.user = user;
  a.registry.password = password;
  a.lease.settle_s = 0.2;
  a.upload_chunk_bytes = 64 * 1024;
  return a;
}

// A signing key, root 1 and one packed build of kRepo, ready to publish anywhere.
struct Package {
  TempDir d;
  minisign::SecretKey key = minisign::generate_key();
  std::string root_text;  // root 1, as publish_to wrote it
  std::string library;

  explicit Package(size_t library_bytes = 300 * 1024) {
    library = "\x7f" "ELF" + kh_test::random_bytes(library_bytes, 5);
    make_directories(d / "build");
    kh_test::write_text(d / "build/libkh_oci.so", library, 0755);
  }
  // Packs version `v` into dist-<v>/.
  std::string dist(const std::string& v) {
    PackageManifest m;
    m.name = kRepo;
    m.version = v;
    m.variant = "cpu-x86_64-abi1-x86_64-linux";
    m.abi = "1.0";
    m.ops = {{"fake_op", "fake_op(Tensor(a!) out, Tensor x) -> ()"}};
    kh_test::write_text(d / "build/libkh_oci.so", library + v, 0755);  // each version its own bytes
    pack_package(d / "build/libkh_oci.so", m, d / ("dist-" + v));
    return d / ("dist-" + v);
  }
  // Writes root 1 to the hub, then publishes version v there, signed.
  std::vector<PublishedVariant> publish_to(const std::string& url, const HubAccess& a, const std::string& v = "1.0.0",
                                           bool with_root = true) {
    auto hub = open_hub_writer(url, a);
    if (with_root) {
      RootSpec s;
      s.root_keys = {key.public_key()};
      s.index_keys = {key.public_key()};
      s.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 30 * 86400;
      write_next_root(*hub, s, {key}, RootStep::First);
      root_text = read_root(*hub);
    }
    PublishOptions o;
    o.signing_keys = {key};
    o.trust_cache = d / "publisher-cache";
    return publish(dist(v), *hub, o);
  }
  static std::string read_root(HubWriter& hub) { return hub.reader().fetch_metadata("root/1.root.json", 1 << 20); }

  // A client of the hub: its own cache, root 1 pinned, the index verified.
  RepoIndex client_index(Hub& hub, const std::string& cache_name = "client-cache") {
    Cache cache(d / cache_name);
    TrustStore(cache, hub.id()).pin_root(root_text, "root/1.root.json");
    return fetch_verified_index(hub, cache, kRepo);
  }
};

std::string fetch_blob(Hub& hub, const PublishedVariant& p, const std::string& out, uint64_t resume_from = 0) {
  const int fd = ::open(out.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::lseek(fd, static_cast<off_t>(resume_from), SEEK_SET) == static_cast<off_t>(resume_from));
  hub.fetch_blobs({BlobRequest{p.sha256, p.size, fd, resume_from, ""}});
  ::close(fd);
  return kh_test::read_text(out);
}

size_t count_lines(const std::string& log, const std::string& a, const std::string& b = "") {
  size_t n = 0;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);)
    if (l.find(a) != std::string::npos && l.find(b) != std::string::npos) ++n;
  return n;
}

// A server writes a request's access-log line after it has sent the response, so a client can
// be done before the line is there (seen on a loaded machine): wait up to 10 s for `want`
// matching lines of server.log() / access_log(), then return how many there are.
template <typename ReadLog>
size_t await_lines(const ReadLog& read_log, const std::string& a, const std::string& b, size_t want) {
  size_t n = 0;
  for (int i = 0; i < 200 && (n = count_lines(read_log(), a, b)) < want; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return n;
}
size_t await_lines(const RegistryServer& registry, const std::string& a, const std::string& b, size_t want) {
  return await_lines([&] { return registry.log(); }, a, b, want);
}

}  // namespace

TEST_CASE("oci over TLS with htpasswd: publish, then a client verifies the index and gets the build") {
  Package pkg;
  TempDir r;
  RegistryServer registry(r.path(), {});
  const std::string url = registry.hub_url("kh/hub");
  const HubAccess a = access(registry.ca_file(), "publisher", "pa55word");
  const auto published = pkg.publish_to(url, a);
  REQUIRE(published.size() == 1);

  auto hub = open_hub(url, a);
  CHECK(hub->id().rfind("oci-", 0) == 0);
  const RepoIndex index = pkg.client_index(*hub);
  CHECK(index.repo == kRepo);
  CHECK(index.releases.at(0).variants.at(0).sha256 == published[0].sha256);
  CHECK(fetch_blob(*hub, published[0], pkg.d / "blob") == kh_test::read_text(pkg.d / ("dist-1.0.0/" +
        std::string("test-org__oci-kernel-1.0.0-cpu-x86_64-abi1-x86_64-linux.tar.zst"))));

  CHECK(await_lines(registry, "PATCH /v2/kh/hub/blobs/uploads/", "202", 2) >= 2);  // the build went up in chunks
  CHECK(await_lines(registry, "PUT /v2/kh/hub/manifests/index-test-org.oci-kernel-", "201", 1) == 1);

  SUBCASE("the same archive again: HEAD finds it, nothing is uploaded") {
    const size_t posts = count_lines(registry.log(), "POST /v2/kh/hub/blobs/uploads/");
    auto w = open_hub_writer(url, a);
    PublishOptions o;
    o.signing_keys = {pkg.key};
    o.trust_cache = pkg.d / "client-cache";  // pinned by client_index
    const auto again = publish(pkg.d / "dist-1.0.0", *w, o);
    CHECK(again.at(0).already_present);
    // Only the lease's blobs (taken and given back) went up.
    CHECK(count_lines(registry.log(), "POST /v2/kh/hub/blobs/uploads/") - posts <= 2);
  }
  SUBCASE("a second version: merged into the same tag, the index's version grows") {
    auto w = open_hub_writer(url, a);
    PublishOptions o;
    o.signing_keys = {pkg.key};
    o.trust_cache = pkg.d / "client-cache";
    publish(pkg.dist("1.1.0"), *w, o);
    auto fresh = open_hub(url, a);
    const RepoIndex two = pkg.client_index(*fresh, "client-2");
    CHECK(two.version == 2);
    CHECK(two.releases.size() == 2);
  }
  SUBCASE("an unchanged index is answered 304 on the manifest and verified from the cache") {
    Cache cache(pkg.d / "client-cache");
    const size_t gets = count_lines(registry.log(), "GET /v2/kh/hub/manifests/index-");
    fetch_verified_index(*hub, cache, kRepo);
    CHECK(await_lines(registry, "GET /v2/kh/hub/manifests/index-", " 304 ", 1) >= 1);
    CHECK(count_lines(registry.log(), "GET /v2/kh/hub/manifests/index-") == gets + 1);
  }
  SUBCASE("an interrupted download resumes with Range") {
    const std::string whole = fetch_blob(*hub, published[0], pkg.d / "whole");
    kh_test::write_text(pkg.d / "part", whole.substr(0, whole.size() / 2));
    CHECK(fetch_blob(*hub, published[0], pkg.d / "part", whole.size() / 2) == whole);
    CHECK(await_lines(registry, "GET /v2/kh/hub/blobs/sha256:" + published[0].sha256, " 206 ", 1) == 1);
  }
  SUBCASE("without credentials: refused, saying how to give them") {
    auto anon = open_hub(url, access(registry.ca_file()));
    const std::string msg = kh_test::expect_status([&] { anon->fetch_metadata("kh-hub.json", 1 << 16); }, KH_ERROR_NETWORK);
    CHECK_MESSAGE(msg.find("401") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("KH_REGISTRY_AUTH") != std::string::npos, msg);
  }
  SUBCASE("wrong password: refused, and the password never appears") {
    auto wrong = open_hub(url, access(registry.ca_file(), "publisher", "not-it-xyz"));
    const std::string msg = kh_test::expect_status([&] { wrong->fetch_metadata("kh-hub.json", 1 << 16); }, KH_ERROR_NETWORK);
    CHECK(msg.find("refused") != std::string::npos);
    CHECK(msg.find("not-it-xyz") == std::string::npos);
  }
  SUBCASE("a hub URL that is not oci://host/namespace is refused with the form") {
    for (const char* bad : {"oci://127.0.0.1:1", "oci://127.0.0.1:1/UPPER", "oci://user:pw@127.0.0.1:1/ns"}) {
      CAPTURE(bad);
      const std::string msg = kh_test::expect_status([&] { open_hub(bad, a); }, KH_ERROR_INVALID_ARGUMENT);
      CHECK(msg.find("oci://host[:port]/namespace") != std::string::npos);
      CHECK(msg.find("pw@") == std::string::npos);
    }
  }
}

TEST_CASE("oci behind the token flow: anonymous pulls, pushes with credentials, refusals that say why") {
  Package pkg;
  TempDir t, r;
  kh_test::TokenServer tokens(t.path(), {});
  RegistryServer::Config c;
  c.auth = RegistryServer::Auth::Token;
  c.token_realm = tokens.realm();
  c.token_service = tokens.service();
  c.token_issuer = tokens.issuer();
  c.token_cert = tokens.cert_file();
  RegistryServer registry(r.path(), c);
  const std::string url = registry.hub_url("kernels");

  SUBCASE("no credentials: reading works (anonymous token), publishing is refused") {
    const std::string msg =
        kh_test::expect_status([&] { pkg.publish_to(url, access(registry.ca_file())); }, KH_ERROR_NETWORK);
    CHECK_MESSAGE(msg.find("401") != std::string::npos, msg);
    CHECK(msg.find("KH_REGISTRY_AUTH") != std::string::npos);
  }
  SUBCASE("a wrong password: the token service's refusal is named") {
    const std::string msg = kh_test::expect_status(
        [&] { pkg.publish_to(url, access(registry.ca_file(), "publisher", "s3cr3t-not-it")); }, KH_ERROR_NETWORK);
    CHECK_MESSAGE(msg.find("token service") != std::string::npos, msg);
    CHECK(msg.find("s3cr3t-not-it") == std::string::npos);  // a password never appears in messages
  }
  SUBCASE("with credentials: published; then read anonymously and verified") {
    const auto published = pkg.publish_to(url, access(registry.ca_file(), "publisher", "pa55word"));
    auto anon = open_hub(url, access(registry.ca_file()));
    CHECK(pkg.client_index(*anon).releases.at(0).variants.at(0).sha256 == published.at(0).sha256);
    CHECK(fetch_blob(*anon, published[0], pkg.d / "blob").size() == published[0].size);
    bool anonymous_token = false, push_token = false;
    for (const auto& req : tokens.requests()) {
      anonymous_token |= !req.has("authorization") && req.target.find("pull") != std::string::npos;
      push_token |= req.has("authorization") && req.target.find("push") != std::string::npos;
    }
    CHECK(anonymous_token);
    CHECK(push_token);
  }
}

TEST_CASE("a blob the registry redirects to another host: followed, without the registry's credentials") {
  Package pkg;
  TempDir r, n;
  RegistryServer registry(r.path(), {});
  const HubAccess direct = access(registry.ca_file(), "publisher", "pa55word");
  const auto published = pkg.publish_to(registry.hub_url("kh/hub"), direct);
  // nginx in front of the registry on 127.0.0.1; the build's GETs sent to 127.0.0.2, a "CDN"
  // that serves archives from a folder of its own.
  make_directories(n / "cdn");
  kh_test::write_text(n / ("cdn/" + published[0].sha256),
                      fetch_blob(*open_hub(registry.hub_url("kh/hub"), direct), published[0], pkg.d / "b"));
  kh_test::NginxServer::Config c;
  c.root = n / "www";
  make_directories(c.root);
  c.extra_https = "location /v2/ {\n"
                  "    if ($server_addr = 127.0.0.1) {\n"
                  "      rewrite ^/v2/.*/blobs/sha256:(" + published[0].sha256 + ")$ https://127.0.0.2:{HTTPS_PORT}/cdn/$1 redirect;\n"
                  "    }\n"
                  "    proxy_pass https://127.0.0.1:" + std::to_string(registry.port()) + ";\n"
                  "    proxy_set_header Host $http_host;\n    proxy_ssl_verify off;\n  }\n"
                  "  location /cdn/ { alias " + n / "cdn/" + "; }\n";
  make_directories(n / "nginx");
  kh_test::NginxServer nginx(n / "nginx", c);
  HubAccess front = direct;
  front.http.ca_bundle = nginx.ca_file();
  auto hub = open_hub("oci://127.0.0.1:" + std::to_string(nginx.https_port()) + "/kh/hub", front);
  hub->fetch_metadata("kh-hub.json", 1 << 16);  // through nginx to the registry: its Basic challenge answered
  CHECK(fetch_blob(*hub, published[0], pkg.d / "via-cdn") == kh_test::read_text(pkg.d / "b"));
  await_lines([&] { return nginx.access_log(); }, "127.0.0.2 ", "GET /cdn/" + published[0].sha256, 1);
  const std::string log = nginx.access_log();
  CAPTURE(log);
  CHECK(count_lines(log, "127.0.0.1 ", "/blobs/sha256:" + published[0].sha256) == 1);
  CHECK(count_lines(log, "/blobs/sha256:" + published[0].sha256, "auth=Basic") == 1);  // the registry's host got them
  CHECK(count_lines(log, "127.0.0.2 ", "GET /cdn/" + published[0].sha256) == 1);
  CHECK(count_lines(log, "127.0.0.2 ", "auth=-") == count_lines(log, "127.0.0.2 "));  // the CDN got none
}

TEST_CASE("skopeo reads what kh published, and kh reads what skopeo copied to a second registry") {
  const std::string skopeo = kh_test::find_program("skopeo");
  REQUIRE_MESSAGE(!skopeo.empty(), "skopeo is not installed; run scripts/install-deps.sh");
  Package pkg;
  TempDir ra, rb;
  RegistryServer a(ra.path(), {}), b(rb.path(), {});
  const auto published = pkg.publish_to(a.hub_url("kh/hub"), access(a.ca_file(), "publisher", "pa55word"));
  const std::string creds = " --creds publisher:pa55word ";
  auto run = [&](const std::string& args) {
    const std::string out = pkg.d / "skopeo.out";
    const int rc = std::system((skopeo + " " + args + " >" + kh_test::shell_quote(out) + " 2>&1").c_str());
    const std::string text = kh_test::read_text(out);
    REQUIRE_MESSAGE(rc == 0, args << ": " << text);
    return text;
  };
  // skopeo inspect --raw: our index tag is an OCI artifact manifest naming the build.
  const std::string ref_a = "docker://127.0.0.1:" + std::to_string(a.port()) + "/kh/hub";
  const std::string tags = run("list-tags --cert-dir " + a.cert_dir() + creds + ref_a);
  const nlohmann::json tag_list = nlohmann::json::parse(tags);
  std::string index_tag;
  for (const auto& t : tag_list["Tags"])
    if (t.get<std::string>().rfind("index-", 0) == 0) index_tag = t.get<std::string>();
  REQUIRE(!index_tag.empty());
  const nlohmann::json manifest =
      nlohmann::json::parse(run("inspect --raw --cert-dir " + a.cert_dir() + creds + ref_a + ":" + index_tag));
  CHECK(manifest["artifactType"] == "application/vnd.kh.index.v1+json");
  bool names_build = false;
  for (const auto& l : manifest["layers"]) names_build |= l["digest"] == "sha256:" + published[0].sha256;
  CHECK(names_build);

  // skopeo copy, tag by tag, to registry b; kh reads the copy and verifies it against root 1.
  const std::string ref_b = "docker://127.0.0.1:" + std::to_string(b.port()) + "/mirrored";
  for (const auto& t : tag_list["Tags"]) {
    const std::string tag = t.get<std::string>();
    run("copy --src-cert-dir " + a.cert_dir() + " --dest-cert-dir " + b.cert_dir() +
        " --src-creds publisher:pa55word --dest-creds publisher:pa55word " + ref_a + ":" + tag + " " + ref_b + ":" + tag);
  }
  auto copy = open_hub(b.hub_url("mirrored"), access(b.ca_file(), "publisher", "pa55word"));
  CHECK(pkg.client_index(*copy, "copy-client").releases.at(0).variants.at(0).sha256 == published[0].sha256);
  CHECK(fetch_blob(*copy, published[0], pkg.d / "from-copy").size() == published[0].size);
}
