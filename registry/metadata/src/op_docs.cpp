// Op entries with their docs: strict, bounded parsing and writing (shared by kernel.json,
// kh-manifest.json and index.json); see op_docs.hpp.
#include "kh/registry/op_docs.hpp"

#include <algorithm>
#include <set>

#include "kh/registry/detail/json_fields.hpp"
#include "kh/registry/package_spec.hpp"
#include "kh/registry/semver.hpp"

namespace kh::registry {
namespace {

using json = nlohmann::json;
using detail::FieldReader;

constexpr const char* kDtypeNames[] = {"f32", "f16", "bf16", "f64", "i32", "i64", "u8", "i8", "bool"};
constexpr const char* kOpKeys[] = {"name", "schema", "summary", "description", "args", "notes", "errors"};
constexpr const char* kArgKeys[] = {"name", "shape", "dtypes", "doc"};

// Printable text, or lines of it joined by '\n' where `lines` allows them.
bool is_text(std::string_view s, bool lines) {
  if (!lines) return is_printable_text(s);
  size_t start = 0;
  while (true) {
    const size_t nl = s.find('\n', start);
    if (!is_printable_text(s.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start)))
      return false;
    if (nl == std::string_view::npos) return true;
    start = nl + 1;
  }
}

std::string text_value(const FieldReader& r, const json& v, const std::string& path, size_t max_bytes, bool lines) {
  if (!v.is_string()) r.bad(path, "expected a string");
  const std::string& s = v.get_ref<const std::string&>();
  if (s.size() > max_bytes)
    r.bad(path, std::to_string(s.size()) + " bytes, more than the " + std::to_string(max_bytes) + " allowed");
  if (!is_text(s, lines))
    r.bad(path, std::string("holds a control character") + (lines ? " other than '\\n'" : "") +
                    " or invalid UTF-8 ('" + printable(s, 200) + "')");
  return s;
}

// The optional array of strings `key` of obj.
std::vector<std::string> text_list(const FieldReader& r, const json& obj, const std::string& parent,
                                   const std::string& key, size_t max_items, size_t max_bytes, bool lines) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end()) return out;
  const std::string path = FieldReader::join(parent, key);
  if (!it->is_array()) r.bad(path, "expected an array of strings");
  if (it->size() > max_items)
    r.bad(path, std::to_string(it->size()) + " entries, more than the " + std::to_string(max_items) + " allowed");
  for (size_t i = 0; i < it->size(); ++i)
    out.push_back(text_value(r, (*it)[i], path + "[" + std::to_string(i) + "]", max_bytes, lines));
  return out;
}

void check_keys(const FieldReader& r, const json& obj, const std::string& path, const char* what,
                const char* const* known, size_t count) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (std::none_of(known, known + count, [&](const char* k) { return it.key() == k; })) {
      std::string names;
      for (size_t i = 0; i < count; ++i) names += std::string(i ? ", " : "") + known[i];
      r.bad(FieldReader::join(path, it.key()), std::string("unknown field (") + what + ": " + names + ")");
    }
}

bool is_identifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

OpArgDoc parse_arg(const FieldReader& r, const json& a, const std::string& p, bool strict_keys) {
  if (!a.is_object()) r.bad(p, "expected an object {name, shape, dtypes, doc}");
  if (strict_keys) check_keys(r, a, p, "an argument's fields", kArgKeys, std::size(kArgKeys));
  OpArgDoc arg;
  arg.name = r.string_at(a, p, "name");
  if (arg.name.size() > kMaxOpArgNameBytes || !is_identifier(arg.name))
    r.bad(p + ".name", "'" + arg.name + "' is not an argument name (a C identifier of at most " +
                           std::to_string(kMaxOpArgNameBytes) + " bytes)");
  arg.shape = detail::optional_text_at(r, a, p, "shape", kMaxOpArgShapeBytes);
  if (arg.shape.find('\n') != std::string::npos) r.bad(p + ".shape", "holds a line break");
  arg.dtypes = text_list(r, a, p, "dtypes", std::size(kDtypeNames), 8, false);
  std::set<std::string> seen;
  for (size_t i = 0; i < arg.dtypes.size(); ++i) {
    const std::string dp = p + ".dtypes[" + std::to_string(i) + "]";
    if (!is_op_dtype_name(arg.dtypes[i])) r.bad(dp, "'" + arg.dtypes[i] + "' is not f32 f16 bf16 f64 i32 i64 u8 i8 or bool");
    if (!seen.insert(arg.dtypes[i]).second) r.bad(dp, "'" + arg.dtypes[i] + "' is listed twice");
  }
  arg.doc = detail::optional_text_at(r, a, p, "doc", kMaxOpArgDocBytes);
  return arg;
}

std::optional<OpDoc> parse_doc(const FieldReader& r, const json& op, const std::string& p, bool strict_keys) {
  if (strict_keys) check_keys(r, op, p, "an op's fields", kOpKeys, std::size(kOpKeys));
  const bool documented = std::any_of(std::begin(kOpKeys) + 2, std::end(kOpKeys),
                                      [&](const char* k) { return op.contains(k); });
  if (!documented) return std::nullopt;
  OpDoc d;
  d.summary = detail::optional_text_at(r, op, p, "summary", kMaxOpSummaryBytes);
  if (d.summary.find('\n') != std::string::npos) r.bad(p + ".summary", "holds a line break (one sentence)");
  d.description = detail::optional_text_at(r, op, p, "description", kMaxOpDescriptionBytes);
  if (auto it = op.find("args"); it != op.end()) {
    const std::string ap = p + ".args";
    if (!it->is_array()) r.bad(ap, "expected an array of {name, shape, dtypes, doc}");
    if (it->size() > kMaxOpArgs)
      r.bad(ap, std::to_string(it->size()) + " entries, more than the " + std::to_string(kMaxOpArgs) + " allowed");
    for (size_t i = 0; i < it->size(); ++i) {
      d.args.push_back(parse_arg(r, (*it)[i], ap + "[" + std::to_string(i) + "]", strict_keys));
      for (size_t j = 0; j + 1 < d.args.size(); ++j)
        if (d.args[j].name == d.args.back().name)
          r.bad(ap + "[" + std::to_string(i) + "].name", "'" + d.args.back().name + "' is documented twice");
    }
  }
  d.notes = text_list(r, op, p, "notes", kMaxOpListItems, kMaxOpListItemBytes, true);
  d.errors = text_list(r, op, p, "errors", kMaxOpListItems, kMaxOpListItemBytes, true);
  return d;
}

}  // namespace

bool is_op_dtype_name(std::string_view name) {
  return std::any_of(std::begin(kDtypeNames), std::end(kDtypeNames), [&](const char* n) { return name == n; });
}

namespace detail {

std::string optional_text_at(const FieldReader& r, const json& obj, const std::string& parent, const std::string& key,
                             size_t max_bytes) {
  auto it = obj.find(key);
  if (it == obj.end()) return "";
  return text_value(r, *it, FieldReader::join(parent, key), max_bytes, true);
}

std::vector<OpInfo> parse_ops(const FieldReader& r, const json& ops, const std::string& path, bool strict_keys) {
  if (ops.size() > kMaxOpsPerPackage)
    r.bad(path, std::to_string(ops.size()) + " ops, more than the " + std::to_string(kMaxOpsPerPackage) + " allowed");
  std::vector<OpInfo> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string p = path + "[" + std::to_string(i) + "]";
    if (!ops[i].is_object()) r.bad(p, "expected an object");
    OpInfo op;
    op.name = r.string_at(ops[i], p, "name");
    op.schema = r.string_at(ops[i], p, "schema");
    if (op.name.empty()) r.bad(p + ".name", "empty");
    op.doc = parse_doc(r, ops[i], p, strict_keys);
    out.push_back(std::move(op));
  }
  return out;
}

nlohmann::ordered_json ops_json(const std::vector<OpInfo>& ops) {
  using ojson = nlohmann::ordered_json;
  ojson out = ojson::array();
  for (const OpInfo& op : ops) {
    ojson o{{"name", op.name}, {"schema", op.schema}};
    if (op.doc) {
      const OpDoc& d = *op.doc;
      if (!d.summary.empty()) o["summary"] = d.summary;
      if (!d.description.empty()) o["description"] = d.description;
      if (!d.args.empty()) {
        ojson args = ojson::array();
        for (const OpArgDoc& a : d.args) {
          ojson arg{{"name", a.name}};
          if (!a.shape.empty()) arg["shape"] = a.shape;
          if (!a.dtypes.empty()) arg["dtypes"] = a.dtypes;
          if (!a.doc.empty()) arg["doc"] = a.doc;
          args.push_back(std::move(arg));
        }
        o["args"] = std::move(args);
      }
      if (!d.notes.empty()) o["notes"] = d.notes;
      if (!d.errors.empty()) o["errors"] = d.errors;
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace detail

PackageSource parse_package_source(std::string_view json_text, std::string_view source) {
  FieldReader r(source, "fix the package's kernel.json (kernels-src/README.md describes its fields)");
  const json doc = detail::parse_json_object(json_text, source, "");
  PackageSource p;
  p.name = detail::repo_name_at(r, doc, "name");
  p.version = r.string_at(doc, "", "version");
  if (!parse_version(p.version)) r.bad("version", "'" + p.version + "' is not a semantic version");
  p.description = detail::optional_text_at(r, doc, "", "description", kMaxPackageDescriptionBytes);
  if (doc.contains("ops")) {
    p.declares_ops = true;
    p.ops = detail::parse_ops(r, r.array_at(doc, "", "ops"), "ops", true);
    for (size_t i = 0; i < p.ops.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (p.ops[i].name == p.ops[j].name)
          r.bad("ops[" + std::to_string(i) + "].name", "op " + p.ops[i].name + " is declared twice");
  }
  return p;
}

}  // namespace kh::registry
