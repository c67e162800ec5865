// `kernels mirror` end to end (issue 14, item 4): the reference package from a file:// hub
// to an oci:// registry (docker-registry), from there to an http hub (nginx with WebDAV),
// from there into one bundle file, and from the bundle to a file:// hub inside the "closed
// network", whose clients pin the original root and get the original bytes. Refusals: a
// tampered build, no root to verify against, a rollback, another root chain. A lockfile
// selects what is copied. Offline past the index's expiry works only with the flag that
// names the risk.
#include <doctest/doctest.h>

#include <ctime>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../servers/nginx_fixture.hpp"
#include "../servers/registry_fixture.hpp"
#include "kh/kh.h"
#include "kh/registry/fs.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/sha256.hpp"
#include "workspace.hpp"

using kh::test::CommandResult;
using kh::test::run_command;
using kh::test::Workspace;
namespace fs = std::filesystem;

namespace {

constexpr const char* kSpec = "kernels-community/rms-norm@1";

// The servers of a mirror chain: a registry and an http hub, with one CA bundle for both.
struct Servers {
  std::unique_ptr<kh_test::RegistryServer> registry;
  std::unique_ptr<kh_test::NginxServer> nginx;
  std::string env;  // for the CLI: both CAs, the registry's credentials
  explicit Servers(const Workspace& ws) {
    fs::create_directories(ws.root / "registry");
    registry = std::make_unique<kh_test::RegistryServer>((ws.root / "registry").string(), kh_test::RegistryServer::Config{});
    fs::create_directories(ws.root / "www/hub");
    fs::create_directories(ws.root / "nginx");
    kh_test::NginxServer::Config c;
    c.root = (ws.root / "www").string();
    c.extra_https = "location /hub/ {\n    dav_methods PUT DELETE;\n    create_full_put_path on;\n"
                    "    dav_access user:rw group:r all:r;\n    client_max_body_size 0;\n  }\n";
    nginx = std::make_unique<kh_test::NginxServer>((ws.root / "nginx").string(), c);
    const fs::path cas = ws.root / "cas.pem";
    kh::test::write_text(cas, kh::test::read_text(registry->ca_file()) + kh::test::read_text(nginx->ca_file()));
    env = "KH_CA_BUNDLE='" + cas.string() + "' KH_REGISTRY_AUTH=publisher:pa55word";
  }
};

CommandResult kernels(const Workspace& ws, const std::string& env, const std::string& args,
                      const std::string& cache = "") {
  return run_command("KH_CACHE='" + (cache.empty() ? ws.cache.string() : cache) + "' " + env + " '" KH_KERNELS_EXE "' " +
                     args);
}

std::string root1(const Workspace& ws) { return (ws.hub / "root/1.root.json").string(); }

// The CLI's environment ("NAME='value' NAME=value ...") set in this process, for a load.
void kh_test_env_for_load(const std::string& env) {
  std::istringstream in(env);
  for (std::string kv; in >> kv;) {
    const size_t eq = kv.find('=');
    std::string v = kv.substr(eq + 1);
    if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') v = v.substr(1, v.size() - 2);
    ::setenv(kv.substr(0, eq).c_str(), v.c_str(), 1);
  }
}

}  // namespace

TEST_CASE("mirror file -> oci -> http -> bundle -> file: the last hub's clients pin the original root") {
  Workspace ws("mirror-chain");
  ws.publish_reference();
  Servers s(ws);
  const std::string oci = s.registry->hub_url("mirror/kernels");
  const std::string http = s.nginx->https_url("/hub");
  const std::string bundle = (ws.root / "kernels.bundle").string();
  const std::string final_hub = "file://" + (ws.root / "closed-network-hub").string();
  const std::string trust = " --trust '" + root1(ws) + "'";

  // 1. From the file hub (its root pinned in the cache) to the registry.
  CommandResult m = kernels(ws, s.env, "mirror " + ws.hub_url() + " " + oci + " " + kSpec + " --all-targets");
  REQUIRE_MESSAGE(m.exit_code == 0, m.output);
  CHECK(m.output.find("1 new") != std::string::npos);
  // The registry is a hub like any other: info, and kh_load_kernel in this process.
  {
    const std::string oci_client = (ws.root / "oci-client").string();
    REQUIRE(kernels(ws, s.env, "trust '" + root1(ws) + "' --hub " + oci, oci_client).exit_code == 0);
    const CommandResult info = kernels(ws, s.env, "info kernels-community/rms-norm --hub " + oci, oci_client);
    REQUIRE_MESSAGE(info.exit_code == 0, info.output);
    CHECK(info.output.find("rms_norm(") != std::string::npos);
    kh_test_env_for_load(s.env);
    kh_load_options o{};
    o.struct_size = sizeof o;
    o.hub = oci.c_str();
    o.cache_dir = oci_client.c_str();
    kh_kernel* k = nullptr;
    const kh_status st = kh_load_kernel(kSpec, &o, &k);
    CHECK_MESSAGE(st == KH_OK, kh_last_error());
    if (k != nullptr) CHECK(std::string(kh_kernel_name(k)) == "kernels-community/rms-norm");
    kh_kernel_release(k);
    ::unsetenv("KH_CA_BUNDLE");  // the next tests' commands inherit this process's environment
    ::unsetenv("KH_REGISTRY_AUTH");
  }
  // 2. From the registry to the http hub (verified against the root given).
  m = kernels(ws, s.env, "mirror " + oci + " " + http + trust);
  REQUIRE_MESSAGE(m.exit_code == 0, m.output);
  // 3. From the http hub into one bundle file, the lockfile's way: what `kernels lock` pinned.
  const std::string lock = (ws.root / "kernels.lock").string();
  REQUIRE(kernels(ws, s.env, "lock " + std::string(kSpec) + " --hub " + ws.hub_url() + " --lockfile '" + lock + "'").exit_code == 0);
  m = kernels(ws, s.env, "mirror " + http + " --bundle '" + bundle + "' --lock '" + lock + "' --all-targets" + trust);
  REQUIRE_MESSAGE(m.exit_code == 0, m.output);
  REQUIRE(fs::is_regular_file(bundle));
  // 4. Inside the closed network: from the bundle to a file hub.
  m = kernels(ws, "", "mirror '" + bundle + "' " + final_hub + trust);
  REQUIRE_MESSAGE(m.exit_code == 0, m.output);

  // Nothing was signed again: the index, its signature and the build are the original bytes.
  const fs::path last = ws.root / "closed-network-hub";
  CHECK(kh::test::read_text(last / "repos/kernels-community/rms-norm/index.json") == kh::test::read_text(ws.index_path()));
  CHECK(kh::test::read_text(last / "repos/kernels-community/rms-norm/index.json.minisig") ==
        kh::test::read_text(ws.index_path().string() + ".minisig"));
  nlohmann::json original = ws.read_index();
  const std::string sha = Workspace::reference_variant(original)["sha256"];
  CHECK(kh::registry::sha256_file_hex((last / "blobs/sha256" / sha.substr(0, 2) / sha).string()) == sha);
  // A client of the last mirror pins the original root and gets the original build.
  const std::string client = (ws.root / "client-cache").string();
  REQUIRE(kernels(ws, "", "trust '" + root1(ws) + "' --hub " + final_hub, client).exit_code == 0);
  const CommandResult get = kernels(ws, "", "get " + std::string(kSpec) + " --hub " + final_hub + " --json", client);
  REQUIRE_MESSAGE(get.exit_code == 0, get.output);
  CHECK(nlohmann::json::parse(get.output)["packages"][0]["sha256"] == sha);
}

TEST_CASE("mirror refuses: a tampered build, no root to verify against, a rollback, another root chain") {
  Workspace ws("mirror-refusals");
  ws.publish_reference();
  const std::string dst = "file://" + (ws.root / "dst").string();
  const std::string trust = " --trust '" + root1(ws) + "'";

  SUBCASE("a build whose bytes differ from its signed digest: nothing of it reaches the mirror") {
    nlohmann::json original = ws.read_index();
    const std::string sha = Workspace::reference_variant(original)["sha256"];
    std::string blob = kh::test::read_text(ws.blob_path(sha));
    blob[blob.size() / 2] = static_cast<char>(blob[blob.size() / 2] ^ 1);
    fs::permissions(ws.blob_path(sha), fs::perms::owner_write, fs::perm_options::add);
    kh::test::write_text(ws.blob_path(sha), blob);
    const CommandResult m = kernels(ws, "", "mirror " + ws.hub_url() + " " + dst + " --all-targets");
    CHECK(m.exit_code != 0);
    CHECK_MESSAGE(m.output.find(sha) != std::string::npos, m.output);
    CHECK_FALSE(fs::exists(ws.root / "dst/repos"));
    CHECK_FALSE(fs::exists(ws.root / "dst/blobs"));
  }
  SUBCASE("no root pinned for the source and no --trust: refused, saying how") {
    const std::string other_cache = (ws.root / "empty-cache").string();
    const CommandResult m = kernels(ws, "", "mirror " + ws.hub_url() + " " + dst, other_cache);
    CHECK(m.exit_code != 0);
    CHECK_MESSAGE(m.output.find("--trust") != std::string::npos, m.output);
    CHECK_MESSAGE(m.output.find("kernels trust") != std::string::npos, m.output);
  }
  SUBCASE("a mirror never moves its clients back to an older index") {
    const std::string old_snapshot = "file://" + (ws.root / "snapshot").string();
    REQUIRE(kernels(ws, "", "mirror " + ws.hub_url() + " " + old_snapshot).exit_code == 0);
    // The source moves on: a new index version (re-signed as its operator would).
    nlohmann::json index = ws.read_index();
    index["version"] = index["version"].get<int>() + 1;
    ws.write_index(index);
    REQUIRE(kernels(ws, "", "mirror " + ws.hub_url() + " " + dst).exit_code == 0);
    const CommandResult back = kernels(ws, "", "mirror " + old_snapshot + " " + dst + trust);
    CHECK(back.exit_code != 0);
    CHECK_MESSAGE(back.output.find("never moves its clients back") != std::string::npos, back.output);
  }
  SUBCASE("a destination that trusts another root chain is refused before anything is written") {
    Workspace other("mirror-other-root");
    other.publish_reference();  // its own key and root 1
    const std::string other_hub = other.hub_url();
    const CommandResult m = kernels(ws, "", "mirror " + ws.hub_url() + " " + other_hub);
    CHECK(m.exit_code != 0);
    CHECK_MESSAGE(m.output.find("another root chain") != std::string::npos, m.output);
  }
}

TEST_CASE("a lockfile selects what is mirrored: only the pinned repo, only its pinned builds") {
  Workspace ws("mirror-lock");
  ws.publish_reference();
  // A second repo on the source hub, not in the lockfile.
  kh::test::write_text(ws.root / "other-build/libkh_other.so", "another library");
  kh::registry::PackageManifest m;
  m.name = "kernels-community/other";
  m.version = "1.0.0";
  m.variant = "cpu-x86_64-abi1-x86_64-linux";
  m.abi = "1.0";
  m.ops = {{"other_op", "other_op(Tensor(a!) out) -> ()"}};
  kh::registry::pack_package((ws.root / "other-build/libkh_other.so").string(), m, (ws.root / "other-dist").string());
  REQUIRE(ws.kernels("publish '" + (ws.root / "other-dist").string() + "' --hub " + ws.hub_url() + " --key '" +
                     (ws.root / "keys/kh.key").string() + "'")
              .exit_code == 0);
  const std::string lock = (ws.root / "kernels.lock").string();
  REQUIRE(ws.kernels("lock " + std::string(kSpec) + " --hub " + ws.hub_url() + " --lockfile '" + lock + "'").exit_code == 0);
  const std::string dst = (ws.root / "dst").string();
  const CommandResult r = kernels(ws, "", "mirror " + ws.hub_url() + " file://" + dst + " --lock '" + lock + "' --all-targets");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(fs::exists(dst + "/repos/kernels-community/rms-norm/index.json"));
  CHECK_FALSE(fs::exists(dst + "/repos/kernels-community/other"));
  const auto catalog = nlohmann::json::parse(kh::test::read_text(dst + "/catalog.json"));
  REQUIRE(catalog["repos"].size() == 1);
  CHECK(catalog["repos"][0]["repo"] == "kernels-community/rms-norm");
}

TEST_CASE("offline past the index's expiry: refused, naming the risk; used only with --allow-expired, with a warning") {
  Workspace ws("mirror-expired");
  ws.publish_reference();
  REQUIRE(ws.kernels("get " + std::string(kSpec) + " --hub " + ws.hub_url()).exit_code == 0);
  // The hub's index expires (a newer version, expired on arrival: as a stale air-gapped mirror).
  nlohmann::json index = ws.read_index();
  index["version"] = index["version"].get<int>() + 1;
  index["expires"] = "2020-01-01T00:00:00Z";
  ws.write_index(index);
  const std::string get = "get " + std::string(kSpec) + " --hub " + ws.hub_url();
  CommandResult r = ws.kernels(get);
  CHECK(r.exit_code != 0);
  CHECK_MESSAGE(r.output.find("frozen") != std::string::npos, r.output);
  CHECK(r.output.find("--allow-expired") != std::string::npos);
  r = ws.kernels(get + " --allow-expired");  // the user accepts the risk: cached as verified
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK_MESSAGE(r.output.find("warning") != std::string::npos, r.output);
  // Offline from now on, with the expired copy: refused without the flag, and said with it.
  r = ws.kernels(get + " --offline");
  CHECK(r.exit_code != 0);
  CHECK_MESSAGE(r.output.find("frozen") != std::string::npos, r.output);
  r = ws.kernels(get + " --offline --allow-expired");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK_MESSAGE(r.output.find("cannot be known") != std::string::npos, r.output);
}
