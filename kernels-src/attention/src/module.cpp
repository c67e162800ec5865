// module.cpp: the attention op table, and from it the module descriptor and the library's one
// export, kh_kernel_negotiate (KH_KERNEL_MODULE). Shared by every backend. The table is
// kernel.json's: kh_manifest_ops.h, generated from the manifest at configure time, gives each
// op's name, schema and argument constraints (the loader's dtype and ndim checks) in the
// manifest's order; the name, version, variant and device type come from the build
// (kh_add_kernel_library).
//
// attention_decode_paged's (and _fp8's) workspace (float32) holds at least
//   max_splits > 1 ? batch * q_len * heads_q * max_splits * (head_dim + 1) : 0 elements, with
//   max_splits = max(1, min(64, ceil(max_kv / 128), ceil(4096 / (batch * heads_kv)))) and
//   max_kv = block_table.shape[1] * k_cache.shape[1] (attention_decode_params.hpp, the docs);
// hosts ask for it with kh_op_workspace_size (the ops' kh_op_ext below), not the formula.
#include "attention_args.hpp"
#include "attention_cache_args.hpp"
#include "attention_decode_args.hpp"
#include "attention_ops.hpp"
#include "kh/kernel_abi.h"
#include "kh_kernel/module_desc.hpp"
#include "kh_manifest_ops.h"

namespace kh_attention {
namespace {

static_assert(kh_manifest::attention_fwd_num_args == kAttentionFwdNumArgs,
              "kernel.json's attention_fwd arguments are not attention_args.hpp's");
static_assert(kh_manifest::attention_decode_paged_num_args == kAttentionDecodeNumArgs,
              "kernel.json's attention_decode_paged arguments are not attention_decode_args.hpp's");
static_assert(kh_manifest::attention_varlen_fwd_num_args == kAttentionVarlenNumArgs,
              "kernel.json's attention_varlen_fwd arguments are not attention_args.hpp's");
static_assert(kh_manifest::attention_decode_paged_fp8_num_args == kAttentionDecodeFp8NumArgs,
              "kernel.json's attention_decode_paged_fp8 arguments are not attention_decode_args.hpp's");
static_assert(kh_manifest::attention_varlen_fwd_fp8_num_args == kAttentionVarlenFp8NumArgs,
              "kernel.json's attention_varlen_fwd_fp8 arguments are not attention_args.hpp's");
static_assert(kh_manifest::paged_kv_cache_write_num_args == kPagedKvCacheWriteNumArgs,
              "kernel.json's paged_kv_cache_write arguments are not attention_cache_args.hpp's");

constexpr kh_op_desc kOps[] = {KH_MANIFEST_OPS(KH_MANIFEST_OP_DESC)};

constexpr kh_kernels::OpWorkspace kWorkspaces[] = {
    {"attention_decode_paged", kDecWorkspace, &attention_decode_paged_workspace},
    {"attention_decode_paged_fp8", kDf8Workspace, &attention_decode_paged_fp8_workspace},
    {"attention_varlen_fwd_fp8", kVf8Workspace, &attention_varlen_fwd_fp8_workspace},
};
static_assert(kh_kernels::names_ops(kOps, kWorkspaces), "a workspace entry names no op of kernel.json");
constexpr auto kOpExt = kh_kernels::op_ext_table(kOps, kWorkspaces);

}  // namespace
}  // namespace kh_attention

KH_KERNEL_MODULE_EXT(kh_attention::kOps, kh_attention::kOpExt)
