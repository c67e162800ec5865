// Parsing op schemas in PyTorch's syntax.
#include <doctest/doctest.h>

#include "kh/registry/status_error.hpp"
#include "kh/loader/op_schema.hpp"

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

TEST_CASE("reads defaults as PyTorch writes them; one it cannot read leaves the argument required") {
  auto s = parse_op_schema(
      "f(Tensor x, int a=-1, float b=1e-06, float c=inf, bool d=False, str e=\"x, y\", Tensor? f=None, "
      "Tensor g=None, int h=[1, 2], float i=0.5x, int j) -> ()");
  REQUIRE(s.args.size() == 11);
  CHECK_FALSE(s.args[0].has_default);
  CHECK(s.args[1].has_default);
  CHECK(s.args[1].default_value.kind == KH_VALUE_INT);
  CHECK(s.args[1].default_value.u.i == -1);
  CHECK(s.args[2].default_value.u.d == doctest::Approx(1e-6));
  CHECK(s.args[3].default_value.u.d > 1e308);
  CHECK(s.args[4].default_value.kind == KH_VALUE_BOOL);
  CHECK(s.args[4].default_value.u.b == 0);
  CHECK(s.args[5].default_string == "x, y");
  CHECK(s.args[6].has_default);
  CHECK(s.args[6].default_value.kind == KH_VALUE_NONE);
  CHECK_FALSE(s.args[7].has_default);  // None for a Tensor that is not optional
  CHECK(s.args[7].default_text == "None");
  CHECK_FALSE(s.args[8].has_default);  // a list: not a kind kh passes
  CHECK(s.args[8].default_text == "[1, 2]");
  CHECK_FALSE(s.args[9].has_default);
  CHECK(s.args[9].default_text == "0.5x");
  CHECK_FALSE(s.args[10].has_default);
  CHECK(s.args[10].default_text.empty());
}
