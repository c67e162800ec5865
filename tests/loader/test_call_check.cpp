// The checks kh_op_call makes before an op runs.
#include <doctest/doctest.h>

#include <string>

#include "kh/loader/call_check.hpp"

namespace {

kh_status dummy_invoke(const kh_value*, uint32_t, const kh_call_ctx*) { return KH_OK; }

const kh_arg_constraint kConstraints[] = {
    {sizeof(kh_arg_constraint), KH_DTYPE_F32 | KH_DTYPE_BF16, 1, -1},
    {sizeof(kh_arg_constraint), KH_DTYPE_F32 | KH_DTYPE_BF16, 1, -1},
    {sizeof(kh_arg_constraint), KH_DTYPE_F32, 1, 1},
    {sizeof(kh_arg_constraint), 0, -1, -1},
};

const kh_op_desc kDesc = {sizeof(kh_op_desc), 0, "norm", "norm(Tensor(a!) out, Tensor x, Tensor? weight, float eps) -> ()",
                          dummy_invoke, kConstraints};

struct Tensor2d {
  float data[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  DLTensor t{};
  Tensor2d() {
    t.data = data;
    t.device = {kDLCPU, 0};
    t.ndim = 2;
    t.dtype = {kDLFloat, 32, 1};
    t.shape = shape;
  }
};

kh_value tensor(DLTensor* t) {
  kh_value v{};
  v.kind = KH_VALUE_TENSOR;
  v.u.tensor = t;
  return v;
}
kh_value real(double d) {
  kh_value v{};
  v.kind = KH_VALUE_DOUBLE;
  v.u.d = d;
  return v;
}

}  // namespace

TEST_CASE("accepts a well-formed call, with and without the optional tensor") {
  auto op = kh::loader::make_checked_op(kDesc, kDLCPU);
  Tensor2d out, x;
  float w[3] = {1, 1, 1};
  int64_t wshape[1] = {3};
  DLTensor weight{w, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, wshape, nullptr, 0};
  std::string msg;
  kh_value args[] = {tensor(&out.t), tensor(&x.t), tensor(&weight), real(1e-6)};
  CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_OK);
  args[2] = kh_value{};
  CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_OK);
}

TEST_CASE("refuses bad calls, naming the argument") {
  auto op = kh::loader::make_checked_op(kDesc, kDLCPU);
  Tensor2d out, x;
  std::string msg;
  kh_value args[] = {tensor(&out.t), tensor(&x.t), kh_value{}, real(1e-6)};

  SUBCASE("argument count") {
    CHECK(kh::loader::check_call(op, args, 3, &msg) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find("expected 4 arguments, got 3") != std::string::npos);
  }
  SUBCASE("dtype") {
    x.t.dtype = {kDLFloat, 16, 1};
    CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find("'x'") != std::string::npos);
    CHECK(msg.find("float16") != std::string::npos);
  }
  SUBCASE("rank") {
    x.t.ndim = 0;
    CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find("'x'") != std::string::npos);
    CHECK(msg.find("at least 1 dimensions") != std::string::npos);
  }
  SUBCASE("device") {
    out.t.device = {kDLCUDA, 0};
    CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find("'out'") != std::string::npos);
    CHECK(msg.find("cuda") != std::string::npos);
  }
  SUBCASE("kind") {
    args[3] = tensor(&x.t);
    CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find("'eps'") != std::string::npos);
  }
  SUBCASE("required tensor omitted") {
    args[1] = kh_value{};
    CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find("'x'") != std::string::npos);
  }
  SUBCASE("null tensor pointer and null data") {
    args[1].u.tensor = nullptr;
    CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_ERROR_INVALID_ARGUMENT);
    args[1] = tensor(&x.t);
    x.t.data = nullptr;
    CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find("data pointer is NULL") != std::string::npos);
  }
  SUBCASE("vector dtypes (lanes > 1) are not scalars") {
    x.t.dtype = {kDLFloat, 32, 4};
    CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_ERROR_INVALID_ARGUMENT);
  }
  SUBCASE("mixed device indices") {
    kh::loader::CheckedOp gpu = kh::loader::make_checked_op(kDesc, kDLCUDA);
    out.t.device = {kDLCUDA, 0};
    x.t.device = {kDLCUDA, 1};
    CHECK(kh::loader::check_call(gpu, args, 4, &msg) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(msg.find("device index") != std::string::npos);
  }
}

TEST_CASE("empty tensors may have a NULL data pointer") {
  auto op = kh::loader::make_checked_op(kDesc, kDLCPU);
  Tensor2d out, x;
  out.shape[0] = x.shape[0] = 0;
  out.t.data = x.t.data = nullptr;
  std::string msg;
  kh_value args[] = {tensor(&out.t), tensor(&x.t), kh_value{}, real(1e-6)};
  CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_OK);
}

TEST_CASE("refuses data + byte_offset that is not aligned to the dtype's element size") {
  auto op = kh::loader::make_checked_op(kDesc, kDLCPU);
  Tensor2d out, x;
  std::string msg;
  kh_value args[] = {tensor(&out.t), tensor(&x.t), kh_value{}, real(1e-6)};
  x.t.byte_offset = 4;  // one float further: aligned
  CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_OK);
  x.t.byte_offset = 2;  // half a float
  CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_ERROR_INVALID_ARGUMENT);
  CHECK(msg.find("argument 1 'x'") != std::string::npos);
  CHECK(msg.find("byte_offset (2) is not aligned to its 4-byte float32 elements") != std::string::npos);
  x.t.byte_offset = 0;
  x.t.data = reinterpret_cast<char*>(x.data) + 1;  // the pointer itself misaligned
  CHECK(kh::loader::check_call(op, args, 4, &msg) == KH_ERROR_INVALID_ARGUMENT);
  CHECK(msg.find("not aligned") != std::string::npos);
}

TEST_CASE("a kernel's own messages get the schema's argument numbers") {
  auto op = kh::loader::make_checked_op(kDesc, kDLCPU);
  CHECK(kh::loader::number_arguments(op.schema, "norm: argument 'weight': shape [4] does not match x's last dim 3") ==
        "norm: argument 2 'weight': shape [4] does not match x's last dim 3");
  CHECK(kh::loader::number_arguments(op.schema, "norm: argument 'x': bad; argument 'eps': bad") ==
        "norm: argument 1 'x': bad; argument 3 'eps': bad");
  CHECK(kh::loader::number_arguments(op.schema, "norm: argument 'other': kept as is") ==
        "norm: argument 'other': kept as is");
}
