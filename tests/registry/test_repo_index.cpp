// index.json: round trip, strict field checks naming the field, schema, resolution.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "kh/registry/repo_index.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using json = nlohmann::json;

namespace {

const std::string kShaA(64, 'a');
const std::string kShaB(64, 'b');

json valid_index() {
  json variant = {{"sha256", kShaA}, {"size", 12345}, {"abi", "1.0"}, {"glibc", "2.36"},
                  {"ops", json::array({{{"name", "rms_norm"}, {"schema", "rms_norm(Tensor(a!) out, Tensor x) -> ()"}}})}};
  json doc = {{"schema", 1},
              {"repo", "kernels-community/rms-norm"},
              {"version", 7},
              {"expires", "2027-01-01T00:00:00Z"},
              {"releases", json::object()}};
  for (const char* v : {"0.9.0", "1.0.0", "1.1.0", "1.2.0-rc.1", "2.0.0"}) {
    json rel = {{"yanked", false}, {"variants", {{"cpu-x86_64-abi1-x86_64-linux", variant}}}};
    doc["releases"][v] = rel;
  }
  doc["releases"]["1.1.0"]["variants"]["cuda13.0-sm90a-abi1-x86_64-linux"] = variant;
  doc["releases"]["1.1.0"]["variants"]["cuda13.0-sm90a-abi1-x86_64-linux"]["sha256"] = kShaB;
  doc["releases"]["2.0.0"]["yanked"] = true;
  return doc;
}

RepoIndex parse(const json& doc) { return parse_repo_index(doc.dump(), "test/index.json"); }

std::string bad_field(const json& doc) {
  std::string msg = kh_test::expect_status([&] { parse(doc); }, KH_ERROR_BAD_METADATA);
  CHECK(msg.find("test/index.json") != std::string::npos);
  return msg;
}

}  // namespace

TEST_CASE("a valid index parses and round-trips") {
  RepoIndex idx = parse(valid_index());
  CHECK(idx.schema == 1);
  CHECK(idx.repo == "kernels-community/rms-norm");
  CHECK(idx.version == 7);
  CHECK(idx.expires == "2027-01-01T00:00:00Z");
  CHECK(idx.expires_unix == 1798761600);
  REQUIRE(idx.releases.size() == 5);
  CHECK(to_string(idx.releases.front().version) == "0.9.0");  // sorted by precedence
  CHECK(to_string(idx.releases[2].version) == "1.1.0");
  CHECK(to_string(idx.releases[3].version) == "1.2.0-rc.1");
  CHECK(idx.releases.back().yanked);
  REQUIRE(idx.releases[2].variants.size() == 2);
  CHECK(idx.releases[2].variants[0].key == "cpu-x86_64-abi1-x86_64-linux");  // sorted by key
  CHECK(idx.releases[2].variants[1].sha256 == kShaB);
  CHECK(idx.releases[2].variants[0].size == 12345);
  CHECK(idx.releases[2].variants[0].ops.at(0).name == "rms_norm");
  CHECK(idx.releases[2].variants[0].glibc == "2.36");

  std::string text = serialize_repo_index(idx);
  RepoIndex again = parse_repo_index(text, "again");
  CHECK(serialize_repo_index(again) == text);
  CHECK(json::parse(text) == valid_index());
}

TEST_CASE("unknown keys are ignored for forward compatibility") {
  json doc = valid_index();
  doc["signed_by"] = "someone";
  doc["releases"]["1.0.0"]["notes"] = "hello";
  doc["releases"]["1.0.0"]["variants"]["cpu-x86_64-abi1-x86_64-linux"]["built_by"] = "ci";
  CHECK(parse(doc).releases.size() == 5);
}

TEST_CASE("the glibc floor is optional (entries published before it existed) and kept as written") {
  json doc = valid_index();
  doc["releases"]["1.0.0"]["variants"]["cpu-x86_64-abi1-x86_64-linux"].erase("glibc");
  doc["releases"]["0.9.0"]["variants"]["cpu-x86_64-abi1-x86_64-linux"]["glibc"] = "2.2.5";
  RepoIndex idx = parse(doc);
  CHECK(idx.releases[0].variants[0].glibc == "2.2.5");
  CHECK(idx.releases[1].variants[0].glibc.empty());
  // Written back only where recorded: an old entry is not given a floor it never had.
  CHECK(json::parse(serialize_repo_index(idx)) == doc);

  std::string msg = bad_field([] {
    json d = valid_index();
    d["releases"]["1.0.0"]["variants"]["cpu-x86_64-abi1-x86_64-linux"]["glibc"] = "2.36-r1";
    return d;
  }());
  CHECK(msg.find("'2.36-r1' is not a glibc version like \"2.36\"") != std::string::npos);
}

TEST_CASE("glibc versions compare numerically") {
  for (const char* ok : {"2.36", "2.2.5", "2.9", "10.0"}) CHECK(is_glibc_version(ok));
  for (const char* bad : {"", "2", "2.", ".36", "2..36", "2.36.", "2.36.1.1", "v2.36", "2.36a", "2.123456"})
    CHECK_FALSE(is_glibc_version(bad));
  CHECK(compare_glibc_versions("2.9", "2.36") < 0);
  CHECK(compare_glibc_versions("2.40", "2.36") > 0);
  CHECK(compare_glibc_versions("2.36", "2.36") == 0);
  CHECK(compare_glibc_versions("2.36.0", "2.36") == 0);
  CHECK(compare_glibc_versions("2.2.5", "2.3") < 0);
  CHECK(compare_glibc_versions("2.36.1", "2.36") > 0);
}

TEST_CASE("an unknown schema says which schema this kh reads and to upgrade") {
  json doc = valid_index();
  doc["schema"] = 2;
  std::string msg = bad_field(doc);
  CHECK(msg.find("schema 2") != std::string::npos);
  CHECK(msg.find("schema 1") != std::string::npos);
  CHECK(msg.find("upgrade kh") != std::string::npos);
}

TEST_CASE("each missing, mistyped or malformed field names the field") {
  const std::string var = "releases.\"1.0.0\".variants.\"cpu-x86_64-abi1-x86_64-linux\"";
  struct Case {
    std::string pointer;  // JSON pointer of what is changed
    json value;           // replacement; null with erase=true removes it
    bool erase;
    std::string field;
  };
  const std::string vp = "/releases/1.0.0/variants/cpu-x86_64-abi1-x86_64-linux";
  std::vector<Case> cases = {
      {"/schema", nullptr, true, "schema"},
      {"/schema", "1", false, "schema"},
      {"/repo", nullptr, true, "repo"},
      {"/repo", 5, false, "repo"},
      {"/repo", "no-slash", false, "repo"},
      {"/repo", "Org/name", false, "repo"},
      {"/version", nullptr, true, "version"},
      {"/version", -1, false, "version"},
      {"/version", 1.5, false, "version"},
      {"/version", "7", false, "version"},
      {"/expires", nullptr, true, "expires"},
      {"/expires", "2027-01-01", false, "expires"},
      {"/expires", "2027-02-30T00:00:00Z", false, "expires"},
      {"/releases", nullptr, true, "releases"},
      {"/releases", json::array(), false, "releases"},
      {"/releases/1.0.0/yanked", "no", false, "releases.\"1.0.0\".yanked"},
      {"/releases/1.0.0/variants", nullptr, true, "releases.\"1.0.0\".variants"},
      {"/releases/1.0.0", 3, false, "releases.\"1.0.0\""},
      {vp + "/sha256", nullptr, true, var + ".sha256"},
      {vp + "/sha256", std::string(64, 'A'), false, var + ".sha256"},
      {vp + "/sha256", std::string(63, 'a'), false, var + ".sha256"},
      {vp + "/size", nullptr, true, var + ".size"},
      {vp + "/size", "12", false, var + ".size"},
      {vp + "/size", -12, false, var + ".size"},
      {vp + "/abi", nullptr, true, var + ".abi"},
      {vp + "/abi", "one", false, var + ".abi"},
      {vp + "/glibc", 2.36, false, var + ".glibc"},
      {vp + "/glibc", "", false, var + ".glibc"},
      {vp + "/glibc", "2", false, var + ".glibc"},
      {vp + "/glibc", "2.", false, var + ".glibc"},
      {vp + "/glibc", "GLIBC_2.36", false, var + ".glibc"},
      {vp + "/glibc", "2.36.0.1", false, var + ".glibc"},
      {vp + "/glibc", "2.x", false, var + ".glibc"},
      {vp + "/ops", nullptr, true, var + ".ops"},
      {vp + "/ops", json::object(), false, var + ".ops"},
      {vp + "/ops/0/name", nullptr, true, var + ".ops[0].name"},
      {vp + "/ops/0/schema", 1, false, var + ".ops[0].schema"},
      {vp + "/ops/0", "rms_norm", false, var + ".ops[0]"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.pointer);
    CAPTURE(c.field);
    json doc = valid_index();
    json::json_pointer ptr(c.pointer);
    if (c.erase)
      doc[ptr.parent_pointer()].erase(ptr.back());
    else
      doc[ptr] = c.value;
    std::string msg = bad_field(doc);
    CHECK_MESSAGE(msg.find("field '" + c.field + "'") != std::string::npos, msg);
  }
}

TEST_CASE("bad keys: release versions and variant keys") {
  json doc = valid_index();
  doc["releases"]["1.0"] = doc["releases"]["1.0.0"];
  CHECK(bad_field(doc).find("releases.\"1.0\"") != std::string::npos);

  for (const char* key : {"", "CPU", "cpu x86", "cpu/x86"}) {
    CAPTURE(key);
    json d = valid_index();
    d["releases"]["1.0.0"]["variants"][key] = d["releases"]["1.0.0"]["variants"]["cpu-x86_64-abi1-x86_64-linux"];
    bad_field(d);
  }
  json dup = valid_index();
  dup["releases"]["1.0.0+build"] = dup["releases"]["1.0.0"];
  bad_field(dup);
}

TEST_CASE("not JSON, or not an object") {
  bad_field(json::array());
  kh_test::expect_status([] { parse_repo_index("{\"schema\": 1,", "x"); }, KH_ERROR_BAD_METADATA);
  kh_test::expect_status([] { parse_repo_index("", "x"); }, KH_ERROR_BAD_METADATA);
}

TEST_CASE("RFC 3339 UTC round trip") {
  int64_t t = 0;
  CHECK(parse_rfc3339_utc("1970-01-01T00:00:00Z", &t));
  CHECK(t == 0);
  CHECK(parse_rfc3339_utc("2000-02-29T12:34:56Z", &t));
  CHECK(t == 951827696);
  CHECK(format_rfc3339_utc(951827696) == "2000-02-29T12:34:56Z");
  for (int64_t x : {int64_t{0}, int64_t{1798761600}, int64_t{4102444799}, int64_t{-86401}})
    CHECK(parse_rfc3339_utc(format_rfc3339_utc(x), &t) ? t == x : x < 0);
  for (const char* s : {"1900-02-29T00:00:00Z", "2027-13-01T00:00:00Z", "2027-01-01T24:00:00Z",
                        "2027-01-01T00:00:00+01:00", "2027-01-01 00:00:00Z", "2027-1-01T00:00:00Z"})
    CHECK_FALSE(parse_rfc3339_utc(s, &t));
}

TEST_CASE("resolve_release") {
  RepoIndex idx = parse(valid_index());
  auto resolved = [&](const char* req) { return to_string(resolve_release(idx, parse_version_request(req)).version); };
  CHECK(resolved("latest") == "1.1.0");  // 2.0.0 is yanked, 1.2.0-rc.1 a prerelease
  CHECK(resolved("1") == "1.1.0");
  CHECK(resolved("1.0") == "1.0.0");
  CHECK(resolved("0") == "0.9.0");
  CHECK(resolved("^1.0.0") == "1.1.0");
  CHECK(resolved("~1.0.0") == "1.0.0");
  CHECK(resolved("=2.0.0") == "2.0.0");     // yanked, but pinned exactly
  CHECK(resolved("2.0.0") == "2.0.0");
  CHECK(resolved("1.2.0-rc.1") == "1.2.0-rc.1");
  CHECK(resolved("^1.2.0-rc.1") == "1.2.0-rc.1");
  CHECK(resolved(("sha256:" + kShaB).c_str()) == "1.1.0");
  CHECK(resolved(("sha256:" + kShaA).c_str()) == "2.0.0");  // the newest release holding it

  std::string msg = kh_test::expect_status([&] { resolve_release(idx, parse_version_request("2")); }, KH_ERROR_NOT_FOUND);
  CHECK(msg.find("kernels-community/rms-norm") != std::string::npos);
  CHECK(msg.find("'@2'") != std::string::npos);
  CHECK(msg.find("0.9.0, 1.0.0, 1.1.0, 1.2.0-rc.1, 2.0.0 (yanked)") != std::string::npos);
  CHECK(msg.find("@=2.0.0") != std::string::npos);  // says how to get the yanked one
  kh_test::expect_status([&] { resolve_release(idx, parse_version_request("3.0.0")); }, KH_ERROR_NOT_FOUND);
  kh_test::expect_status([&] { resolve_release(idx, parse_version_request("sha256:" + std::string(64, 'f'))); },
                         KH_ERROR_NOT_FOUND);
  RepoIndex empty;
  empty.repo = "o/n";
  CHECK(kh_test::expect_status([&] { resolve_release(empty, parse_version_request("")); }, KH_ERROR_NOT_FOUND)
            .find("no releases") != std::string::npos);
}

TEST_CASE("hub paths") {
  CHECK(repo_index_path("org/name") == "repos/org/name/index.json");
  CHECK(blob_path(kShaA) == "blobs/sha256/aa/" + kShaA);
}
