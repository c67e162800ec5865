// module.cpp: the activation op table, and from it the module descriptor and the library's one
// export, kh_kernel_negotiate (KH_KERNEL_MODULE). Shared by every backend. The table is
// kernel.json's: kh_manifest_ops.h, generated from the manifest at configure time, gives each
// op's name, schema and argument constraints (the loader's dtype and ndim checks) in the
// manifest's order; the name, version, variant and device type come from the build
// (kh_add_kernel_library).
#include "activation_args.hpp"
#include "activation_ops.hpp"
#include "kh/kernel_abi.h"
#include "kh_kernel/module_desc.hpp"
#include "kh_manifest_ops.h"

namespace kh_activation {
namespace {

static_assert(kh_manifest::silu_and_mul_num_args == kActNumArgs &&
                  kh_manifest::gelu_and_mul_num_args == kActNumArgs &&
                  kh_manifest::gelu_tanh_and_mul_num_args == kActNumArgs,
              "kernel.json's gated activations' arguments are not activation_args.hpp's");
static_assert(kh_manifest::fatrelu_and_mul_num_args == kFatReluNumArgs,
              "kernel.json's fatrelu_and_mul arguments are not activation_args.hpp's");

const kh_op_desc kOps[] = {KH_MANIFEST_OPS(KH_MANIFEST_OP_DESC)};

}  // namespace
}  // namespace kh_activation

KH_KERNEL_MODULE(kh_activation::kOps)
