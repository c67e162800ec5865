// Two publishers racing on one hub never lose each other's release silently (issue 14): on
// a file:// hub (flock), an http hub with WebDAV PUT (nginx) and an oci:// hub
// (docker-registry), two real `kernels publish` processes publish two versions of one repo
// at the same moment, each holding its merge for 4 s (a test-build pause): without the
// hub's publish lock both would merge into the same old index and the later write would
// drop the other's release. Both releases must be in the verified index, and one of the
// two must have waited for the other. And a writer that ignores the lock (this test, by
// hand) is detected: the publish merges again from what it finds.
#include <doctest/doctest.h>

#include <ctime>
#include <thread>

#include "../servers/nginx_fixture.hpp"
#include "../servers/registry_fixture.hpp"
#include "../servers/server_util.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "workspace.hpp"

using kh::test::CommandResult;
using kh::test::run_command;
using kh::test::Workspace;
namespace reg = kh::registry;

namespace {

const char* kRepo = "race-org/race-kernel";

// A hub to race on: its URL, the environment the publishers need, and a way to read it.
struct RaceHub {
  std::string url;
  std::string env;  // "NAME=value ..." for the CLI
  reg::HubAccess access;
};

// Packs version v of kRepo (a fake library of its own bytes) into ws.root/dist-<v>.
std::string pack(const Workspace& ws, const std::string& v) {
  const std::string dir = (ws.root / ("dist-" + v)).string();
  kh::test::write_text(ws.root / ("build-" + v + "/libkh_race.so"), "race library " + v);
  reg::PackageManifest m;
  m.name = kRepo;
  m.version = v;
  m.variant = "cpu-x86_64-abi1-x86_64-linux";
  m.abi = "1.0";
  m.ops = {{"race_op", "race_op(Tensor(a!) out, Tensor x) -> ()"}};
  reg::pack_package((ws.root / ("build-" + v + "/libkh_race.so")).string(), m, dir);
  return dir;
}

std::string kernels(const Workspace& ws, const RaceHub& hub, const std::string& args, const std::string& extra_env = "") {
  return "KH_CACHE='" + ws.cache.string() + "' " + hub.env + " " + extra_env + " '" KH_KERNELS_EXE "' " + args;
}

// Writes root 1 to the hub with `kernels trust init`, and pins it in the workspace's cache.
void init_trust(const Workspace& ws, const RaceHub& hub) {
  const std::string keys = (ws.root / "keys").string();
  REQUIRE(run_command("'" KH_KERNELS_EXE "' keys generate '" + keys + "'").exit_code == 0);
  const CommandResult init =
      run_command(kernels(ws, hub, "trust init --hub " + hub.url + " --key " + keys + "/kh.pub --sign " + keys + "/kh.key"));
  REQUIRE_MESSAGE(init.exit_code == 0, init.output);
  auto reader = reg::open_hub(hub.url, hub.access);
  const std::string root = reader->fetch_metadata("root/1.root.json", 1 << 20);
  kh::test::write_text(ws.root / "1.root.json", root);
  const CommandResult pin = run_command(kernels(ws, hub, "trust '" + (ws.root / "1.root.json").string() + "' --hub " + hub.url));
  REQUIRE_MESSAGE(pin.exit_code == 0, pin.output);
}

reg::RepoIndex client_index(const Workspace& ws, const RaceHub& hub, const std::string& cache_name) {
  auto reader = reg::open_hub(hub.url, hub.access);
  reg::Cache cache((ws.root / cache_name).string());
  reg::TrustStore(cache, reader->id()).pin_root(kh::test::read_text(ws.root / "1.root.json"), "1.root.json");
  return reg::fetch_verified_index(*reader, cache, kRepo);
}

// Two publishers at once, each pausing 4 s inside its merge; both releases must land. The pause
// outlasts the file hub's lock, which announces a wait only after 1 s, by the start-up gap between
// the two processes on a loaded machine: at 1.5 s the fresh-machine check (a cold build beside
// it) once saw the second reach the lock too late to announce its wait.
void race(const Workspace& ws, const RaceHub& hub) {
  init_trust(ws, hub);
  const std::string a = pack(ws, "1.0.0"), b = pack(ws, "1.1.0");
  const std::string key = (ws.root / "keys/kh.key").string();
  const std::string pause = "KH_TEST_PAUSE_AT=publish-merged KH_TEST_PAUSE_MS=4000 KH_PROGRESS=1";
  CommandResult ra, rb;
  std::thread ta([&] { ra = run_command(kernels(ws, hub, "publish '" + a + "' --hub " + hub.url + " --key " + key, pause)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::thread tb([&] { rb = run_command(kernels(ws, hub, "publish '" + b + "' --hub " + hub.url + " --key " + key, pause)); });
  ta.join();
  tb.join();
  CAPTURE(ra.output);
  CAPTURE(rb.output);
  REQUIRE(ra.exit_code == 0);
  REQUIRE(rb.exit_code == 0);
  const reg::RepoIndex index = client_index(ws, hub, "client-cache");
  REQUIRE(index.releases.size() == 2);  // neither release was lost
  CHECK(reg::to_string(index.releases[0].version) == "1.0.0");
  CHECK(reg::to_string(index.releases[1].version) == "1.1.0");
  CHECK(index.version == 2);            // two merges, one after the other
#ifdef KH_TEST_HOOKS
  // They overlapped: one waited for the other's lock (the flock's or the lease's line).
  const std::string both = ra.output + rb.output;
  CHECK((both.find("waiting for the publish lease") != std::string::npos ||
         both.find("waiting for the lock") != std::string::npos));
#endif
}

}  // namespace

TEST_CASE("two publishers racing on a file:// hub: both releases land") {
  Workspace ws("race-file");
  RaceHub hub{ws.hub_url(), "", {}};
  race(ws, hub);
}

TEST_CASE("two publishers racing on an http hub with WebDAV PUT: both releases land") {
  Workspace ws("race-http");
  const std::string www = (ws.root / "www").string();
  reg::make_directories(www + "/hub");
  reg::make_directories((ws.root / "nginx").string());
  kh_test::NginxServer::Config c;
  c.root = www;
  c.extra_http = "location /hub/ {\n    dav_methods PUT DELETE;\n    create_full_put_path on;\n"
                 "    dav_access user:rw group:r all:r;\n    client_max_body_size 0;\n  }\n";
  kh_test::NginxServer nginx((ws.root / "nginx").string(), c);
  RaceHub hub{nginx.http_url("/hub"), "", {}};
  race(ws, hub);
}

TEST_CASE("two publishers racing on an oci:// hub: both releases land") {
  Workspace ws("race-oci");
  reg::make_directories((ws.root / "registry").string());
  kh_test::RegistryServer registry((ws.root / "registry").string(), {});
  RaceHub hub{registry.hub_url("race/hub"),
              "KH_CA_BUNDLE='" + registry.ca_file() + "' KH_REGISTRY_AUTH=publisher:pa55word", {}};
  hub.access.http.ca_bundle = registry.ca_file();
  hub.access.registry.user = "publisher";
  hub.access.registry.password = "pa55word";
  race(ws, hub);
}

#ifdef KH_TEST_HOOKS
TEST_CASE("a writer that ignores the lock is detected: the publish merges again from what it finds") {
  Workspace ws("race-ignored");
  RaceHub hub{ws.hub_url(), "", {}};
  init_trust(ws, hub);
  const std::string key = (ws.root / "keys/kh.key").string();
  REQUIRE(run_command(kernels(ws, hub, "publish '" + pack(ws, "1.0.0") + "' --hub " + hub.url + " --key " + key)).exit_code == 0);
  // While the publisher of 1.1.0 holds its merge, another writer (this test, not taking
  // the lock) puts 1.2.0 into the index and signs it.
  const std::string v12 = pack(ws, "1.2.0");
  CommandResult r;
  std::thread t([&] {
    r = run_command(kernels(ws, hub, "publish '" + pack(ws, "1.1.0") + "' --hub " + hub.url + " --key " + key,
                            "KH_TEST_PAUSE_AT=publish-merged KH_TEST_PAUSE_MS=2000"));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  {
    // The lock-ignoring writer: publish() on a writer whose lock is a no-op.
    struct NoLock final : reg::HubWriter {
      std::unique_ptr<reg::HubWriter> inner;
      explicit NoLock(std::unique_ptr<reg::HubWriter> w) : inner(std::move(w)) {}
      const std::string& url() const override { return inner->url(); }
      reg::Hub& reader() override { return inner->reader(); }
      bool is_local() const override { return true; }
      bool has_blob(const std::string& s, uint64_t n) override { return inner->has_blob(s, n); }
      void put_blob(const std::string& s, uint64_t n, const std::string& p) override { inner->put_blob(s, n, p); }
      void put_metadata(const std::string& rel, const std::string& b) override { inner->put_metadata(rel, b); }
      void remove_metadata(const std::string& rel) override { inner->remove_metadata(rel); }
      std::unique_ptr<reg::PublishLock> lock_publishers(const std::string&) override {
        struct None final : reg::PublishLock {
          void check_held() override {}
        };
        return std::make_unique<None>();
      }
    } rogue(reg::open_hub_writer(hub.url));
    reg::PublishOptions o;
    o.signing_keys = {reg::read_secret_key_file(key)};
    reg::publish(v12, rogue, o);
  }
  t.join();
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("changed on") != std::string::npos);  // detected, merged again
  const reg::RepoIndex index = client_index(ws, hub, "client-cache");
  CHECK(index.releases.size() == 3);  // 1.0.0, 1.1.0 and the rogue's 1.2.0: nothing lost
}
#endif
