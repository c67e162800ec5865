// module.cpp: the rotary op table (name, schema, argument constraints), and from it the module
// descriptor and the library's one export, kh_kernel_negotiate (KH_KERNEL_MODULE). Shared by
// every backend; name, version, variant and device type come from the build
// (kh_add_kernel_library). kernel.json documents the same op with the same schema.
#include "kh/kernel_abi.h"
#include "kh_kernel/module_desc.hpp"
#include "rotary_args.hpp"
#include "rotary_ops.hpp"

namespace kh_rotary {
namespace {

constexpr uint32_t kFloatDtypes = KH_DTYPE_F32 | KH_DTYPE_F16 | KH_DTYPE_BF16;
constexpr kh_arg_constraint kHeads = {sizeof(kh_arg_constraint), kFloatDtypes, 3, 3};
constexpr kh_arg_constraint kPositionsConstraint = {sizeof(kh_arg_constraint), KH_DTYPE_I32 | KH_DTYPE_I64, 1, 1};
constexpr kh_arg_constraint kCache = {sizeof(kh_arg_constraint), kFloatDtypes, 2, 2};
constexpr kh_arg_constraint kScalar = {sizeof(kh_arg_constraint), 0, -1, -1};

constexpr kh_arg_constraint kRotaryConstraints[kRotaryNumArgs] = {kHeads, kHeads, kPositionsConstraint, kCache,
                                                                   kScalar};

const kh_op_desc kOps[] = {
    {sizeof(kh_op_desc), 0, "rotary_embedding",
     "rotary_embedding(Tensor(a!) query, Tensor(b!)? key, Tensor positions, Tensor cos_sin_cache, bool is_neox) -> ()",
     &rotary_embedding_invoke, kRotaryConstraints},
};

}  // namespace
}  // namespace kh_rotary

KH_KERNEL_MODULE(kh_rotary::kOps)
