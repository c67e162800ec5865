// Signed indexes end to end on a file:// hub: publish signs, the client verifies, and every
// attack the trust layer exists for is refused: tampering, another repo's index, expiry,
// rollback, a substituted blob, an unsigned or unpinned hub, a damaged cache.
#include <doctest/doctest.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "kh/registry/cache.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::expect_status;
using kh_test::TempDir;

namespace {

const char* kRepo = "test-org/signed-kernel";
const char* kVariant = "cpu-x86_64-abi1-x86_64-linux";

struct World {
  TempDir d;
  std::string hub_dir = d / "hub";
  std::unique_ptr<Hub> hub = open_hub("file://" + hub_dir);
  Cache cache{d / "cache"};
  minisign::SecretKey key = minisign::generate_key();
  std::string index_file = hub_dir + "/" + repo_index_path(kRepo);

  // Root 1 = {key} for both roles, pinned by the client.
  void init_and_pin(int root_days = 365) {
    RootSpec s;
    s.root_keys = {key.public_key()};
    s.index_keys = {key.public_key()};
    s.expires_unix = static_cast<int64_t>(std::time(nullptr)) + int64_t{root_days} * 86400;
    write_next_root_to_file_hub(hub_dir, s, {key});
    TrustStore(cache, hub->id()).pin_root(kh_test::read_text(hub_dir + "/root/1.root.json"), "root/1.root.json");
  }
  void publish(const std::string& version, int days = 365, std::vector<minisign::SecretKey> keys = {}) {
    if (keys.empty()) keys = {key};
    make_directories(d / "build");
    kh_test::write_text(d / "build/libkh_fake.so", "library " + version, 0755);
    PackageManifest m;
    m.name = kRepo;
    m.version = version;
    m.variant = kVariant;
    m.abi = "1.0";
    m.ops = {{"fake_op", "fake_op(Tensor(a!) out, Tensor x) -> ()"}};
    remove_tree(d / "dist");
    pack_package(d / "build/libkh_fake.so", m, d / "dist");
    publish_to_file_hub(d / "dist", hub_dir, days, keys);
  }
  RepoIndex fetch(TrustOptions o = {}) { return fetch_verified_index(*hub, cache, kRepo, o); }
  std::optional<RepoIndex> cached(TrustOptions o = {}) {
    return load_verified_cached_index(cache, hub->id(), hub->url(), kRepo, o);
  }
};

}  // namespace

TEST_CASE("publish signs; the client verifies, stores and re-verifies offline") {
  World w;
  w.init_and_pin();
  w.publish("1.0.0");
  CHECK(path_exists(w.index_file + ".minisig"));
  CHECK_FALSE(path_exists(w.index_file + ".sigs"));
  RepoIndex index = w.fetch();
  CHECK(index.repo == kRepo);
  CHECK(index.version == 1);
  CHECK(TrustStore(w.cache, w.hub->id()).highest_index_version(kRepo) == 1);
  auto offline = w.cached();
  REQUIRE(offline);
  CHECK(offline->version == 1);

  SUBCASE("a tampered index on the hub is refused") {
    std::string text = kh_test::read_text(w.index_file);
    text.replace(text.find("\"size\": "), 8, "\"size\":  ");
    kh_test::write_text(w.index_file, text);
    std::string m = expect_status([&] { w.fetch(); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("index.json.minisig") != std::string::npos);
    CHECK(m.find("does not match the signed bytes") != std::string::npos);
  }
  SUBCASE("a tampered cached index is refused offline (verification is not skipped on read)") {
    const std::string path = w.cache.root() + "/hubs/" + w.hub->id() + "/" + repo_index_path(kRepo);
    std::string text = kh_test::read_text(path);
    text.replace(text.find("\"yanked\": false"), 15, "\"yanked\": true ");
    kh_test::write_text(path, text);
    expect_status([&] { w.cached(); }, KH_ERROR_SIGNATURE);
    ::unlink((path + ".minisig").c_str());
    kh_test::write_text(path, kh_test::read_text(w.index_file));
    std::string m = expect_status([&] { w.cached(); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("no cached signature") != std::string::npos);
  }
  SUBCASE("a missing signature is refused") {
    ::unlink((w.index_file + ".minisig").c_str());
    std::string m = expect_status([&] { w.fetch(); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("has no signature") != std::string::npos);
  }
  SUBCASE("a signature by a key the root does not name is refused") {
    const auto stranger = minisign::generate_key();
    kh_test::write_text(w.index_file + ".minisig",
                        minisign::sign(stranger, kh_test::read_text(w.index_file), "t"));
    std::string m = expect_status([&] { w.fetch(); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("not a key of the index role") != std::string::npos);
  }
  SUBCASE("another repo's signed index served in its place is refused") {
    World& x = w;
    make_directories(x.hub_dir + "/repos/test-org/other");
    kh_test::write_text(x.hub_dir + "/repos/test-org/other/index.json", kh_test::read_text(x.index_file));
    kh_test::write_text(x.hub_dir + "/repos/test-org/other/index.json.minisig", kh_test::read_text(x.index_file + ".minisig"));
    std::string m = expect_status([&] { fetch_verified_index(*x.hub, x.cache, "test-org/other", {}); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("another repo's index") != std::string::npos);
  }
  SUBCASE("a malformed signature file names the file") {
    kh_test::write_text(w.index_file + ".minisig", "untrusted comment: x\nRUQ!!!!\ntrusted comment: t\nAAAA\n");
    std::string m = expect_status([&] { w.fetch(); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("repos/test-org/signed-kernel/index.json.minisig") != std::string::npos);
    CHECK(m.find("not valid base64") != std::string::npos);
  }
}

TEST_CASE("rollback to a lower index version is refused") {
  World w;
  w.init_and_pin();
  w.publish("1.0.0");
  const std::string old_index = kh_test::read_text(w.index_file);
  const std::string old_sig = kh_test::read_text(w.index_file + ".minisig");
  CHECK(w.fetch().version == 1);
  w.publish("1.1.0");
  CHECK(w.fetch().version == 2);
  kh_test::write_text(w.index_file, old_index);
  kh_test::write_text(w.index_file + ".minisig", old_sig);
  std::string m = expect_status([&] { w.fetch(); }, KH_ERROR_ROLLBACK);
  CHECK(m.find("older than version 2") != std::string::npos);
  // The cache still holds version 2, and the rollback state was not lowered.
  CHECK(w.cached()->version == 2);
}

TEST_CASE("expired metadata: index and root") {
  World w;
  SUBCASE("an expired index") {
    w.init_and_pin();
    w.publish("1.0.0", /*days=*/1);
    TrustOptions later;
    later.now = static_cast<int64_t>(std::time(nullptr)) + 2 * 86400;
    std::string m = expect_status([&] { w.fetch(later); }, KH_ERROR_EXPIRED);
    CHECK(m.find("expired on") != std::string::npos);
    CHECK(m.find("ask its operator to republish") != std::string::npos);
    later.allow_expired = true;
    CHECK(w.fetch(later).version == 1);
    later.allow_expired = false;
    expect_status([&] { w.cached(later); }, KH_ERROR_EXPIRED);
  }
  SUBCASE("an expired newest root") {
    w.init_and_pin(/*root_days=*/1);
    w.publish("1.0.0");
    TrustOptions later;
    later.now = static_cast<int64_t>(std::time(nullptr)) + 2 * 86400;
    std::string m = expect_status([&] { w.fetch(later); }, KH_ERROR_EXPIRED);
    CHECK(m.find("root of trust") != std::string::npos);
  }
}

TEST_CASE("a substituted blob (the signed index names sha X, the hub serves Y) is refused") {
  World w;
  w.init_and_pin();
  w.publish("1.0.0");
  RepoIndex index = w.fetch();
  const Release& rel = index.releases.at(0);
  const VariantEntry& v = rel.variants.at(0);
  const std::string blob = w.hub_dir + "/" + blob_path(v.sha256);
  std::string bytes = kh_test::read_text(blob);
  bytes[bytes.size() / 2] ^= 1;  // same size, other bytes
  ::chmod(blob.c_str(), 0644);
  kh_test::write_text(blob, bytes);
  expect_status([&] { w.cache.ensure_package(*w.hub, kRepo, rel, v); }, KH_ERROR_VERIFICATION);
  CHECK_FALSE(w.cache.package_dir(v.sha256));
}

TEST_CASE("hubs without a pinned root: refused unless unsigned metadata is explicitly allowed") {
  World u;  // an unsigned hub: no root, published without a key
  make_directories(u.d / "build");
  kh_test::write_text(u.d / "build/libkh_fake.so", "x", 0755);
  PackageManifest m;
  m.name = kRepo;
  m.version = "1.0.0";
  m.variant = kVariant;
  m.abi = "1.0";
  m.ops = {{"fake_op", "fake_op(Tensor(a!) out, Tensor x) -> ()"}};
  pack_package(u.d / "build/libkh_fake.so", m, u.d / "dist");
  publish_to_file_hub(u.d / "dist", u.hub_dir);
  std::string msg = expect_status([&] { u.fetch(); }, KH_ERROR_SIGNATURE);
  CHECK(msg.find("kernels trust") != std::string::npos);
  CHECK(msg.find("KH_ALLOW_UNSIGNED=1") != std::string::npos);
  TrustOptions allow;
  allow.allow_unsigned = true;
  CHECK(u.fetch(allow).version == 1);
  CHECK(u.cached(allow)->version == 1);
  expect_status([&] { u.cached(); }, KH_ERROR_SIGNATURE);

  SUBCASE("once a root is pinned, allow_unsigned no longer lets unsigned metadata in") {
    RootSpec s;
    s.root_keys = s.index_keys = {u.key.public_key()};
    s.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
    write_next_root_to_file_hub(u.hub_dir, s, {u.key});
    TrustStore(u.cache, u.hub->id()).pin_root(kh_test::read_text(u.hub_dir + "/root/1.root.json"), "r");
    expect_status([&] { u.fetch(allow); }, KH_ERROR_SIGNATURE);
    // The cached unsigned index is no longer accepted either.
    expect_status([&] { u.cached(allow); }, KH_ERROR_SIGNATURE);
    // Republishing with the key signs the unchanged index as it is.
    publish_to_file_hub(u.d / "dist", u.hub_dir, 365, {u.key});
    CHECK(u.fetch().version == 1);
  }
}

TEST_CASE("publishing to a hub with a root refuses missing or foreign keys before touching it") {
  World w;
  w.init_and_pin();
  w.publish("1.0.0");
  const std::string before = kh_test::read_text(w.index_file);
  const auto stranger = minisign::generate_key();
  std::string m = expect_status([&] { w.publish("1.1.0", 365, {stranger}); }, KH_ERROR_SIGNATURE);
  CHECK(m.find("not an index key") != std::string::npos);
  CHECK(kh_test::read_text(w.index_file) == before);
  remove_tree(w.d / "dist");
  make_directories(w.d / "dist");
  PackageManifest pm;
  m = expect_status(
      [&] {
        kh_test::write_text(w.d / "build/libkh_fake.so", "y", 0755);
        pm.name = kRepo;
        pm.version = "1.2.0";
        pm.variant = kVariant;
        pm.abi = "1.0";
        pack_package(w.d / "build/libkh_fake.so", pm, w.d / "dist");
        publish_to_file_hub(w.d / "dist", w.hub_dir, 365, {});
      },
      KH_ERROR_SIGNATURE);
  CHECK(m.find("--key") != std::string::npos);
  CHECK(kh_test::read_text(w.index_file) == before);
}

TEST_CASE("an index role of 2-of-2: index.json.sigs carries both signatures") {
  World w;
  const auto k2 = minisign::generate_key();
  RootSpec s;
  s.root_keys = {w.key.public_key()};
  s.index_keys = {w.key.public_key(), k2.public_key()};
  s.index_threshold = 2;
  s.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
  write_next_root_to_file_hub(w.hub_dir, s, {w.key});
  TrustStore(w.cache, w.hub->id()).pin_root(kh_test::read_text(w.hub_dir + "/root/1.root.json"), "r");
  expect_status([&] { w.publish("1.0.0", 365, {w.key}); }, KH_ERROR_SIGNATURE);  // one of two
  w.publish("1.0.0", 365, {w.key, k2});
  CHECK(path_exists(w.index_file + ".sigs"));
  CHECK(w.fetch().version == 1);
  CHECK(w.cached()->version == 1);
  // Drop one signature from the list: below the threshold.
  kh_test::write_text(w.index_file + ".sigs", "{\"signatures\": []}");
  std::string m = expect_status([&] { w.fetch(); }, KH_ERROR_SIGNATURE);
  CHECK(m.find("1 valid signature(s) by index keys, 2 needed") != std::string::npos);
}

TEST_CASE("the index signature written by publish verifies with the stock minisign tool") {
  if (std::system("command -v minisign >/dev/null 2>&1") != 0) {
    MESSAGE("minisign is not installed; skipping");
    return;
  }
  World w;
  w.init_and_pin();
  w.publish("1.0.0");
  kh_test::write_text(w.d / "kh.pub", w.key.public_key().file_text());
  CHECK(std::system(("minisign -Vm " + w.index_file + " -p " + w.d / "kh.pub" + " >/dev/null 2>&1").c_str()) == 0);
}

namespace {
// Sets the index's "version" on the hub to v and signs it again with `signer`.
void set_index_version(World& w, uint64_t v, const minisign::SecretKey& signer) {
  std::string text = kh_test::read_text(w.index_file);
  const size_t at = text.find("\"version\":");
  REQUIRE(at != std::string::npos);
  const size_t digits = text.find_first_of("0123456789", at);
  const size_t end = text.find_first_not_of("0123456789", digits);
  text.replace(digits, end - digits, std::to_string(v));
  kh_test::write_text(w.index_file, text);
  sign_index_in_file_hub(w.hub_dir, kRepo, {signer});
}
}  // namespace

TEST_CASE("a misused index key cannot pin clients forever (issue 16, item 6)") {
  World w;
  w.init_and_pin();
  w.publish("1.0.0");
  CHECK(w.fetch().version == 1);
  TrustStore store(w.cache, w.hub->id());

  // 2^64 - 1, validly signed: refused, and the rollback state does not move.
  set_index_version(w, UINT64_MAX, w.key);
  std::string m = expect_status([&] { w.fetch(); }, KH_ERROR_BAD_METADATA);
  CHECK_MESSAGE(m.find("above the highest version kh accepts (9007199254740991") != std::string::npos, m);
  CHECK(store.highest_index_version(kRepo) == 1);

  // The top of the accepted range is accepted (the key is valid) ...
  set_index_version(w, kMaxMetadataVersion, w.key);
  CHECK(w.fetch().version == kMaxMetadataVersion);
  CHECK(store.highest_index_version(kRepo) == kMaxMetadataVersion);
  // ... but publishing on top of it refuses to wrap the counter, and writes nothing.
  const std::string before = kh_test::read_text(w.index_file);
  m = expect_status([&] { w.publish("1.1.0"); }, KH_ERROR_BAD_METADATA);
  CHECK_MESSAGE(m.find("cannot grow again") != std::string::npos, m);
  CHECK_MESSAGE(m.find("kernels trust rotate") != std::string::npos, m);
  CHECK(kh_test::read_text(w.index_file) == before);

  SUBCASE("a new root that keeps the index keys keeps the rollback state") {
    const auto root2 = minisign::generate_key();
    RootSpec s;
    s.root_keys = {root2.public_key()};
    s.index_keys = {w.key.public_key()};
    s.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
    write_next_root_to_file_hub(w.hub_dir, s, {w.key, root2});
    set_index_version(w, 2, w.key);
    m = expect_status([&] { w.fetch(); }, KH_ERROR_ROLLBACK);
    CHECK(store.highest_index_version(kRepo) == kMaxMetadataVersion);
  }
  SUBCASE("rotating the index keys resets the rollback state: the honest index is accepted again") {
    const auto index2 = minisign::generate_key();
    RootSpec s;
    s.root_keys = {w.key.public_key()};
    s.index_keys = {index2.public_key()};
    s.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
    write_next_root_to_file_hub(w.hub_dir, s, {w.key});
    set_index_version(w, 2, index2);
    CHECK(w.fetch().version == 2);  // was: "older than version 9007199254740991", forever
    CHECK(store.highest_index_version(kRepo) == 2);
    CHECK(w.cached()->version == 2);
    // Rollback protection holds again under the new keys.
    set_index_version(w, 1, index2);
    expect_status([&] { w.fetch(); }, KH_ERROR_ROLLBACK);
    // And the publisher can go on from the honest version.
    set_index_version(w, 2, index2);
    w.publish("1.1.0", 365, {index2});
    CHECK(w.fetch().version == 3);
  }
}

TEST_CASE("a root version above 2^53 - 1 is refused") {
  const auto k = minisign::generate_key();
  RootSpec s;
  s.version = kMaxMetadataVersion + 1;
  s.root_keys = {k.public_key()};
  s.index_keys = {k.public_key()};
  s.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
  expect_status([&] { make_root(s, {k}); }, KH_ERROR_BAD_METADATA);
  s.version = kMaxMetadataVersion;
  CHECK(parse_root(make_root(s, {k}), "r").version == kMaxMetadataVersion);
}
