// Op docs (op_docs.hpp): kernel.json as an author writes it, the same docs in kh-manifest.json
// and index.json (round trips, optional in old metadata), every bound and type checked naming
// the field, and the docs' way from a packed manifest through publish into the signed index.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "kh/registry/archive.hpp"
#include "kh/registry/op_docs.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/repo_index.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using json = nlohmann::json;

namespace {

json documented_op() {
  return {{"name", "rms_norm"},
          {"schema", "rms_norm(Tensor(a!) out, Tensor x, Tensor weight, float eps) -> ()"},
          {"summary", "RMSNorm over the last dimension."},
          {"description", "out = x / rms(x) * weight\n\n    out[r, i] = x[r, i] / sqrt(mean + eps) * w[i]"},
          {"args", json::array({{{"name", "out"}, {"shape", "(..., hidden)"}, {"dtypes", {"f32", "bf16"}}, {"doc", "Written."}},
                                {{"name", "x"}, {"shape", "(..., hidden)"}, {"dtypes", {"f32", "bf16"}}, {"doc", "Rows."}},
                                {{"name", "weight"}, {"shape", "(hidden)"}, {"dtypes", {"f32"}}, {"doc", "Scale."}},
                                {{"name", "eps"}, {"doc", "Added to the mean square.\nFinite, >= 0."}}})},
          {"notes", {"rows may be 0.", "No allocation."}},
          {"errors", {"KH_ERROR_INVALID_ARGUMENT: eps < 0."}}};
}

json kernel_json() {
  return {{"name", "kernels-community/rms-norm"}, {"version", "1.0.0"}, {"description", "RMSNorm."},
          {"ops", json::array({documented_op(), {{"name", "plain_op"}, {"schema", "plain_op(Tensor x) -> ()"}}})},
          {"build", {{"sources", {"src/module.cpp"}}}}};
}

json index_with(const json& ops) {
  json variant = {{"sha256", std::string(64, 'a')}, {"size", 1}, {"abi", "1.0"}, {"description", "RMSNorm."}, {"ops", ops}};
  return {{"schema", 1}, {"repo", "kernels-community/rms-norm"}, {"version", 1}, {"expires", "2027-01-01T00:00:00Z"},
          {"releases", {{"1.0.0", {{"yanked", false}, {"variants", {{"cpu-x86_64-abi1-x86_64-linux", variant}}}}}}}};
}

RepoIndex parse_index(const json& doc) { return parse_repo_index(doc.dump(), "test/index.json"); }

}  // namespace

TEST_CASE("kernel.json: identity, description and every doc field") {
  const PackageSource p = parse_package_source(kernel_json().dump(), "rms-norm/kernel.json");
  CHECK(p.name == "kernels-community/rms-norm");
  CHECK(p.version == "1.0.0");
  CHECK(p.description == "RMSNorm.");
  CHECK(p.declares_ops);
  REQUIRE(p.ops.size() == 2);
  REQUIRE(p.ops[0].doc.has_value());
  const OpDoc& d = *p.ops[0].doc;
  CHECK(d.summary == "RMSNorm over the last dimension.");
  CHECK(d.description.find("\n\n    out[r, i]") != std::string::npos);
  REQUIRE(d.args.size() == 4);
  CHECK(d.args[0].dtypes == std::vector<std::string>{"f32", "bf16"});
  CHECK(d.args[2].shape == "(hidden)");
  CHECK(d.args[3].shape.empty());
  CHECK(d.args[3].doc == "Added to the mean square.\nFinite, >= 0.");
  CHECK(d.notes.size() == 2);
  CHECK(d.errors.at(0).rfind("KH_ERROR_INVALID_ARGUMENT", 0) == 0);
  CHECK_FALSE(p.ops[1].doc.has_value());  // an op without docs parses; pack says what it lacks

  json old = kernel_json();
  old.erase("ops");
  old.erase("description");
  const PackageSource q = parse_package_source(old.dump(), "old/kernel.json");
  CHECK_FALSE(q.declares_ops);
  CHECK(q.description.empty());
}

TEST_CASE("kernel.json is an author's file: unknown fields and repeated ops are refused") {
  struct Case {
    std::string pointer, field;
    json value;
  };
  const std::vector<Case> cases = {
      {"/ops/0/note", "ops[0].note", "misspelt notes"},
      {"/ops/0/args/1/dtype", "ops[0].args[1].dtype", json::array({"f32"})},
      {"/ops/1/name", "ops[1].name", "rms_norm"},
      {"/name", "name", "no-slash"},
      {"/version", "version", "1.0"},
      {"/description", "description", 7},
  };
  for (const Case& c : cases) {
    CAPTURE(c.pointer);
    json doc = kernel_json();
    doc[json::json_pointer(c.pointer)] = c.value;
    const std::string msg =
        kh_test::expect_status([&] { parse_package_source(doc.dump(), "k/kernel.json"); }, KH_ERROR_BAD_METADATA);
    CHECK_MESSAGE(msg.find("field '" + c.field + "'") != std::string::npos, msg);
    CHECK(msg.find("fix the package's kernel.json") != std::string::npos);
  }
}

TEST_CASE("the docs in index.json round-trip; an index without them still parses") {
  json ops = json::array({documented_op(), {{"name", "plain_op"}, {"schema", "plain_op(Tensor x) -> ()"}}});
  const RepoIndex idx = parse_index(index_with(ops));
  const VariantEntry& v = idx.releases.at(0).variants.at(0);
  CHECK(v.description == "RMSNorm.");
  REQUIRE(v.ops.at(0).doc.has_value());
  CHECK(v.ops[0].doc->args.at(3).name == "eps");
  CHECK_FALSE(v.ops[1].doc.has_value());
  const std::string text = serialize_repo_index(idx);
  CHECK(json::parse(text) == index_with(ops));  // written back field for field, nothing added
  CHECK(serialize_repo_index(parse_repo_index(text, "again")) == text);

  json old = index_with(json::array({{{"name", "rms_norm"}, {"schema", "rms_norm(Tensor x) -> ()"}}}));
  old["releases"]["1.0.0"]["variants"]["cpu-x86_64-abi1-x86_64-linux"].erase("description");
  const RepoIndex o = parse_index(old);
  CHECK(o.releases[0].variants[0].description.empty());
  CHECK_FALSE(o.releases[0].variants[0].ops[0].doc.has_value());
  CHECK(json::parse(serialize_repo_index(o)) == old);

  // Fields a newer kh may write into an op are ignored here (hub metadata, not an author's file).
  ops[0]["examples"] = json::array({"..."});
  ops[0]["args"][0]["layout"] = "NHD";
  CHECK(parse_index(index_with(ops)).releases[0].variants[0].ops[0].doc->args.size() == 4);
}

TEST_CASE("hostile docs are refused naming the field: types, sizes, counts, text") {
  const std::string op = "releases.\"1.0.0\".variants.\"cpu-x86_64-abi1-x86_64-linux\".ops[0]";
  struct Case {
    std::string pointer;  // within the op
    json value;
    std::string field, says;
  };
  const std::vector<Case> cases = {
      {"/summary", 5, ".summary", "expected a string"},
      {"/summary", "two\nlines", ".summary", "line break"},
      {"/summary", std::string(kMaxOpSummaryBytes + 1, 's'), ".summary", "more than the 512 allowed"},
      {"/description", "clear \x1b[2J screen", ".description", "control character"},
      {"/description", "tab\there", ".description", "control character"},
      {"/args", "out", ".args", "expected an array"},
      {"/args/0", "out", ".args[0]", "expected an object"},
      {"/args/0/name", "2out", ".args[0].name", "not an argument name"},
      {"/args/1/name", "out", ".args[1].name", "documented twice"},
      {"/args/0/shape", "(a,\nb)", ".args[0].shape", "line break"},
      {"/args/0/dtypes", "f32", ".args[0].dtypes", "expected an array of strings"},
      {"/args/0/dtypes/0", "float32", ".args[0].dtypes[0]", "is not f32 f16 bf16"},
      {"/args/0/dtypes/1", "f32", ".args[0].dtypes[1]", "listed twice"},
      {"/args/0/doc", std::string(kMaxOpArgDocBytes + 1, 'd'), ".args[0].doc", "more than the 4096 allowed"},
      {"/notes", "one note", ".notes", "expected an array of strings"},
      {"/notes/1", json::object(), ".notes[1]", "expected a string"},
      {"/notes", json(std::vector<std::string>(kMaxOpListItems + 1, "n")), ".notes", "more than the 64 allowed"},
      {"/errors/0", "\x07 bell", ".errors[0]", "control character"},
      {"/args", json(std::vector<json>(kMaxOpArgs + 1, json{{"name", "a"}})), ".args", "more than the 64 allowed"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.pointer);
    json o = documented_op();
    o[json::json_pointer(c.pointer)] = c.value;
    const std::string msg = kh_test::expect_status([&] { parse_index(index_with(json::array({o}))); },
                                                   KH_ERROR_BAD_METADATA);
    CHECK_MESSAGE(msg.find("field '" + op + c.field + "'") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find(c.says) != std::string::npos, msg);
    CHECK(msg.find('\x1b') == std::string::npos);  // quoted text is escaped
  }
  json many = index_with(json::array());
  many["releases"]["1.0.0"]["variants"]["cpu-x86_64-abi1-x86_64-linux"]["ops"] =
      json(std::vector<json>(kMaxOpsPerPackage + 1, json{{"name", "op"}, {"schema", "op() -> ()"}}));
  CHECK(kh_test::expect_status([&] { parse_index(many); }, KH_ERROR_BAD_METADATA).find("more than the 1024") !=
        std::string::npos);
  json long_description = index_with(json::array());
  long_description["releases"]["1.0.0"]["variants"]["cpu-x86_64-abi1-x86_64-linux"]["description"] =
      std::string(kMaxPackageDescriptionBytes + 1, 'x');
  kh_test::expect_status([&] { parse_index(long_description); }, KH_ERROR_BAD_METADATA);
}

TEST_CASE("docs travel: packed into kh-manifest.json, published into the index") {
  kh_test::TempDir d;
  make_directories(d / "build");
  const std::string lib = d / "build/libkh_rms_norm_cpu.so";
  kh_test::write_text(lib, "not a real library", 0755);
  const PackageSource src = parse_package_source(kernel_json().dump(), "kernel.json");
  PackageManifest m;
  m.name = src.name;
  m.version = src.version;
  m.variant = "cpu-x86_64-abi1-x86_64-linux";
  m.abi = "1.0";
  m.description = src.description;
  m.ops = src.ops;
  const std::string archive = pack_package(lib, m, d / "dist");

  const PackageManifest packed = parse_package_manifest(read_archive_member(archive, kManifestName, 1 << 20), "m");
  CHECK(packed.description == "RMSNorm.");
  REQUIRE(packed.ops.size() == 2);
  REQUIRE(packed.ops[0].doc.has_value());
  CHECK(packed.ops[0].doc->errors == src.ops[0].doc->errors);
  CHECK(packed.ops[0].doc->args.at(0).doc == "Written.");
  CHECK_FALSE(packed.ops[1].doc.has_value());

  publish_to_file_hub(d / "dist", d / "hub");
  const RepoIndex idx = parse_repo_index(kh_test::read_text(d / "hub/repos/kernels-community/rms-norm/index.json"), "i");
  const VariantEntry& v = idx.releases.at(0).variants.at(0);
  CHECK(v.description == "RMSNorm.");
  REQUIRE(v.ops.at(0).doc.has_value());
  CHECK(v.ops[0].doc->summary == src.ops[0].doc->summary);
  CHECK(v.ops[0].doc->description == src.ops[0].doc->description);
  CHECK(v.ops[0].doc->args.at(2).dtypes == std::vector<std::string>{"f32"});
  CHECK(v.ops[0].doc->notes == src.ops[0].doc->notes);
}
