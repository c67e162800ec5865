// Op docs against the op's schema; see op_doc_check.hpp.
#include "kh/loader/op_doc_check.hpp"

#include "kh/registry/status_error.hpp"
#include "kh/loader/op_schema.hpp"

namespace kh::loader {

std::vector<std::string> op_doc_problems(const registry::OpInfo& op) {
  std::vector<std::string> problems;
  if (!op.doc) return {"no documentation (summary, description, args, notes, errors)"};
  const registry::OpDoc& d = *op.doc;
  if (d.summary.empty()) problems.push_back("no summary");
  if (d.description.empty()) problems.push_back("no description");
  OpSchema schema;
  try {
    schema = parse_op_schema(op.schema);
  } catch (const StatusError& e) {
    problems.push_back(e.what());
    return problems;
  }
  if (d.args.size() != schema.args.size()) {
    std::string names;
    for (const SchemaArg& a : schema.args) names += (names.empty() ? "" : ", ") + a.name;
    problems.push_back("args documents " + std::to_string(d.args.size()) + " arguments; the schema has " +
                       std::to_string(schema.args.size()) + " (" + names + "): document each, in schema order");
  }
  for (size_t i = 0; i < d.args.size() && i < schema.args.size(); ++i) {
    const registry::OpArgDoc& a = d.args[i];
    const SchemaArg& s = schema.args[i];
    const std::string where = "args[" + std::to_string(i) + "] '" + a.name + "'";
    if (a.name != s.name) {
      problems.push_back(where + ": the schema's argument " + std::to_string(i) + " is '" + s.name + "'");
      continue;
    }
    if (a.doc.empty()) problems.push_back(where + ": no doc");
    if (s.type == ArgType::Tensor) {
      if (a.shape.empty()) problems.push_back(where + ": a tensor with no shape");
      if (a.dtypes.empty()) problems.push_back(where + ": a tensor with no dtypes");
    } else if (!a.shape.empty() || !a.dtypes.empty()) {
      problems.push_back(where + ": a " + arg_type_name(s.type) + ", which has no shape or dtypes");
    }
  }
  return problems;
}

}  // namespace kh::loader
