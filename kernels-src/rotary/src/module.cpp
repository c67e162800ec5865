// module.cpp: the rotary op table, and from it the module descriptor and the library's one
// export, kh_kernel_negotiate (KH_KERNEL_MODULE). Shared by every backend. The table is
// kernel.json's: kh_manifest_ops.h, generated from the manifest at configure time, gives the
// op's name, schema and argument constraints (the loader's dtype and ndim checks); the name,
// version, variant and device type come from the build (kh_add_kernel_library).
#include "kh/kernel_abi.h"
#include "kh_kernel/module_desc.hpp"
#include "kh_manifest_ops.h"
#include "rotary_args.hpp"
#include "rotary_ops.hpp"

namespace kh_rotary {
namespace {

static_assert(kh_manifest::rotary_embedding_num_args == kRotaryNumArgs,
              "kernel.json's rotary_embedding arguments are not rotary_args.hpp's");

const kh_op_desc kOps[] = {KH_MANIFEST_OPS(KH_MANIFEST_OP_DESC)};

}  // namespace
}  // namespace kh_rotary

KH_KERNEL_MODULE(kh_rotary::kOps)
