// Calls as hosts write them (issue 39, item 3), through libkh and kh.hpp: trailing arguments
// with schema defaults left out (kh_op_call fills them, every kind; one without a default is
// named), kh::arg for every C++ type a host has at hand, and kh::TensorView describing a
// host's memory (shape, strides, dtype, device) as a DLTensor.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kh/kh.hpp"

namespace {

struct Record {
  kh::Kernel kernel = kh::load_kernel_library(KH_FIXTURE_DEFAULTS_OP);
  kh::Op op = kernel.op("record");
  float out[5] = {};
  float x[1] = {2.0f};
  kh::TensorView out_view{out, {5}, kh::dtype::f32};
  kh::TensorView x_view{x, {1}, kh::dtype::f32};
};

}  // namespace

TEST_CASE("trailing arguments with defaults may be left out; kh_op_call passes the schema's") {
  Record r;
  CHECK(kh_op_num_args(r.op.get()) == 7);
  SUBCASE("every default") {
    r.op({kh::arg(r.out_view), kh::arg(r.x_view)});
    CHECK(r.out[0] == doctest::Approx(5.0));  // factor=2.5
    CHECK(r.out[1] == -3);                    // repeat=-3
    CHECK(r.out[2] == 1);                     // twice=True
    CHECK(r.out[3] == 13);                    // mode='plain, or not' (a comma inside the quotes)
    CHECK(r.out[4] == 0);                     // bias=None
  }
  SUBCASE("some given, the rest defaulted") {
    r.op({kh::arg(r.out_view), kh::arg(r.x_view), kh::arg(0.5f), kh::arg(size_t{7})});
    CHECK(r.out[0] == doctest::Approx(1.0));
    CHECK(r.out[1] == 7);
    CHECK(r.out[2] == 1);
  }
  SUBCASE("one without a default left out is named") {
    try {
      r.op({kh::arg(r.out_view)});
      FAIL("a call without x went through");
    } catch (const kh::Error& e) {
      CHECK(e.status() == KH_ERROR_INVALID_ARGUMENT);
      const std::string msg = e.what();
      CHECK_MESSAGE(msg.find("record: argument 1 'x': left out, and it has no default; pass it (1 of 7 arguments "
                             "given") != std::string::npos, msg);
    }
  }
  SUBCASE("more than the schema has is still refused") {
    std::vector<kh_value> eight(8, kh::none());
    CHECK(kh_op_call(r.op.get(), eight.data(), 8, nullptr) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(kh_last_error()).find("expected 7 arguments, got 8") != std::string::npos);
  }
}

TEST_CASE("kh::arg maps every C++ type a host has at hand to one kind") {
  CHECK(kh::arg(size_t{3}).u.i == 3);
  CHECK(kh::arg(uint64_t{1} << 40).u.i == int64_t{1} << 40);
  CHECK(kh::arg(-7).u.i == -7);
  CHECK(kh::arg(nullptr).kind == KH_VALUE_NONE);
  CHECK(kh::arg(static_cast<const char*>(nullptr)).kind == KH_VALUE_NONE);
  CHECK(kh::arg(static_cast<DLTensor*>(nullptr)).kind == KH_VALUE_NONE);
  CHECK(kh::arg(false).u.b == 0);
  CHECK(kh::arg(0.25f).u.d == 0.25);
  const std::string mode = "causal";
  CHECK(kh::arg(mode).u.s == mode.c_str());
  try {
    kh::arg(uint64_t{1} << 63);
    FAIL("a size past INT64_MAX was passed on");
  } catch (const kh::Error& e) {
    CHECK(e.status() == KH_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("9223372036854775808 is larger than an int argument holds") != std::string::npos);
  }
}

TEST_CASE("kh::TensorView describes a host's memory as a DLTensor, and its copies stand alone") {
  const float data[6] = {1, 2, 3, 4, 5, 6};
  kh::TensorView v(data, {2, 3}, kh::dtype::f32, kh::device::cuda(1));
  v.strides({1, 2}).byte_offset(4);  // a column-major view, one element in
  const DLTensor* t = v.get();
  CHECK(t->data == data);
  CHECK(t->ndim == 2);
  CHECK(t->shape[0] == 2);
  CHECK(t->shape[1] == 3);
  CHECK(t->strides[1] == 2);
  CHECK(t->byte_offset == 4);
  CHECK(t->device.device_type == kDLCUDA);
  CHECK(t->device.device_id == 1);
  CHECK(t->dtype.code == kDLFloat);
  CHECK(t->dtype.bits == 32);
  kh::TensorView copy = v;
  CHECK(copy.get()->shape != t->shape);  // its own shape and strides, same values
  CHECK(copy.get()->shape[1] == 3);
  CHECK(copy.get()->strides[0] == 1);
  CHECK(kh::TensorView(data, {6}, kh::dtype::f32).get()->strides == nullptr);  // none given: compact
  CHECK_THROWS_AS(kh::TensorView(data, {1, 1, 1, 1, 1, 1, 1, 1, 1}, kh::dtype::f32), kh::Error);
  CHECK_THROWS_AS(v.strides({1}), kh::Error);
}
