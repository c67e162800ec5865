// Op docs for people: terminal text, JSON and Markdown; see op_reference.hpp.
#include "op_reference.hpp"

#include <cctype>
#include <cstdio>
#include <map>

#include "kh/registry/hub_directory.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/loader/op_schema.hpp"

namespace kh::cli {
namespace {

using registry::OpArgDoc;
using registry::OpDoc;
using registry::OpInfo;

// What the schema says of each argument, when it parses (hub text may not).
std::map<std::string, loader::SchemaArg> schema_args(const OpInfo& op) {
  std::map<std::string, loader::SchemaArg> out;
  try {
    for (const loader::SchemaArg& a : loader::parse_op_schema(op.schema).args) out[a.name] = a;
  } catch (const StatusError&) {
  }
  return out;
}

// How the schema passes an argument, where that is more than a plain input tensor: "written",
// "optional", "float", "int, optional".
std::string arg_kind(const std::map<std::string, loader::SchemaArg>& schema, const std::string& name) {
  auto it = schema.find(name);
  if (it == schema.end()) return "";
  const loader::SchemaArg& a = it->second;
  std::vector<std::string> parts;
  if (a.type != loader::ArgType::Tensor) parts.push_back(loader::arg_type_name(a.type));
  if (a.mutated) parts.push_back("written");
  if (a.optional) parts.push_back("optional");
  std::string kind;
  for (const std::string& p : parts) kind += (kind.empty() ? "" : ", ") + p;
  return kind;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// text's lines, each after indent (blank lines stay blank).
void print_lines(const std::string& text, const char* indent) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(start, nl - start);
    std::printf("%s%s\n", line.empty() ? "" : indent, line.c_str());
    start = nl + 1;
  }
}

// Markdown of plain text: '<' that could open an HTML tag is escaped (not in a line indented by
// 4 spaces, which Markdown shows as code, as written); in a table cell, '|' is escaped and line
// breaks become <br>.
std::string md_text(const std::string& text, bool cell) {
  std::string out;
  bool code_line = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (i == 0 || text[i - 1] == '\n') code_line = !cell && text.compare(i, 4, "    ") == 0;
    if (c == '<' && !code_line &&
        (std::isalpha(static_cast<unsigned char>(next)) || next == '/' || next == '!' || next == '?'))
      out += "&lt;";
    else if (cell && c == '|')
      out += "\\|";
    else if (cell && c == '\n')
      out += "<br>";
    else
      out += c;
  }
  return out;
}

// A list item whose text may hold paragraphs: continuation lines indented under the bullet.
std::string md_item(const std::string& text) {
  const std::string body = md_text(text, false);
  std::string out = "- ";
  for (size_t i = 0; i < body.size(); ++i) {
    out += body[i];
    if (body[i] == '\n' && i + 1 < body.size() && body[i + 1] != '\n') out += "  ";
  }
  return out + "\n";
}

}  // namespace

nlohmann::json op_json(const OpInfo& op, bool summary_only) {
  nlohmann::json j = {{"name", op.name}, {"schema", op.schema}, {"documented", op.doc.has_value()}};
  if (!op.doc) return j;
  const OpDoc& d = *op.doc;
  j["summary"] = d.summary;
  if (summary_only) return j;
  j["description"] = d.description;
  nlohmann::json args = nlohmann::json::array();
  for (const OpArgDoc& a : d.args)
    args.push_back({{"name", a.name}, {"shape", a.shape}, {"dtypes", a.dtypes}, {"doc", a.doc}});
  j["args"] = std::move(args);
  j["notes"] = d.notes;
  j["errors"] = d.errors;
  return j;
}

void print_op_list(const std::vector<OpInfo>& ops, const char* indent) {
  for (const OpInfo& op : ops) {
    std::printf("%s%s\n", indent, op.schema.c_str());
    if (op.doc && !op.doc->summary.empty()) std::printf("%s    %s\n", indent, op.doc->summary.c_str());
  }
}

void print_op_reference(const std::string& package, const std::string& version, const OpInfo& op) {
  std::printf("%s (%s %s)\n", op.name.c_str(), package.c_str(), version.c_str());
  if (op.doc && !op.doc->summary.empty()) std::printf("  %s\n", op.doc->summary.c_str());
  std::printf("\n  %s\n", op.schema.c_str());
  if (!op.doc) {
    std::printf("\n  This build carries no documentation of %s (packed before kh carried op docs).\n", op.name.c_str());
    return;
  }
  const OpDoc& d = *op.doc;
  const auto schema = schema_args(op);
  if (!d.args.empty()) {
    std::printf("\narguments:\n");
    for (const OpArgDoc& a : d.args) {
      std::string head = "  " + a.name;
      const std::string kind = arg_kind(schema, a.name);
      if (!kind.empty()) head += "  (" + kind + ")";
      if (!a.shape.empty()) head += "  " + a.shape;
      if (!a.dtypes.empty()) head += "  " + join(a.dtypes, " ");
      std::printf("%s\n", head.c_str());
      if (!a.doc.empty()) print_lines(a.doc, "      ");
    }
  }
  if (!d.description.empty()) {
    std::printf("\ndescription:\n");
    print_lines(d.description, "  ");
  }
  const struct {
    const char* title;
    const std::vector<std::string>* items;
  } lists[] = {{"notes", &d.notes}, {"errors (refused before launch)", &d.errors}};
  for (const auto& l : lists) {
    if (l.items->empty()) continue;
    std::printf("\n%s:\n", l.title);
    for (const std::string& item : *l.items) {
      std::printf("  - ");
      size_t nl = item.find('\n');
      std::printf("%s\n", item.substr(0, nl).c_str());
      if (nl != std::string::npos) print_lines(item.substr(nl + 1), "    ");
    }
  }
}

std::string render_ops_markdown(const std::string& package, const std::string& version,
                                const std::string& description, const std::vector<OpInfo>& ops) {
  std::string md =
      "<!-- Generated by `kernels docs` from the package's manifest (kernels-src/<pkg>/kernel.json):\n"
      "     edit the manifest and render again, not this page. -->\n";
  md += "# " + package + " " + version + "\n\n";
  if (!description.empty()) md += md_text(description, false) + "\n\n";
  md += "| op | what it computes |\n| --- | --- |\n";
  for (const OpInfo& op : ops)
    md += "| [`" + op.name + "`](#" + op.name + ") | " +
          md_text(op.doc ? op.doc->summary : std::string("(undocumented)"), true) + " |\n";
  for (const OpInfo& op : ops) {
    md += "\n## `" + op.name + "`\n\n";
    if (op.doc && !op.doc->summary.empty()) md += md_text(op.doc->summary, false) + "\n\n";
    md += "```\n" + op.schema + "\n```\n";
    if (!op.doc) {
      md += "\nNo documentation in the manifest.\n";
      continue;
    }
    const OpDoc& d = *op.doc;
    const auto schema = schema_args(op);
    if (!d.args.empty()) {
      md += "\n| argument | shape | dtypes | |\n| --- | --- | --- | --- |\n";
      for (const OpArgDoc& a : d.args) {
        const std::string kind = arg_kind(schema, a.name);
        md += "| `" + a.name + "`" + (kind.empty() ? "" : " (" + kind + ")") + " | " + md_text(a.shape, true) +
              " | " + join(a.dtypes, ", ") + " | " + md_text(a.doc, true) + " |\n";
      }
    }
    if (!d.description.empty()) md += "\n" + md_text(d.description, false) + "\n";
    if (!d.notes.empty()) {
      md += "\n**Notes**\n\n";
      for (const std::string& n : d.notes) md += md_item(n);
    }
    if (!d.errors.empty()) {
      md += "\n**Errors** (refused before launch)\n\n";
      for (const std::string& e : d.errors) md += md_item(e);
    }
  }
  return md;
}

const OpInfo& find_op(const std::vector<OpInfo>& ops, const std::string& name, const std::string& where) {
  std::vector<std::string> names;
  for (const OpInfo& op : ops) {
    if (op.name == name) return op;
    names.push_back(op.name);
  }
  std::string msg = where + " has no op '" + registry::printable(name) + "'";
  const std::vector<std::string> close = registry::similar_words(name, names);
  if (!close.empty()) msg += "; did you mean '" + close.front() + "'?";
  msg += names.empty() ? " (it has no ops)" : " (its ops: " + join(names, ", ") + ")";
  fail(KH_ERROR_NOT_FOUND, msg);
}

}  // namespace kh::cli
