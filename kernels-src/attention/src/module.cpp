// module.cpp: the attention module descriptor (op table, schema, argument constraints) and
// the library's one export, kh_kernel_negotiate. Shared by every backend; the name, version,
// variant and device type come from the build (kh_add_kernel_library).
#include "attention_args.hpp"
#include "attention_decode_args.hpp"
#include "attention_ops.hpp"
#include "kh/kernel_abi.h"
#include "kh_kernel/negotiate.hpp"

namespace kh_attention {
namespace {

constexpr kh_arg_constraint kQkvo = {sizeof(kh_arg_constraint), kAttentionDtypes, 4, 4};
constexpr kh_arg_constraint kLseConstraint = {sizeof(kh_arg_constraint), KH_DTYPE_F32, 3, 3};
constexpr kh_arg_constraint kScalar = {sizeof(kh_arg_constraint), 0, -1, -1};

constexpr kh_arg_constraint kAttentionFwdConstraints[kAttentionFwdNumArgs] = {
    kQkvo, kLseConstraint, kQkvo, kQkvo, kQkvo, kScalar, kScalar};

// attention_varlen_fwd: packed (total, heads, dim) q/k/v/out, lse (heads_q, total_q), int32 offsets.
constexpr kh_arg_constraint kPacked = {sizeof(kh_arg_constraint), kAttentionDtypes, 3, 3};
constexpr kh_arg_constraint kPackedLse = {sizeof(kh_arg_constraint), KH_DTYPE_F32, 2, 2};
constexpr kh_arg_constraint kCuSeqlens = {sizeof(kh_arg_constraint), KH_DTYPE_I32, 1, 1};
constexpr kh_arg_constraint kAttentionVarlenConstraints[kAttentionVarlenNumArgs] = {
    kPacked, kPackedLse, kPacked, kPacked, kPacked, kCuSeqlens, kCuSeqlens,
    kScalar, kScalar, kScalar, kScalar, kScalar, kScalar};

constexpr kh_arg_constraint kBlockTable = {sizeof(kh_arg_constraint), KH_DTYPE_I32, 2, 2};
constexpr kh_arg_constraint kSeqLens = {sizeof(kh_arg_constraint), KH_DTYPE_I32, 1, 1};
constexpr kh_arg_constraint kWorkspace = {sizeof(kh_arg_constraint), KH_DTYPE_F32, 1, 1};
constexpr kh_arg_constraint kAttentionDecodeConstraints[kAttentionDecodeNumArgs] = {
    kQkvo, kLseConstraint, kQkvo, kQkvo, kQkvo, kBlockTable, kSeqLens, kWorkspace, kScalar, kScalar, kScalar};

// attention_decode_paged's workspace: float32, at least
//   max_splits > 1 ? batch * q_len * heads_q * max_splits * (head_dim + 1) : 0 elements, with
//   max_splits = max(1, min(64, ceil(max_kv / 128), ceil(4096 / (batch * heads_kv)))) and
//   max_kv = block_table.shape[1] * k_cache.shape[1] (attention_decode_params.hpp, the docs).
const kh_op_desc kOps[] = {
    {sizeof(kh_op_desc), 0, "attention_fwd",
     "attention_fwd(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v, float scale, bool causal) -> ()",
     &attention_fwd_invoke, kAttentionFwdConstraints},
    {sizeof(kh_op_desc), 0, "attention_decode_paged",
     "attention_decode_paged(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k_cache, Tensor v_cache, "
     "Tensor block_table, Tensor seq_lens, Tensor(c!) workspace, float scale, int window_left=-1, "
     "float softcap=0.0) -> ()",
     &attention_decode_paged_invoke, kAttentionDecodeConstraints},
    {sizeof(kh_op_desc), 0, "attention_varlen_fwd",
     "attention_varlen_fwd(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, "
     "Tensor cu_seqlens_k, int max_seqlen_q, int max_seqlen_k, float scale, bool causal, int window_left=-1, "
     "float softcap=0.0) -> ()",
     &attention_varlen_fwd_invoke, kAttentionVarlenConstraints},
};

const kh_module_desc kModule = {sizeof(kh_module_desc), KH_ABI_VERSION, KH_PACKAGE_NAME, KH_PACKAGE_VERSION,
                                KH_VARIANT_KEY, KH_DEVICE_TYPE, sizeof(kOps) / sizeof(kOps[0]), kOps};

}  // namespace
}  // namespace kh_attention

extern "C" KH_KERNEL_EXPORT kh_status kh_kernel_negotiate(kh_negotiation* negotiation) {
  return kh_kernels::negotiate(negotiation, &kh_attention::kModule);
}
