// test_attention_manifest.cpp: kernels-src/attention/kernel.json against the library it
// describes (the agreed manifest format): the package's name and version, every op of the op
// table in the same order with the same name and the exact schema string, every schema
// argument in schema order with a shape and dtypes (tensors) or a doc (scalars), and the text
// fields present and free of control characters other than the newline between paragraphs.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attention_test_support.hpp"
#include "kernel_test_support.hpp"
#include "kh/kh.hpp"

using kh_test::attention_kernel;

namespace {

nlohmann::json manifest() {
  std::ifstream f(std::string(KH_TEST_SOURCE_DIR) + "/kernels-src/attention/kernel.json");
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

struct SchemaArg {
  std::string type, name;
};

// The arguments of a schema "op(Type name, Type? name=default, ...) -> ()", in order.
std::vector<SchemaArg> schema_args(const std::string& schema) {
  const size_t open = schema.find('('), close = schema.rfind(") ->");
  REQUIRE(open != std::string::npos);
  REQUIRE(close != std::string::npos);
  std::vector<SchemaArg> args;
  std::stringstream list(schema.substr(open + 1, close - open - 1));
  for (std::string item; std::getline(list, item, ',');) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    const size_t space = item.find(' ');
    REQUIRE(space != std::string::npos);
    SchemaArg a{item.substr(0, space), item.substr(space + 1)};
    a.name = a.name.substr(0, a.name.find('='));
    args.push_back(a);
  }
  return args;
}

bool printable(const std::string& s) {
  for (unsigned char ch : s)
    if (ch < 32 && ch != '\n') return false;
  return !s.empty();
}

}  // namespace

TEST_CASE("attention manifest: kernel.json describes the library's op table") {
  const nlohmann::json m = manifest();
  const kh::Kernel& k = attention_kernel();
  CHECK(m.at("name").get<std::string>() == k.name());
  CHECK(m.at("version").get<std::string>() == k.version());
  CHECK(printable(m.at("description").get<std::string>()));
  const std::vector<kh::Op> ops = k.ops();
  REQUIRE(m.at("ops").size() == ops.size());
  const std::set<std::string> dtypes = {"f32", "f16", "bf16", "f64", "i32", "i64", "u8", "i8", "bool"};
  for (size_t i = 0; i < ops.size(); ++i) {
    const nlohmann::json& op = m["ops"][i];
    CAPTURE(ops[i].name());
    CHECK(op.at("name").get<std::string>() == ops[i].name());
    CHECK(op.at("schema").get<std::string>() == ops[i].schema());
    for (const char* field : {"summary", "description"}) CHECK(printable(op.at(field).get<std::string>()));
    for (const char* field : {"notes", "errors"}) {
      REQUIRE(op.at(field).is_array());
      CHECK(!op.at(field).empty());
      for (const auto& line : op.at(field)) CHECK(printable(line.get<std::string>()));
    }
    const std::vector<SchemaArg> want = schema_args(ops[i].schema());
    REQUIRE(op.at("args").size() == want.size());
    for (size_t a = 0; a < want.size(); ++a) {
      const nlohmann::json& arg = op["args"][a];
      CAPTURE(want[a].name);
      CHECK(arg.at("name").get<std::string>() == want[a].name);
      CHECK(printable(arg.at("doc").get<std::string>()));
      if (want[a].type.rfind("Tensor", 0) == 0) {
        CHECK(printable(arg.at("shape").get<std::string>()));
        REQUIRE(arg.at("dtypes").is_array());
        CHECK(!arg.at("dtypes").empty());
        for (const auto& dt : arg.at("dtypes")) CHECK(dtypes.count(dt.get<std::string>()) == 1);
      } else {
        CHECK(!arg.contains("shape"));
        CHECK(!arg.contains("dtypes"));
      }
    }
  }
}
