// module.cpp: the activation op table (names, schemas, argument constraints), and from it the
// module descriptor and the library's one export, kh_kernel_negotiate (KH_KERNEL_MODULE).
// Shared by every backend; name, version, variant and device type come from the build
// (kh_add_kernel_library). kernel.json documents the same ops, in the same order, with the
// same schemas.
#include "activation_args.hpp"
#include "activation_ops.hpp"
#include "kh/kernel_abi.h"
#include "kh_kernel/module_desc.hpp"

namespace kh_activation {
namespace {

constexpr uint32_t kFloatDtypes = KH_DTYPE_F32 | KH_DTYPE_F16 | KH_DTYPE_BF16;
constexpr kh_arg_constraint kRows = {sizeof(kh_arg_constraint), kFloatDtypes, 1, -1};
constexpr kh_arg_constraint kScalar = {sizeof(kh_arg_constraint), 0, -1, -1};

constexpr kh_arg_constraint kActConstraints[kActNumArgs] = {kRows, kRows};
constexpr kh_arg_constraint kFatReluConstraints[kFatReluNumArgs] = {kRows, kRows, kScalar};

const kh_op_desc kOps[] = {
    {sizeof(kh_op_desc), 0, "silu_and_mul", "silu_and_mul(Tensor(a!) out, Tensor x) -> ()", &silu_and_mul_invoke,
     kActConstraints},
    {sizeof(kh_op_desc), 0, "gelu_and_mul", "gelu_and_mul(Tensor(a!) out, Tensor x) -> ()", &gelu_and_mul_invoke,
     kActConstraints},
    {sizeof(kh_op_desc), 0, "gelu_tanh_and_mul", "gelu_tanh_and_mul(Tensor(a!) out, Tensor x) -> ()",
     &gelu_tanh_and_mul_invoke, kActConstraints},
    {sizeof(kh_op_desc), 0, "fatrelu_and_mul", "fatrelu_and_mul(Tensor(a!) out, Tensor x, float threshold) -> ()",
     &fatrelu_and_mul_invoke, kFatReluConstraints},
};

}  // namespace
}  // namespace kh_activation

KH_KERNEL_MODULE(kh_activation::kOps)
