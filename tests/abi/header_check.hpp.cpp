// kh.hpp must compile cleanly as C++17 with all warnings as errors, and every kh::arg a
// host writes must pick one kind. Compiled with -DKH_HPP_REJECTS=N, a line that must NOT
// compile is compiled instead (tests/abi/CMakeLists.txt expects each to fail).
#include <cstddef>
#include <cstdint>
#include <string>

#include "kh/kh.hpp"

int kh_hpp_check();
int kh_hpp_check() {
  int bad = 0;
  const std::string name = "x";
  char buffer[4] = "abc";
  DLTensor t{};
  const DLTensor* input = &t;
  const float host[4] = {0, 1, 2, 3};
  kh::TensorView view(host, {2, 2}, kh::dtype::f32);
  view.strides({2, 1});
  const kh::TensorView copy = view;
  bad += kh::arg(1.0).kind != KH_VALUE_DOUBLE;
  bad += kh::arg(1.0f).kind != KH_VALUE_DOUBLE;
  bad += kh::arg(1).kind != KH_VALUE_INT;
  bad += kh::arg(int64_t{1}).kind != KH_VALUE_INT;
  bad += kh::arg(size_t{1}).kind != KH_VALUE_INT;
  bad += kh::arg(uint32_t{1}).kind != KH_VALUE_INT;
  bad += kh::arg(short{1}).kind != KH_VALUE_INT;
  bad += kh::arg(true).kind != KH_VALUE_BOOL;
  bad += kh::arg(nullptr).kind != KH_VALUE_NONE;
  bad += kh::arg("s").kind != KH_VALUE_STRING;
  bad += kh::arg(buffer).kind != KH_VALUE_STRING;
  bad += kh::arg(name).kind != KH_VALUE_STRING;
  bad += kh::arg(&t).kind != KH_VALUE_TENSOR;
  bad += kh::arg(input).kind != KH_VALUE_TENSOR;
  bad += kh::arg(view).kind != KH_VALUE_TENSOR;
  bad += kh::arg(copy).kind != KH_VALUE_TENSOR;
#if KH_HPP_REJECTS == 1
  float* data = nullptr;
  bad += kh::arg(data).kind;  // a raw pointer would have become a bool
#elif KH_HPP_REJECTS == 2
  bad += kh::arg(std::string("t")).kind;  // would point into a temporary
#elif KH_HPP_REJECTS == 3
  bad += kh::arg(kh::TensorView(host, {4}, kh::dtype::f32)).kind;  // would point into a temporary
#endif
  return bad;
}
