// Semantic versions: strict parsing, the semver 2.0 precedence table, every request kind.
#include <doctest/doctest.h>

#include <vector>

#include "kh/registry/semver.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using Kind = VersionRequest::Kind;

static Version V(const char* s) {
  auto v = parse_version(s);
  REQUIRE_MESSAGE(v.has_value(), s);
  return *v;
}

// One request, one version, whether the request accepts it.
struct Row {
  const char* request;
  const char* version;
  bool match;
};

template <size_t N>
void check_matches(const Row (&rows)[N]) {
  for (const Row& row : rows) {
    const std::string request = row.request, version = row.version;
    CAPTURE(request);
    CAPTURE(version);
    CHECK(parse_version_request(row.request).matches(V(row.version)) == row.match);
  }
}

TEST_CASE("parse_version accepts strict semver 2.0.0") {
  for (const char* s : {"0.0.0", "1.2.3", "10.20.30", "1.1.2-prerelease+meta", "1.0.0-alpha", "1.0.0-alpha.beta.1",
                        "1.0.0-0.3.7", "1.0.0-x.7.z.92", "1.0.0+20130313144700", "1.0.0-alpha+001",
                        "1.0.0-x-y-z.--", "18446744073709551615.0.0"}) {
    CAPTURE(s);
    auto v = parse_version(s);
    REQUIRE(v.has_value());
    CHECK(to_string(*v) == s);
  }
  Version v = V("1.2.3-rc.1+build.5");
  CHECK(v.major == 1);
  CHECK(v.minor == 2);
  CHECK(v.patch == 3);
  CHECK(v.prerelease == "rc.1");
  CHECK(v.build == "build.5");
}

TEST_CASE("parse_version rejects everything else") {
  for (const char* s : {"", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.03", "v1.2.3", "1.2.3-", "1.2.3+",
                        "1.2.3-01", "1.2.3-a..b", "1.2.3+a..b", "1.2.3-a_b", " 1.2.3", "1.2.3 ", "-1.2.3", "1.2.-3",
                        "18446744073709551616.0.0", "1.2.3-rc+", "a.b.c", "1.2.3-é"}) {
    CAPTURE(s);
    CHECK_FALSE(parse_version(s).has_value());
  }
}

TEST_CASE("precedence follows the semver 2.0.0 table") {
  // Each is lower than the next (semver.org section 11 and more).
  std::vector<const char*> order = {"0.9.9", "1.0.0-0", "1.0.0-1", "1.0.0-2", "1.0.0-10", "1.0.0-alpha",
                                    "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
                                    "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "1.10.0", "2.0.0"};
  for (size_t i = 0; i < order.size(); ++i)
    for (size_t j = 0; j < order.size(); ++j) {
      CAPTURE(order[i]);
      CAPTURE(order[j]);
      int c = compare_versions(V(order[i]), V(order[j]));
      CHECK((i < j ? c < 0 : (i > j ? c > 0 : c == 0)));
    }
  CHECK(compare_versions(V("1.0.0+a"), V("1.0.0+b")) == 0);
  CHECK(compare_versions(V("1.0.0-rc.1+x"), V("1.0.0-rc.1")) == 0);
  CHECK(compare_versions(V("1.0.0-99999999999999999999999"), V("1.0.0-100000000000000000000000")) < 0);
}

TEST_CASE("version requests: every kind parses") {
  SUBCASE("latest") {
    for (const char* s : {"", "latest"}) {
      VersionRequest r = parse_version_request(s);
      CHECK(r.kind == Kind::Latest);
      CHECK(r.text == "latest");
    }
  }
  SUBCASE("partial") {
    VersionRequest r = parse_version_request("1");
    CHECK(r.kind == Kind::Partial);
    CHECK(r.partial_parts == 1);
    CHECK(r.version.major == 1);
    r = parse_version_request("1.2");
    CHECK(r.kind == Kind::Partial);
    CHECK(r.partial_parts == 2);
    CHECK(r.version.minor == 2);
  }
  SUBCASE("caret, tilde, exact") {
    CHECK(parse_version_request("^1.2.0").kind == Kind::Caret);
    CHECK(parse_version_request("~1.2.3").kind == Kind::Tilde);
    CHECK(parse_version_request("=1.2.3").kind == Kind::Exact);
    VersionRequest r = parse_version_request("1.2.3-rc.1");
    CHECK(r.kind == Kind::Exact);
    CHECK(r.version.prerelease == "rc.1");
    CHECK(r.pins_exactly());
    CHECK_FALSE(parse_version_request("^1.2.3").pins_exactly());
  }
  SUBCASE("digest") {
    std::string hex(64, 'c');
    VersionRequest r = parse_version_request("sha256:" + hex);
    CHECK(r.kind == Kind::Digest);
    CHECK(r.sha256 == hex);
    CHECK(r.pins_exactly());
    CHECK_FALSE(r.matches(V("1.0.0")));
  }
}

TEST_CASE("version requests: garbage is refused, naming the text and the accepted forms") {
  for (const char* s : {"x", "1.", ".1", "01", "1.2.3.4", "^1", "^1.2", "~", "=", ">=", ">=x", "<1.2.3.4", ">=1.2,",
                        ",<2", ">=1,,<2", ">=1 <2", "1.x", "!1", "sha256:",
                        "sha256:abc", "latest1", "sha256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                        " 1", "*"}) {
    CAPTURE(s);
    std::string msg = kh_test::expect_status([&] { parse_version_request(s); }, KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find(std::string("'") + s + "'") != std::string::npos);
    CHECK(msg.find("accepted forms") != std::string::npos);
  }
}

TEST_CASE("version requests: matching") {
  const Row rows[] = {
      {"latest", "1.0.0", true},        {"latest", "2.0.0-rc.1", false},   {"1", "1.0.0", true},
      {"1", "1.9.9", true},             {"1", "2.0.0", false},             {"1", "0.9.0", false},
      {"1", "1.5.0-rc.1", false},       {"1.2", "1.2.0", true},            {"1.2", "1.2.9", true},
      {"1.2", "1.3.0", false},          {"^1.2.0", "1.2.0", true},         {"^1.2.0", "1.9.0", true},
      {"^1.2.0", "1.1.9", false},       {"^1.2.0", "2.0.0", false},        {"^1.2.0", "2.0.0-rc.1", false},
      {"^0.2.3", "0.2.9", true},        {"^0.2.3", "0.3.0", false},        {"^0.2.3", "0.2.2", false},
      {"^0.0.3", "0.0.3", true},        {"^0.0.3", "0.0.4", false},        {"~1.2.3", "1.2.3", true},
      {"~1.2.3", "1.2.9", true},        {"~1.2.3", "1.3.0", false},        {"~1.2.3", "1.2.2", false},
      {"=1.2.3", "1.2.3", true},        {"=1.2.3", "1.2.4", false},        {"1.2.3", "1.2.3+build", true},
      {"1.2.3-rc.1", "1.2.3-rc.1", true}, {"1.2.3-rc.1", "1.2.3", false},
      // prereleases match a range only when its bound is a prerelease of the same x.y.z
      {"^1.2.3-rc.1", "1.2.3-rc.2", true}, {"^1.2.3-rc.1", "1.2.3", true}, {"^1.2.3-rc.1", "1.2.4-rc.1", false},
      {"^1.2.3-rc.2", "1.2.3-rc.1", false}, {"~1.2.3-beta", "1.2.3-rc", true}, {"~1.2.3", "1.2.4-rc.1", false},
  };
  check_matches(rows);
}

TEST_CASE("version requests: comparisons joined by commas work like Cargo's") {
  CHECK(parse_version_request(">=1.2,<2").kind == Kind::Range);
  CHECK(parse_version_request("=1.2").kind == Kind::Range);  // any 1.2.x; "=1.2.3" stays Exact
  CHECK(parse_version_request("=1.2.3").kind == Kind::Exact);
  CHECK_FALSE(parse_version_request(">=1.2,<2").pins_exactly());
  const Row rows[] = {
      {">=1.2,<2", "1.2.0", true},      {">=1.2,<2", "1.9.9", true},      {">=1.2,<2", "1.1.9", false},
      {">=1.2,<2", "2.0.0", false},     {">=1.2, <2", "1.5.0", true},     {" >= 1.2 , < 2 ", "1.5.0", true},
      {">1.2", "1.2.9", false},         {">1.2", "1.3.0", true},          {">1", "1.9.0", false},
      {">1", "2.0.0", true},            {"<=1.2", "1.2.9", true},         {"<=1.2", "1.3.0", false},
      {"<=1", "1.9.9", true},           {"<=1", "2.0.0", false},          {">1.2.3", "1.2.3", false},
      {">1.2.3", "1.2.4", true},        {"<=1.2.3", "1.2.3", true},       {"<1.2.3", "1.2.3", false},
      {"=1.2", "1.2.7", true},          {"=1.2", "1.3.0", false},         {"<2", "1.0.0", true},
      {">=1.2,<1.5,<1.4", "1.4.0", false}, {">=1.2, ^1.3", "1.3.5", true}, {">=1.2, ^1.3", "1.2.5", false},
      {"^0.2, >=0.2.5", "0.2.6", true},  {"^0.2, >=0.2.5", "0.3.0", false}, {"~1.2, >=1.0", "1.2.9", true},
      {"~1.2, >=1.0", "1.3.0", false},   {">=1.0, 2", "2.4.0", true},    {">=1.0, 1", "1.4.0", true},
      // prereleases only where a bound names one of the same x.y.z
      {">=1.2,<2", "1.5.0-rc.1", false}, {">=1.5.0-rc.1,<2", "1.5.0-rc.2", true},
      {">=1.5.0-rc.1,<2", "1.6.0-rc.1", false},
  };
  check_matches(rows);
}
