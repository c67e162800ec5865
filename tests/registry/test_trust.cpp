// Roots of trust: parsing, self-signatures, pinning, and rotation through a file hub
// (1-of-1 -> 2-of-3 accepted; rotations signed by too few old or new keys refused).
#include <doctest/doctest.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "kh/registry/cache.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/trust.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::expect_status;
using kh_test::TempDir;
using json = nlohmann::json;

namespace {

int64_t in_days(int d) { return static_cast<int64_t>(std::time(nullptr)) + int64_t{d} * 86400; }

RootSpec spec_of(const std::vector<minisign::SecretKey>& root_keys, uint32_t threshold, int days = 365) {
  RootSpec s;
  for (const auto& k : root_keys) s.root_keys.push_back(k.public_key());
  s.root_threshold = threshold;
  s.index_keys = s.root_keys;
  s.index_threshold = 1;
  s.expires_unix = in_days(days);
  return s;
}

// Re-signs a root document after editing its "signed" part.
std::string edited(const std::string& root_text, const std::function<void(json&)>& edit,
                   const std::vector<minisign::SecretKey>& signers) {
  json doc = json::parse(root_text);
  edit(doc["signed"]);
  const std::string bytes = doc["signed"].dump();
  doc["signatures"] = json::array();
  for (const auto& k : signers)
    doc["signatures"].push_back({{"keyid", k.public_key().key_id_hex()}, {"sig", minisign::sign(k, bytes, "t")}});
  return doc.dump(2);
}

}  // namespace

TEST_CASE("a root is made, parsed and verified; its canonical bytes are what was signed") {
  const auto a = minisign::generate_key();
  const std::string text = make_root(spec_of({a}, 1), {a});
  RootMetadata root = parse_root(text, "root/1.root.json");
  CHECK(root.version == 1);
  CHECK(root.keys.count(a.public_key().key_id_hex()) == 1);
  CHECK(root.signed_bytes == json::parse(text)["signed"].dump());
  CHECK(root.signed_bytes.find(' ') == std::string::npos);
  verify_root_self_signed(root, "root/1.root.json");
  CHECK(root_signed_bytes(text, "r") == root.signed_bytes);

  SUBCASE("a signature does not survive an edit of the signed part") {
    json doc = json::parse(text);
    doc["signed"]["roles"]["index"]["threshold"] = 1u;
    doc["signed"]["expires"] = "2099-01-01T00:00:00Z";
    RootMetadata forged = parse_root(doc.dump(), "forged");
    std::string m = expect_status([&] { verify_root_self_signed(forged, "forged"); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("0 valid signature(s)") != std::string::npos);
  }
  SUBCASE("a signature by a key outside the root role does not count") {
    const auto stranger = minisign::generate_key();
    RootMetadata r = parse_root(edited(text, [](json&) {}, {stranger}), "r");
    std::string m = expect_status([&] { verify_root_self_signed(r, "r"); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("not a key of the root role") != std::string::npos);
  }
  SUBCASE("one key signing twice counts once") {
    auto b = minisign::generate_key();
    RootMetadata r = parse_root(edited(make_root(spec_of({a, b}, 2), {a}), [](json&) {}, {a, a}), "r");
    expect_status([&] { verify_root_self_signed(r, "r"); }, KH_ERROR_SIGNATURE);
  }
}

TEST_CASE("malformed roots are refused naming the field") {
  const auto a = minisign::generate_key();
  const auto b = minisign::generate_key();
  const std::string text = make_root(spec_of({a}, 1), {a});
  const std::string id = a.public_key().key_id_hex();
  struct Case {
    const char* name;
    std::function<void(json&)> edit;
    const char* needle;
  };
  const Case cases[] = {
      {"type", [](json& s) { s["type"] = "index"; }, "signed.type"},
      {"version 0", [](json& s) { s["version"] = 0; }, "signed.version"},
      {"version negative", [](json& s) { s["version"] = -1; }, "signed.version"},
      {"expires", [](json& s) { s["expires"] = "tomorrow"; }, "signed.expires"},
      {"threshold 0", [](json& s) { s["roles"]["root"]["threshold"] = 0; }, "threshold"},
      {"threshold above keys", [](json& s) { s["roles"]["root"]["threshold"] = 2; }, "threshold"},
      {"unknown key in role", [](json& s) { s["roles"]["index"]["keyids"].push_back("0000000000000000"); }, "not in signed.keys"},
      {"duplicate key in role", [&](json& s) { s["roles"]["root"]["keyids"].push_back(id); }, "twice"},
      {"key id differs from the key's", [&](json& s) {
         s["keys"]["0123456789ABCDEF"] = s["keys"][id];
       }, "not 0123456789ABCDEF"},
      {"lowercase key id", [&](json& s) { s["keys"]["abcdefabcdefabcd"] = {{"public_key", b.public_key().base64()}}; }, "uppercase"},
      {"bad public key", [&](json& s) { s["keys"][id]["public_key"] = "RWQ!"; }, "public_key"},
      {"no index role", [](json& s) { s["roles"].erase("index"); }, "signed.roles.index"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    json doc = json::parse(text);
    c.edit(doc["signed"]);
    std::string m = expect_status([&] { parse_root(doc.dump(), "root/1.root.json"); }, KH_ERROR_BAD_METADATA);
    CHECK(m.find("root/1.root.json") != std::string::npos);
    CHECK_MESSAGE(m.find(c.needle) != std::string::npos, m);
  }
  expect_status([] { parse_root("{", "r"); }, KH_ERROR_BAD_METADATA);
  expect_status([] { parse_root("[]", "r"); }, KH_ERROR_BAD_METADATA);
  expect_status([&] { parse_root(json::parse(text)["signed"].dump(), "r"); }, KH_ERROR_BAD_METADATA);
}

TEST_CASE("pinning: verified before it is stored; a different pin needs --replace") {
  TempDir d;
  Cache cache(d / "cache");
  TrustStore store(cache, "file-0123456789abcdef");
  const auto a = minisign::generate_key();
  const auto b = minisign::generate_key();
  CHECK_FALSE(store.trusted_root());
  const std::string r1 = make_root(spec_of({a}, 1), {a});
  // Not self-signed: refused, nothing stored.
  expect_status([&] { store.pin_root(make_root(spec_of({a}, 1), {b}), "bad.json"); }, KH_ERROR_SIGNATURE);
  CHECK_FALSE(store.trusted_root());
  store.pin_root(r1, "root.json");
  CHECK(store.trusted_root()->version == 1);
  store.pin_root(r1, "root.json");  // the same again: fine
  const std::string other = make_root(spec_of({b}, 1), {b});
  expect_status([&] { store.pin_root(other, "other.json"); }, KH_ERROR_INVALID_ARGUMENT);
  store.record_index_version("o/n", 5);
  store.pin_root(other, "other.json", /*replace=*/true);
  CHECK(store.trusted_root()->keys.count(b.public_key().key_id_hex()) == 1);
  CHECK(store.highest_index_version("o/n") == 0);
  // A stored root edited on disk is caught on the next read.
  kh_test::write_text(store.dir() + "/root/1.root.json", r1.substr(0, r1.size() / 2));
  expect_status([&] { store.trusted_root(); }, KH_ERROR_BAD_METADATA);
}

TEST_CASE("root rotation through a file hub: 1-of-1 -> 2-of-3, and too few signatures refused") {
  TempDir d;
  const std::string hub_dir = d / "hub";
  auto hub = open_hub("file://" + hub_dir);
  Cache cache(d / "cache");
  TrustStore store(cache, hub->id());
  const auto a = minisign::generate_key();
  const auto b = minisign::generate_key();
  const auto c = minisign::generate_key();
  const auto e = minisign::generate_key();

  write_next_root_to_file_hub(hub_dir, spec_of({a}, 1), {a});
  store.pin_root(kh_test::read_text(hub_dir + "/root/1.root.json"), "root/1.root.json");
  CHECK(store.update_root(*hub).version == 1);

  // 2-of-3 {b, c, e}: needs a (1 of version 1's) and 2 of its own.
  expect_status([&] { write_next_root_to_file_hub(hub_dir, spec_of({b, c, e}, 2), {b, c}); }, KH_ERROR_SIGNATURE);
  expect_status([&] { write_next_root_to_file_hub(hub_dir, spec_of({b, c, e}, 2), {a, b}); }, KH_ERROR_SIGNATURE);
  CHECK_FALSE(path_exists(hub_dir + "/root/2.root.json"));
  write_next_root_to_file_hub(hub_dir, spec_of({b, c, e}, 2), {a, b, e});
  RootMetadata v2 = store.update_root(*hub);
  CHECK(v2.version == 2);
  CHECK(v2.root_role.threshold == 2);
  CHECK(v2.root_role.keyids.size() == 3);

  SUBCASE("version 3 signed by one of version 2's keys is refused by the client") {
    // Hand-made, since the publisher side refuses to write it.
    const std::string r3 = make_root([&] {
      RootSpec s = spec_of({b}, 1);
      s.version = 3;
      return s;
    }(), {b});
    kh_test::write_text(hub_dir + "/root/3.root.json", r3);
    std::string m = expect_status([&] { store.update_root(*hub); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("root/3.root.json") != std::string::npos);
    CHECK(m.find("1 valid signature(s) by root keys, 2 needed") != std::string::npos);
    CHECK(store.trusted_root()->version == 2);  // nothing new trusted
  }
  SUBCASE("a root with the wrong version number is refused") {
    const std::string r4 = make_root([&] {
      RootSpec s = spec_of({b, c}, 1);
      s.version = 4;
      return s;
    }(), {b, c});
    kh_test::write_text(hub_dir + "/root/3.root.json", r4);
    expect_status([&] { store.update_root(*hub); }, KH_ERROR_BAD_METADATA);
  }
  SUBCASE("rotation back to 1-of-1 by two old keys and the new one") {
    write_next_root_to_file_hub(hub_dir, spec_of({a}, 1), {b, c, a});
    CHECK(store.update_root(*hub).version == 3);
  }
  SUBCASE("a client pinned at version 1 walks the chain to version 2") {
    Cache fresh(d / "cache2");
    TrustStore s2(fresh, hub->id());
    s2.pin_root(kh_test::read_text(hub_dir + "/root/1.root.json"), "root/1.root.json");
    CHECK(s2.update_root(*hub).version == 2);
  }
}
