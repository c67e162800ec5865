// Parsing op schemas in PyTorch's syntax.
#include <doctest/doctest.h>

#include "kh/registry/status_error.hpp"
#include "op_schema.hpp"

using kh::loader::ArgType;
using kh::loader::parse_op_schema;

TEST_CASE("parses a norm schema with alias annotations") {
  auto s = parse_op_schema("rms_norm(Tensor(a!) out, Tensor x, Tensor weight, float eps) -> ()");
  CHECK(s.name == "rms_norm");
  REQUIRE(s.args.size() == 4);
  CHECK(s.args[0].name == "out");
  CHECK(s.args[0].mutated);
  CHECK(s.args[0].type == ArgType::Tensor);
  CHECK_FALSE(s.args[1].mutated);
  CHECK(s.args[3].type == ArgType::Float);
  CHECK(s.returns == "()");
}

TEST_CASE("parses optionals, defaults, scalars and the keyword marker") {
  auto s = parse_op_schema(
      "attention_fwd(Tensor(a!) out, Tensor(b!)? lse, Tensor q, *, float scale=0.5, bool causal=False, int? window, str mode) -> ()");
  REQUIRE(s.args.size() == 7);
  CHECK(s.args[1].optional);
  CHECK(s.args[1].mutated);
  CHECK(s.args[3].type == ArgType::Float);
  CHECK(s.args[4].type == ArgType::Bool);
  CHECK(s.args[5].type == ArgType::Int);
  CHECK(s.args[5].optional);
  CHECK(s.args[6].type == ArgType::Str);
}

TEST_CASE("an op without arguments") {
  auto s = parse_op_schema("noop() -> ()");
  CHECK(s.args.empty());
}

TEST_CASE("rejects malformed schemas with the schema named") {
  const char* bad[] = {"",
                       "rms_norm",
                       "rms_norm(Tensor x",
                       "rms_norm(Tensor x) ()",
                       "rms_norm(Tensor x) ->",
                       "rms_norm(Vector x) -> ()",
                       "rms_norm(Tensor) -> ()",
                       "rms_norm(Tensor x, Tensor x) -> ()",
                       "rms_norm(Tensor(a! x) -> ()"};
  for (const char* text : bad) {
    CAPTURE(text);
    try {
      parse_op_schema(text);
      FAIL("accepted a malformed schema");
    } catch (const kh::StatusError& e) {
      CHECK(e.status() == KH_ERROR_INVALID_ARGUMENT);
      CHECK(std::string(e.what()).find("op schema") != std::string::npos);
    }
  }
}
