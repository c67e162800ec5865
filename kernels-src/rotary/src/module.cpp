// module.cpp: the rotary module descriptor (op table, schema, argument constraints) and the
// library's one export, kh_kernel_negotiate. Shared by every backend; the name, version,
// variant and device type come from the build (kh_add_kernel_library). kernel.json documents
// the same op with the same schema.
#include "kh/kernel_abi.h"
#include "kh_kernel/negotiate.hpp"
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

const kh_module_desc kModule = {sizeof(kh_module_desc), KH_ABI_VERSION, KH_PACKAGE_NAME, KH_PACKAGE_VERSION,
                                KH_VARIANT_KEY, KH_DEVICE_TYPE, sizeof(kOps) / sizeof(kOps[0]), kOps};

}  // namespace
}  // namespace kh_rotary

extern "C" KH_KERNEL_EXPORT kh_status kh_kernel_negotiate(kh_negotiation* negotiation) {
  return kh_kernels::negotiate(negotiation, &kh_rotary::kModule);
}
