// An op's docs held against its schema: what `kernels pack` (refusing a published build,
// --target, warning otherwise) and `kernels docs --check` report about a package's kernel.json.
#pragma once

#include <string>
#include <vector>

#include "kh/registry/op_docs.hpp"

namespace kh::loader {

// One sentence per problem, empty when the docs are complete: a summary, a description, and
// every schema argument in schema order with its name, a doc, and for tensors a shape and
// dtypes (none for scalars). Notes and errors are optional.
std::vector<std::string> op_doc_problems(const registry::OpInfo& op);

}  // namespace kh::loader
