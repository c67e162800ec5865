// A build's provenance: strict, bounded parsing (it comes from a hub) and stable writing.
#include "kh/registry/provenance.hpp"

#include "kh/registry/detail/internal.hpp"
#include "kh/registry/detail/json_fields.hpp"
#include "kh/registry/sha256.hpp"

namespace kh::registry {
namespace {

using detail::FieldReader;
using json = nlohmann::json;

bool is_lower_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_target_key(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

std::string bounded_string(const FieldReader& r, const json& obj, const std::string& parent, const std::string& key) {
  std::string s = r.string_at(obj, parent, key);
  if (s.size() > kMaxProvenanceTextBytes)
    r.bad(FieldReader::join(parent, key), "longer than " + std::to_string(kMaxProvenanceTextBytes) + " bytes");
  return s;
}

bool is_tool_name(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '+')) return false;
  return true;
}

}  // namespace

bool is_git_commit_id(std::string_view text) {
  return (text.size() == 40 || text.size() == 64) && is_lower_hex(text);
}

Provenance parse_provenance(const json& obj, const std::string& path, std::string_view source) {
  FieldReader r(source);
  if (!obj.is_object()) r.bad(path, "expected an object");
  Provenance p;
  if (auto src = obj.find("source"); src != obj.end()) {
    const std::string sp = FieldReader::join(path, "source");
    if (!src->is_object()) r.bad(sp, "expected an object");
    p.repository = bounded_string(r, *src, sp, "repository");
    p.commit = r.string_at(*src, sp, "commit");
    if (!is_git_commit_id(p.commit)) r.bad(sp + ".commit", "expected a git commit id: 40 or 64 lowercase hex digits");
    p.path = bounded_string(r, *src, sp, "path");
    if (!p.path.empty() && !detail::is_safe_relative_path(p.path))
      r.bad(sp + ".path", "'" + p.path + "' is not a safe relative path");
    const json& dirty = r.member(*src, sp, "dirty");
    if (!dirty.is_boolean()) r.bad(sp + ".dirty", "expected true or false");
    p.dirty = dirty.get<bool>();
  }
  const std::string bp = FieldReader::join(path, "builder");
  const json& builder = r.object_at(obj, path, "builder");
  p.kh_version = bounded_string(r, builder, bp, "kh");
  if (p.kh_version.empty()) r.bad(bp + ".kh", "empty");
  p.target = r.string_at(builder, bp, "target");
  if (!is_target_key(p.target)) r.bad(bp + ".target", "expected a target key such as cuda-sm90a");
  const json& tools = r.object_at(builder, bp, "tools");
  if (tools.size() > kMaxProvenanceTools)
    r.bad(bp + ".tools", "more than " + std::to_string(kMaxProvenanceTools) + " tools");
  for (auto it = tools.begin(); it != tools.end(); ++it) {
    if (!is_tool_name(it.key())) r.bad(bp + ".tools", "'" + printable(it.key()) + "' is not a tool name [a-z0-9._+-]");
    p.tools[it.key()] = bounded_string(r, tools, bp + ".tools", it.key());
  }
  const std::string inputs = r.string_at(obj, path, "inputs");
  if (inputs.rfind("sha256:", 0) != 0 || !is_sha256_hex(inputs.substr(7)))
    r.bad(FieldReader::join(path, "inputs"), "expected sha256:<64 lowercase hex digits>");
  p.inputs = inputs.substr(7);
  return p;
}

nlohmann::ordered_json provenance_json(const Provenance& p) {
  using ojson = nlohmann::ordered_json;
  ojson doc;
  if (p.has_source())
    doc["source"] = ojson{{"repository", p.repository}, {"commit", p.commit}, {"path", p.path}, {"dirty", p.dirty}};
  ojson tools = ojson::object();
  for (const auto& [name, version] : p.tools) tools[name] = version;
  doc["builder"] = ojson{{"kh", p.kh_version}, {"target", p.target}, {"tools", std::move(tools)}};
  doc["inputs"] = "sha256:" + p.inputs;
  return doc;
}

}  // namespace kh::registry
