// The op table and the library's one export, kh_kernel_negotiate. The table is kernel.json's:
// kh_manifest_ops.h (generated from the manifest at configure time) gives each op's name,
// schema and argument constraints in the manifest's order, so none of them can drift from it;
// the package name, version and variant come from the build.
#include "kh/kernel_abi.h"
#include "kh_kernel/module_desc.hpp"
#include "kh_manifest_ops.h"
#include "scale_args.hpp"

namespace kh_@KH_IDENT@ {
namespace {

static_assert(kh_manifest::scale_num_args == kScaleNumArgs, "kernel.json's scale arguments are not scale_args.hpp's");

const kh_op_desc kOps[] = {KH_MANIFEST_OPS(KH_MANIFEST_OP_DESC)};

}  // namespace
}  // namespace kh_@KH_IDENT@

KH_KERNEL_MODULE(kh_@KH_IDENT@::kOps)
