// Showing a package's op docs (registry/op_docs.hpp): the list with summaries and the full
// reference of one op that `kernels info [--op NAME]` prints (text or JSON), and the Markdown
// page `kernels docs` renders (docs/ops/<pkg>.md). Hub text reaches here validated (printable,
// bounded) by the registry's parsers.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kh/registry/op_docs.hpp"

namespace kh::cli {

// {"name", "schema"} and the doc fields the op has ("documented": whether it has docs);
// summary_only: of the docs, the summary alone.
nlohmann::json op_json(const registry::OpInfo& op, bool summary_only);

// Under a release of `kernels info`: each op's schema, and its summary below it.
void print_op_list(const std::vector<registry::OpInfo>& ops, const char* indent);

// The whole reference of one op for a terminal: schema, arguments (shape, dtypes, doc),
// description, notes, errors.
void print_op_reference(const std::string& package, const std::string& version, const registry::OpInfo& op);

// docs/ops/<pkg>.md: the package, its description, a table of its ops and each op's reference.
// Depends on nothing but its arguments (a kernel.json and the hub's copy render alike).
std::string render_ops_markdown(const std::string& package, const std::string& version,
                                const std::string& description, const std::vector<registry::OpInfo>& ops);

// The op called `name`; else StatusError(KH_ERROR_NOT_FOUND) naming `where`, the ops there are
// and the closest name.
const registry::OpInfo& find_op(const std::vector<registry::OpInfo>& ops, const std::string& name,
                                const std::string& where);

}  // namespace kh::cli
