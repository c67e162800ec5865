// module.cpp: the rms-norm module descriptor and the library's one export, kh_kernel_negotiate.
// Shared by every backend. The op table is kernel.json's: kh_manifest_ops.h, generated from
// the manifest at configure time, gives each op's name, schema and argument constraints (the
// loader's dtype and ndim checks) in the manifest's order, so none of them can drift from it;
// the name, version, variant and device type come from the build (kh_add_kernel_library).
#include "kh/kernel_abi.h"
#include "kh_kernel/negotiate.hpp"
#include "kh_manifest_ops.h"
#include "rms_norm_args.hpp"
#include "rms_norm_ops.hpp"

namespace kh_rms_norm {
namespace {

static_assert(kh_manifest::rms_norm_num_args == kRmsNormNumArgs,
              "kernel.json's rms_norm arguments are not rms_norm_args.hpp's");
static_assert(kh_manifest::fused_add_rms_norm_num_args == kFusedAddRmsNormNumArgs,
              "kernel.json's fused_add_rms_norm arguments are not rms_norm_args.hpp's");

const kh_op_desc kOps[] = {KH_MANIFEST_OPS(KH_MANIFEST_OP_DESC)};

const kh_module_desc kModule = {sizeof(kh_module_desc), KH_ABI_VERSION, KH_PACKAGE_NAME, KH_PACKAGE_VERSION,
                                KH_VARIANT_KEY, KH_DEVICE_TYPE, sizeof(kOps) / sizeof(kOps[0]), kOps};

}  // namespace
}  // namespace kh_rms_norm

extern "C" KH_KERNEL_EXPORT kh_status kh_kernel_negotiate(kh_negotiation* negotiation) {
  return kh_kernels::negotiate(negotiation, &kh_rms_norm::kModule);
}
