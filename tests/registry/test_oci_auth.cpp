// WWW-Authenticate challenges as registries send them (oci_auth.cpp): the scheme, quoted
// and bare parameters, commas and escaped quotes inside quotes.
#include <doctest/doctest.h>

#include "../../registry/transport/src/oci_auth.hpp"

using kh::registry::detail::parse_auth_challenge;

TEST_CASE("a Bearer challenge: realm, service and a scope with commas") {
  const auto c = parse_auth_challenge(
      R"(Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:kh/hub:pull,push")");
  CHECK(c.scheme == "bearer");
  CHECK(c.params.at("realm") == "https://auth.example.com/token");
  CHECK(c.params.at("service") == "registry.example.com");
  CHECK(c.params.at("scope") == "repository:kh/hub:pull,push");
}

TEST_CASE("Basic, bare values, spaces, an escaped quote, an error parameter") {
  const auto b = parse_auth_challenge(R"(Basic realm="kh-test")");
  CHECK(b.scheme == "basic");
  CHECK(b.params.at("realm") == "kh-test");
  const auto bare = parse_auth_challenge("bearer realm=https://a/t, service=reg ,error=\"insufficient_scope\"");
  CHECK(bare.scheme == "bearer");
  CHECK(bare.params.at("realm") == "https://a/t");
  CHECK(bare.params.at("service") == "reg");
  CHECK(bare.params.at("error") == "insufficient_scope");
  const auto q = parse_auth_challenge(R"(Bearer realm="a\"b")");
  CHECK(q.params.at("realm") == "a\"b");
}

TEST_CASE("what is not a challenge yields no parameters to act on") {
  CHECK(parse_auth_challenge("").scheme.empty());
  CHECK(parse_auth_challenge("Negotiate").params.empty());
  CHECK(parse_auth_challenge("Bearer").params.count("realm") == 0);
}
