// kh_op_workspace_size and kh_op_workspace_arg (issue 39, item 2) on libraries of three
// generations: one built before the query (ABI 1.0's module descriptor) loads and calls as
// before and answers KH_ERROR_UNSUPPORTED; one whose kh_op_ext is larger than this loader's
// answers through the fields it knows; one whose workspace argument is no tensor is refused.
// Also: data may be NULL in a query but not in a call; the workspace may be left none.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kh/kh.hpp"


TEST_CASE("a library built before the query loads, calls, and does not answer") {
  kh::Kernel k = kh::load_kernel_library(KH_FIXTURE_WORKSPACE_OLD);
  const kh::Op op = k.op("scale2");
  CHECK(op.workspace_arg() == -1);
  std::vector<float> out(8), x(8, 2.0f), ws(8);
  int64_t n[1] = {8};
  DLTensor tout{out.data(), {kDLCPU, 0}, 1, kh::dtype::f32, n, nullptr, 0};
  DLTensor tx{x.data(), {kDLCPU, 0}, 1, kh::dtype::f32, n, nullptr, 0};
  DLTensor tws{ws.data(), {kDLCPU, 0}, 1, kh::dtype::f32, n, nullptr, 0};
  op({kh::arg(&tout), kh::arg(&tx), kh::arg(&tws), kh::arg(1.5)});
  CHECK(out[7] == 3.0f);
  uint64_t bytes = 7;
  const kh_value args[] = {kh::arg(&tout), kh::arg(&tx), kh::arg(nullptr), kh::arg(1.5)};
  CHECK(kh_op_workspace_size(op.get(), args, 4, &bytes) == KH_ERROR_UNSUPPORTED);
  CHECK(bytes == 0);
  CHECK(std::string(kh_last_error()).find("built before kh_op_workspace_size existed") != std::string::npos);
}

TEST_CASE("a wider kh_op_ext of a later kh: the loader reads the fields it knows") {
  kh::Kernel k = kh::load_kernel_library(KH_FIXTURE_WORKSPACE_WIDE);
  const kh::Op op = k.op("scale2");
  CHECK(op.workspace_arg() == 2);
  int64_t n[1] = {1000};
  // A query: no data anywhere, the workspace left none.
  DLTensor tout{nullptr, {kDLCPU, 0}, 1, kh::dtype::f32, n, nullptr, 0};
  DLTensor tx = tout;
  CHECK(op.workspace_size({kh::arg(&tout), kh::arg(&tx), kh::arg(nullptr), kh::arg(2.0)}) == 4000);
  // Checked as a call is: a dtype the op refuses is refused by the query, naming the argument.
  DLTensor half = tx;
  half.dtype = kh::dtype::f16;
  uint64_t bytes = 0;
  const kh_value bad[] = {kh::arg(&tout), kh::arg(&half), kh::arg(nullptr), kh::arg(2.0)};
  CHECK(kh_op_workspace_size(op.get(), bad, 4, &bytes) == KH_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kh_last_error()).find("'x'") != std::string::npos);
  // A call still needs data, and its workspace.
  const kh_value no_data[] = {kh::arg(&tout), kh::arg(&tx), kh::arg(&tx), kh::arg(2.0)};
  CHECK(kh_op_call(op.get(), no_data, 4, nullptr) == KH_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kh_last_error()).find("data pointer is NULL") != std::string::npos);
  // And with the size it answered, the call runs.
  std::vector<float> out(1000), x(1000, 1.0f), ws(op.workspace_size({kh::arg(&tout), kh::arg(&tx), kh::arg(nullptr),
                                                                      kh::arg(2.0)}) / sizeof(float));
  DLTensor rout{out.data(), {kDLCPU, 0}, 1, kh::dtype::f32, n, nullptr, 0};
  DLTensor rx{x.data(), {kDLCPU, 0}, 1, kh::dtype::f32, n, nullptr, 0};
  DLTensor rws{ws.data(), {kDLCPU, 0}, 1, kh::dtype::f32, n, nullptr, 0};
  op({kh::arg(&rout), kh::arg(&rx), kh::arg(&rws), kh::arg(2.0)});
  CHECK(out[999] == 2.0f);
}

TEST_CASE("a workspace argument that is no tensor of the schema is refused at load") {
  kh_kernel* k = nullptr;
  CHECK(kh_load_kernel_library(KH_FIXTURE_WORKSPACE_BAD, &k) == KH_ERROR_LOAD_FAILED);
  CHECK(std::string(kh_last_error()).find("workspace argument 3 is not a tensor argument") != std::string::npos);
  CHECK(k == nullptr);
}
