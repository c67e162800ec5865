// One load, one connection: the index, its signature and the blob of a `kernels get` /
// kh_load_kernel travel on the session's one connection to the hub (one TLS handshake),
// checked in nginx's access log ($connection), over https with a test CA.
#include <doctest/doctest.h>

#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "../registry/http_test_util.hpp"
#include "../registry/test_util.hpp"
#include "../servers/nginx_fixture.hpp"
#include "kh/install/install.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"

using namespace kh;

TEST_CASE("a get over https opens one connection for index, signature and blob") {
  kh_test::TempDir d;
  const std::string hub_dir = d / "www/hub";
  const auto key = registry::minisign::generate_key();
  registry::RootSpec spec;
  spec.root_keys = {key.public_key()};
  spec.index_keys = {key.public_key()};
  spec.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
  registry::write_next_root_to_file_hub(hub_dir, spec, {key});
  registry::make_directories(d / "build");
  kh_test::write_text(d / "build/libkh_one.so", kh_test::random_bytes(200 * 1024, 3));
  registry::PackageManifest m;
  m.name = "test-org/one-connection";
  m.version = "1.0.0";
  m.variant = "cpu-x86_64-abi1-x86_64-linux";
  m.abi = "1.0";
  m.ops = {{"fake_op", "fake_op(Tensor(a!) out, Tensor x) -> ()"}};
  registry::pack_package(d / "build/libkh_one.so", m, d / "dist");
  registry::publish_to_file_hub(d / "dist", hub_dir, 30, {key});

  registry::make_directories(d / "nginx");
  kh_test::NginxServer::Config c;
  c.root = d / "www";
  kh_test::NginxServer nginx(d / "nginx", c);
  const std::string url = nginx.https_url("/hub");

  install::Settings settings;
  settings.ca_bundle = nginx.ca_file();
  settings.progress = registry::HttpOptions::Progress::Never;
  install::Options options;
  options.hub_url = url;
  options.cache_root = d / "cache";
  install::Session session(settings, options, [](const std::vector<registry::VariantEntry>& builds, const std::string&) {
    install::BuildSelection selection;  // one build: that one
    selection.chosen = builds.front().key;
    return selection;
  });
  registry::TrustStore(session.cache(), session.hub(url).id())
      .pin_root(kh_test::read_text(hub_dir + "/root/1.root.json"), "root/1.root.json");
  const install::InstalledPackage p = install::get(session, "test-org/one-connection@1");
  CHECK(p.downloaded);

  // nginx logs a request just after answering it: wait (up to 10 s) for the last one, the blob.
  for (int i = 0; i < 200 && nginx.access_log().find("GET /hub/blobs/sha256/") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::istringstream log(nginx.access_log());
  std::set<std::string> connections;
  int requests = 0;
  bool blob = false, index = false;
  for (std::string line; std::getline(log, line);) {
    std::istringstream fields(line);
    std::string addr, connection;
    fields >> addr >> connection;
    connections.insert(connection);
    ++requests;
    blob |= line.find("GET /hub/blobs/sha256/") != std::string::npos;
    index |= line.find("GET /hub/repos/test-org/one-connection/index.json ") != std::string::npos;
  }
  CAPTURE(nginx.access_log());
  CHECK(blob);
  CHECK(index);
  CHECK(requests >= 3);           // root walk, index, signature, blob
  CHECK(connections.size() == 1);  // all on one connection: one TLS handshake
}
