// module.cpp: the rms-norm op table, and from it the module descriptor and the library's one
// export, kh_kernel_negotiate (KH_KERNEL_MODULE). Shared by every backend. The table is
// kernel.json's: kh_manifest_ops.h, generated from the manifest at configure time, gives each
// op's name, schema and argument constraints (the loader's dtype and ndim checks) in the
// manifest's order, so none of them can drift from it; the name, version, variant and device
// type come from the build (kh_add_kernel_library).
#include "kh/kernel_abi.h"
#include "kh_kernel/module_desc.hpp"
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

}  // namespace
}  // namespace kh_rms_norm

KH_KERNEL_MODULE(kh_rms_norm::kOps)
