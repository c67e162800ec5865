// module.cpp: the layer-norm op table, and from it the module descriptor and the library's one
// export, kh_kernel_negotiate (KH_KERNEL_MODULE). Shared by every backend. The table is
// kernel.json's: kh_manifest_ops.h, generated from the manifest at configure time, gives each
// op's name, schema and argument constraints (the loader's dtype and ndim checks) in the
// manifest's order, so none of them can drift from it; the name, version, variant and device
// type come from the build (kh_add_kernel_library).
#include "kh/kernel_abi.h"
#include "kh_kernel/module_desc.hpp"
#include "kh_manifest_ops.h"
#include "layer_norm_args.hpp"
#include "layer_norm_ops.hpp"

namespace kh_layer_norm {
namespace {

static_assert(kh_manifest::layer_norm_num_args == kLayerNormNumArgs,
              "kernel.json's layer_norm arguments are not layer_norm_args.hpp's");
static_assert(kh_manifest::fused_add_layer_norm_num_args == kFusedAddLayerNormNumArgs,
              "kernel.json's fused_add_layer_norm arguments are not layer_norm_args.hpp's");

const kh_op_desc kOps[] = {KH_MANIFEST_OPS(KH_MANIFEST_OP_DESC)};

}  // namespace
}  // namespace kh_layer_norm

KH_KERNEL_MODULE(kh_layer_norm::kOps)
