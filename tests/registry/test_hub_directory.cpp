// A wrong hub URL or package name says so: "no kh hub at URL (what was tried)", "did you
// mean" from the hub's catalog, and the catalog read for `kernels search`.
#include <doctest/doctest.h>

#include "kh/registry/fs.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_directory.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::TempDir;

namespace {

// A hub tree with kh-hub.json and a catalog listing `repos` (no indexes: enough for names).
void make_hub(const TempDir& dir, const std::vector<std::string>& repos) {
  kh_test::write_text(dir / "kh-hub.json", "{\"protocol\": 1, \"name\": \"t\"}\n");
  std::string catalog = "{\"schema\": 1, \"repos\": [";
  for (size_t i = 0; i < repos.size(); ++i)
    catalog += (i ? ", " : "") + std::string("{\"repo\": \"") + repos[i] + "\", \"latest\": \"1.0.0\"}";
  kh_test::write_text(dir / "catalog.json", catalog + "]}\n");
}

}  // namespace

TEST_CASE("a URL where no hub is: 'no kh hub at URL', naming what was tried") {
  TempDir dir;
  auto hub = open_hub("file://" + dir.path() + "/nothing-here");
  const std::string msg = kh_test::expect_status([&] { require_kh_hub(*hub); }, KH_ERROR_NOT_FOUND);
  CHECK(msg.find("no kh hub at file://" + dir.path() + "/nothing-here") != std::string::npos);
  CHECK(msg.find("kh-hub.json") != std::string::npos);
  CHECK(msg.find("root/1.root.json") != std::string::npos);
  // Not a package-name problem either.
  const std::string repo_msg =
      kh_test::expect_status([&] { fail_repo_not_found(*hub, "org/name", "repos/org/name/index.json"); }, KH_ERROR_NOT_FOUND);
  CHECK(repo_msg.find("no kh hub at") != std::string::npos);
  CHECK(repo_msg.find("has no package") == std::string::npos);
}

TEST_CASE("a hub is known by kh-hub.json or, before its first publish, by its first root") {
  TempDir dir;
  make_directories(dir / "root");
  kh_test::write_text(dir / "root/1.root.json", "{}");
  auto hub = open_hub("file://" + dir.path());
  require_kh_hub(*hub);  // does not throw
  CHECK(read_catalog(*hub).empty());
}

TEST_CASE("a mistyped package name gets 'did you mean' from the hub's catalog") {
  TempDir dir;
  make_hub(dir, {"kernels-community/rms-norm", "kernels-community/layer-norm", "kernels-community/attention",
                 "other-org/activation"});
  auto hub = open_hub("file://" + dir.path());
  const std::vector<CatalogEntry> catalog = read_catalog(*hub);
  REQUIRE(catalog.size() == 4);
  CHECK(catalog.front().repo == "kernels-community/attention");  // sorted
  CHECK(catalog.front().latest == "1.0.0");

  const std::string msg = kh_test::expect_status(
      [&] { fail_repo_not_found(*hub, "kernels-community/rms-nrom", "repos/kernels-community/rms-nrom/index.json"); },
      KH_ERROR_NOT_FOUND);
  CHECK(msg.find("has no package kernels-community/rms-nrom") != std::string::npos);
  CHECK(msg.find("did you mean kernels-community/rms-norm?") != std::string::npos);
  CHECK(msg.find("lists its 4 packages") != std::string::npos);

  // The right name under the wrong org, and a part of a longer name.
  CHECK(similar_repo_names("kernels-community/activation", {"other-org/activation"}) ==
        std::vector<std::string>{"other-org/activation"});
  CHECK(similar_repo_names("org/norm", {"org/rms-norm", "org/attention"}) == std::vector<std::string>{"org/rms-norm"});
  CHECK(similar_repo_names("org/zzzzzz", {"org/rms-norm", "org/attention"}).empty());
  CHECK(similar_words("gett", {"get", "list", "info"}) == std::vector<std::string>{"get"});
  CHECK(similar_words("lsit", {"get", "list", "info"}) == std::vector<std::string>{"list"});
  CHECK(similar_words("publishx", {"get", "publish"}) == std::vector<std::string>{"publish"});
  CHECK(similar_words("zzz", {"get", "list"}).empty());
}

TEST_CASE("a catalog that is not one is refused; deep nesting never reaches the parser") {
  TempDir dir;
  make_hub(dir, {});
  auto hub = open_hub("file://" + dir.path());
  kh_test::write_text(dir / "catalog.json", "{\"repos\": 5}");
  kh_test::expect_status([&] { read_catalog(*hub); }, KH_ERROR_BAD_METADATA);
  kh_test::write_text(dir / "catalog.json", std::string(100000, '[') + std::string(100000, ']'));
  kh_test::expect_status([&] { read_catalog(*hub); }, KH_ERROR_BAD_METADATA);
}

TEST_CASE("unsupported schemes list the ones kh has") {
  for (const char* url : {"ftp://host/hub", "s3://bucket/hub", "/srv/hub"}) {
    CAPTURE(url);
    const std::string msg = kh_test::expect_status([&] { open_hub(url); }, KH_ERROR_INVALID_ARGUMENT);
    for (const HubScheme& s : hub_schemes()) CHECK(msg.find(s.example) != std::string::npos);  // every scheme, by example
  }
  const std::string msg = kh_test::expect_status([&] { open_hub("/srv/hub"); }, KH_ERROR_INVALID_ARGUMENT);
  CHECK(msg.find("did you mean file:///srv/hub?") != std::string::npos);
}
