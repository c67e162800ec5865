// module.cpp: the layer-norm module descriptor (op table, schemas, argument constraints) and
// the library's one export, kh_kernel_negotiate. Shared by every backend; the name,
// version, variant and device type come from the build (kh_add_kernel_library).
#include "kh/kernel_abi.h"
#include "kh_kernel/negotiate.hpp"
#include "kh_kernel/norm_args.hpp"
#include "layer_norm_args.hpp"
#include "layer_norm_ops.hpp"

namespace kh_layer_norm {
namespace {

constexpr kh_arg_constraint kRows = {sizeof(kh_arg_constraint), kh_kernels::kNormDtypes, 1, -1};
constexpr kh_arg_constraint kVector = {sizeof(kh_arg_constraint), kh_kernels::kNormDtypes, 1, 1};
constexpr kh_arg_constraint kScalar = {sizeof(kh_arg_constraint), 0, -1, -1};

constexpr kh_arg_constraint kLayerNormConstraints[kLayerNormNumArgs] = {kRows, kRows, kVector, kVector, kScalar};
constexpr kh_arg_constraint kFusedConstraints[kFusedAddLayerNormNumArgs] = {kRows,   kRows,   kRows,  kRows,
                                                                            kVector, kVector, kScalar};

const kh_op_desc kOps[] = {
    {sizeof(kh_op_desc), 0, "layer_norm",
     "layer_norm(Tensor(a!) out, Tensor x, Tensor? weight, Tensor? bias, float eps) -> ()", &layer_norm_invoke,
     kLayerNormConstraints},
    {sizeof(kh_op_desc), 0, "fused_add_layer_norm",
     "fused_add_layer_norm(Tensor(a!) out, Tensor(b!) residual_out, Tensor x, Tensor residual, Tensor? weight, "
     "Tensor? bias, float eps) -> ()",
     &fused_add_layer_norm_invoke, kFusedConstraints},
};

const kh_module_desc kModule = {sizeof(kh_module_desc), KH_ABI_VERSION, KH_PACKAGE_NAME, KH_PACKAGE_VERSION,
                                KH_VARIANT_KEY, KH_DEVICE_TYPE, sizeof(kOps) / sizeof(kOps[0]), kOps};

}  // namespace
}  // namespace kh_layer_norm

extern "C" KH_KERNEL_EXPORT kh_status kh_kernel_negotiate(kh_negotiation* negotiation) {
  return kh_kernels::negotiate(negotiation, &kh_layer_norm::kModule);
}
