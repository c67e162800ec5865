// Package specs "org/name[@request]" and the org/name rules.
#include <doctest/doctest.h>

#include "kh/registry/package_spec.hpp"
#include "test_util.hpp"

using namespace kh::registry;

TEST_CASE("valid specs parse") {
  PackageSpec s = parse_package_spec("kernels-community/rms-norm");
  CHECK(s.org == "kernels-community");
  CHECK(s.name == "rms-norm");
  CHECK(s.repo() == "kernels-community/rms-norm");
  CHECK(s.request.kind == VersionRequest::Kind::Latest);

  s = parse_package_spec("a.b_c/x-1@^1.2.0");
  CHECK(s.org == "a.b_c");
  CHECK(s.name == "x-1");
  CHECK(s.request.kind == VersionRequest::Kind::Caret);
  CHECK(s.request.text == "^1.2.0");

  s = parse_package_spec("org/name@sha256:" + std::string(64, '0'));
  CHECK(s.request.kind == VersionRequest::Kind::Digest);
  CHECK(parse_package_spec("org/name@1").request.kind == VersionRequest::Kind::Partial);
  CHECK(parse_package_spec("org/name@latest").request.kind == VersionRequest::Kind::Latest);
}

TEST_CASE("invalid specs are refused, naming the spec") {
  for (const char* s : {"", "rms-norm", "/name", "org/", "Org/name", "org/Name", ".org/name", "org/.name",
                        "org/na..me", "org/name/extra", "org/na me", "org/name@", "org/name@x", "org/name@1.2.3.4",
                        "org\\x/name", "org/name@@1"}) {
    CAPTURE(s);
    std::string msg = kh_test::expect_status([&] { parse_package_spec(s); }, KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find(std::string("'") + s + "'") != std::string::npos);
  }
}

TEST_CASE("mistakes from other tools get the spelling kh takes") {
  struct Row {
    const char* spec;
    const char* suggestion;
  };
  const Row rows[] = {{"org/name:1", "did you mean 'org/name@1'?"},
                      {"org/name==1.2.3", "did you mean 'org/name@1.2.3'?"},
                      {"org/name#^1.2.0", "did you mean 'org/name@^1.2.0'?"},
                      {"Kernels-Community/RMS-Norm@1", "did you mean 'kernels-community/rms-norm'?"}};
  for (const Row& row : rows) {
    CAPTURE(row.spec);
    std::string msg = kh_test::expect_status([&] { parse_package_spec(row.spec); }, KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find(row.suggestion) != std::string::npos);
  }
  CHECK(parse_package_spec("org/name@>=1.2,<2").request.kind == VersionRequest::Kind::Range);
}

TEST_CASE("is_valid_repo_part") {
  CHECK(is_valid_repo_part("rms-norm"));
  CHECK(is_valid_repo_part("a"));
  CHECK(is_valid_repo_part("a.b"));
  CHECK(is_valid_repo_part("0_9"));
  CHECK_FALSE(is_valid_repo_part(""));
  CHECK_FALSE(is_valid_repo_part("."));
  CHECK_FALSE(is_valid_repo_part(".."));
  CHECK_FALSE(is_valid_repo_part(".hidden"));
  CHECK_FALSE(is_valid_repo_part("a..b"));
  CHECK_FALSE(is_valid_repo_part("a/b"));
  CHECK_FALSE(is_valid_repo_part("A"));
  CHECK_FALSE(is_valid_repo_part("a+b"));
}
