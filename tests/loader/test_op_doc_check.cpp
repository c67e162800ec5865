// op_doc_problems: an op's docs against its schema, what `kernels pack --target` refuses and
// `kernels docs --check` reports.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kh/loader/op_doc_check.hpp"

using kh::registry::OpArgDoc;
using kh::registry::OpDoc;
using kh::registry::OpInfo;

namespace {

OpInfo complete_op() {
  OpDoc d;
  d.summary = "RMSNorm.";
  d.description = "out = x / rms(x) * weight";
  d.args = {{"out", "(..., h)", {"f32"}, "Written."}, {"x", "(..., h)", {"f32"}, "Rows."},
            {"weight", "(h)", {"f32"}, "Scale."}, {"eps", "", {}, "Epsilon."}};
  return {"rms_norm", "rms_norm(Tensor(a!) out, Tensor x, Tensor? weight, float eps=1e-6) -> ()", d};
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& p : v) s += p + "\n";
  return s;
}

}  // namespace

TEST_CASE("complete docs have no problem; notes and errors are optional") {
  CHECK(kh::loader::op_doc_problems(complete_op()).empty());
}

TEST_CASE("each gap is named") {
  struct Case {
    const char* what;
    void (*change)(OpInfo&);
    const char* says;
  };
  const Case cases[] = {
      {"no docs at all", [](OpInfo& o) { o.doc.reset(); }, "no documentation"},
      {"no summary", [](OpInfo& o) { o.doc->summary.clear(); }, "no summary"},
      {"no description", [](OpInfo& o) { o.doc->description.clear(); }, "no description"},
      {"an argument left out", [](OpInfo& o) { o.doc->args.pop_back(); },
       "args documents 3 arguments; the schema has 4 (out, x, weight, eps)"},
      {"arguments out of order", [](OpInfo& o) { std::swap(o.doc->args[1], o.doc->args[2]); },
       "args[1] 'weight': the schema's argument 1 is 'x'"},
      {"a tensor without dtypes", [](OpInfo& o) { o.doc->args[1].dtypes.clear(); }, "args[1] 'x': a tensor with no dtypes"},
      {"a tensor without shape", [](OpInfo& o) { o.doc->args[0].shape.clear(); }, "args[0] 'out': a tensor with no shape"},
      {"a scalar with a shape", [](OpInfo& o) { o.doc->args[3].shape = "()"; }, "args[3] 'eps': a float, which has no shape"},
      {"an argument without doc", [](OpInfo& o) { o.doc->args[2].doc.clear(); }, "args[2] 'weight': no doc"},
      {"a schema that does not parse", [](OpInfo& o) { o.schema = "rms_norm(Tensor out"; }, "op schema"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    OpInfo op = complete_op();
    c.change(op);
    const std::string problems = joined(kh::loader::op_doc_problems(op));
    CHECK_MESSAGE(problems.find(c.says) != std::string::npos, problems);
  }
}
