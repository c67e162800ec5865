// The op reference end to end: rms-norm's docs from its kernel.json, through `kernels pack` and
// a signed publish, to `kernels info --op` (text and JSON) and `kernels docs` from the hub;
// old indexes without docs, hostile docs, and what pack refuses (an op table that is not the
// manifest's, incomplete docs for a published build).
#include <doctest/doctest.h>

#include <string>

#include "workspace.hpp"

using kh::test::fs::path;
using kh::test::Workspace;

namespace {

const std::string kManifest = KH_TEST_SOURCE_DIR "/kernels-src/rms-norm/kernel.json";

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A copy of rms-norm's manifest with `edit` applied, in the workspace.
std::string edited_manifest(const Workspace& ws, const std::string& name, void (*edit)(nlohmann::json&)) {
  nlohmann::json doc = nlohmann::json::parse(kh::test::read_text(kManifest));
  edit(doc);
  const path p = ws.root / name;
  kh::test::write_text(p, doc.dump(2));
  return p.string();
}

}  // namespace

TEST_CASE("kernels info --op and kernels docs show what the manifest documents") {
  Workspace ws("op-reference");
  ws.publish_reference();
  const std::string hub = " --hub '" + ws.hub_url() + "'";
  const nlohmann::json manifest = nlohmann::json::parse(kh::test::read_text(kManifest));
  const nlohmann::json& fused = manifest["ops"][1];
  REQUIRE(fused["name"] == "fused_add_rms_norm");

  auto list = ws.kernels("info kernels-community/rms-norm" + hub);
  REQUIRE_MESSAGE(list.exit_code == 0, list.output);
  CHECK(has(list.output, "    " + fused["schema"].get<std::string>() + "\n        " +
                             fused["summary"].get<std::string>() + "\n"));

  auto text = ws.kernels("info kernels-community/rms-norm --op fused_add_rms_norm" + hub);
  REQUIRE_MESSAGE(text.exit_code == 0, text.output);
  CHECK(has(text.output, "fused_add_rms_norm (kernels-community/rms-norm 1.0.0)"));
  CHECK(has(text.output, "  residual_out  (written)  (..., hidden)  f32 f16 bf16\n"));
  CHECK(has(text.output, "  eps  (float)\n      " + fused["args"][5]["doc"].get<std::string>()));
  CHECK(has(text.output, "errors (refused before launch):\n  - " + fused["errors"][0].get<std::string>()));
  CHECK(has(text.output, "description:\n  Per row r and element i:\n\n      residual_out[r, i] = "));

  auto json = ws.kernels("info kernels-community/rms-norm@1 --op fused_add_rms_norm --json" + hub);
  REQUIRE_MESSAGE(json.exit_code == 0, json.output);
  const nlohmann::json op = nlohmann::json::parse(json.output)["op"];
  CHECK(op["documented"] == true);
  for (const char* field : {"name", "schema", "summary", "description", "notes", "errors"}) CHECK(op[field] == fused[field]);
  REQUIRE(op["args"].size() == 6);
  CHECK(op["args"][4]["dtypes"] == fused["args"][4]["dtypes"]);

  auto unknown = ws.kernels("info kernels-community/rms-norm --op rms_nrom" + hub);
  CHECK(unknown.exit_code != 0);
  CHECK_MESSAGE(has(unknown.output, "kernels-community/rms-norm 1.0.0 has no op 'rms_nrom'; did you mean 'rms_norm'? "
                                    "(its ops: rms_norm, fused_add_rms_norm)"),
                unknown.output);

  // The page from the hub is the page from the manifest: what was published is what is checked in.
  auto from_hub = ws.kernels("docs kernels-community/rms-norm" + hub);
  REQUIRE_MESSAGE(from_hub.exit_code == 0, from_hub.output);
  auto from_manifest = kh::test::run_command("'" KH_KERNELS_EXE "' docs '" + kManifest + "' 2>/dev/null");
  REQUIRE(from_manifest.exit_code == 0);
  CHECK(from_hub.output == from_manifest.output);
  CHECK(from_hub.output == kh::test::read_text(KH_TEST_SOURCE_DIR "/docs/ops/rms-norm.md"));
}

TEST_CASE("an index without docs still reads; hostile docs are refused") {
  Workspace ws("op-reference-old");
  ws.publish_reference();
  const std::string hub = " --hub '" + ws.hub_url() + "'";
  nlohmann::json index = ws.read_index();
  for (auto& op : Workspace::reference_variant(index)["ops"])
    for (const char* field : {"summary", "description", "args", "notes", "errors"}) op.erase(field);
  ws.write_index(index);
  auto old = ws.kernels("info kernels-community/rms-norm --op rms_norm" + hub);
  REQUIRE_MESSAGE(old.exit_code == 0, old.output);
  CHECK(has(old.output, "carries no documentation of rms_norm"));
  auto old_json = ws.kernels("info kernels-community/rms-norm --op rms_norm --json" + hub);
  CHECK(nlohmann::json::parse(old_json.output)["op"]["documented"] == false);

  Workspace::reference_variant(index)["ops"][0]["summary"] = "RMSNorm \x1b]0;owned\x07 with a title escape";
  ws.write_index(index);
  auto hostile = ws.kernels("info kernels-community/rms-norm --op rms_norm" + hub);
  CHECK(hostile.exit_code != 0);
  CHECK_MESSAGE(has(hostile.output, ".ops[0].summary': holds a control character"), hostile.output);
  CHECK(!has(hostile.output, "\x1b"));
}

TEST_CASE("kernels pack: the manifest's ops must be the library's, and published builds carry complete docs") {
  Workspace ws("op-reference-pack");
  const std::string pack = "pack '" KH_RMS_NORM_LIB "' --out '" + ws.dist.string() + "' --no-abi-check --package ";

  const std::string renamed = edited_manifest(ws, "renamed.json", [](nlohmann::json& d) {
    d["ops"][1]["schema"] = "fused_add_rms_norm(Tensor(a!) out, Tensor x, Tensor residual, Tensor weight, float eps) -> ()";
  });
  auto drift = ws.kernels(pack + "'" + renamed + "'");
  CHECK(drift.exit_code != 0);
  CHECK_MESSAGE(has(drift.output, "the schema of fused_add_rms_norm is\n  fused_add_rms_norm(Tensor(a!) out, Tensor(b!) "
                                  "residual_out"),
                drift.output);

  const std::string missing_op = edited_manifest(ws, "one-op.json", [](nlohmann::json& d) { d["ops"].erase(1); });
  auto fewer = ws.kernels(pack + "'" + missing_op + "'");
  CHECK(fewer.exit_code != 0);
  CHECK(has(fewer.output, "has 2 ops but " + ws.root.string() + "/one-op.json declares 1"));

  const std::string gaps = edited_manifest(ws, "gaps.json", [](nlohmann::json& d) {
    d["ops"][0].erase("summary");
    d["ops"][1]["args"].erase(2);
  });
  auto refused = ws.kernels(pack + "'" + gaps + "' --target cpu-x86_64-abi1-x86_64-linux");
  CHECK(refused.exit_code != 0);
  CHECK_MESSAGE(has(refused.output, "op docs are incomplete:\n  rms_norm: no summary\n  fused_add_rms_norm: args documents 5 "
                                    "arguments; the schema has 6"),
                refused.output);
  auto warned = ws.kernels(pack + "'" + gaps + "'");
  CHECK_MESSAGE(warned.exit_code == 0, warned.output);
  CHECK(has(warned.output, "warning: " + gaps + "'s op docs are incomplete (packed anyway: no --target)"));

  const std::string no_ops = edited_manifest(ws, "no-ops.json", [](nlohmann::json& d) { d.erase("ops"); });
  auto legacy = ws.kernels(pack + "'" + no_ops + "'");
  CHECK_MESSAGE(legacy.exit_code == 0, legacy.output);
  CHECK(has(legacy.output, "declares no ops with their docs"));
}
