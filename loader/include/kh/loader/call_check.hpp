// Checks an op call's arguments against the op's schema and constraints before the kernel
// sees them: count, kinds, dtypes, ranks, devices. On the hot path of every call, so it
// allocates nothing unless the call is bad.
#pragma once

#include <string>
#include <vector>

#include "kh/kernel_abi.h"
#include "kh/loader/op_schema.hpp"

namespace kh::loader {

struct CheckedOp {
  const kh_op_desc* desc = nullptr;
  OpSchema schema;
  std::vector<kh_arg_constraint> constraints;  // one per schema argument (defaults: any)
  uint32_t device_type = kDLCPU;               // of the module
  // From the op's kh_op_ext, when its library gives one: the workspace argument (-1: none)
  // and the kernel's size query (NULL: none).
  int32_t workspace_arg = -1;
  kh_op_workspace_fn workspace_size = nullptr;
};

// Builds the checked form of an op, with its extension (NULL: none); throws StatusError if
// either descriptor is malformed.
CheckedOp make_checked_op(const kh_op_desc& desc, uint32_t device_type, const kh_op_ext* ext = nullptr);

// What a check is for: a call, or a workspace-size query, whose tensors may come without data
// and whose workspace argument may be left none.
enum class CallCheck { kCall, kShapesOnly };

// KH_OK, or KH_ERROR_INVALID_ARGUMENT with *message naming the argument and the problem.
kh_status check_call(const CheckedOp& op, const kh_value* args, uint32_t nargs, std::string* message,
                     CallCheck mode = CallCheck::kCall);

// A call that leaves out trailing arguments: out[0, nargs) = args, the rest each argument's
// schema default (op.schema.args.size() values in all; out holds that many). KH_OK, or
// KH_ERROR_INVALID_ARGUMENT with *message naming the first one left out that has no default
// (or one kh cannot read). More arguments than the schema has are check_call's to refuse.
kh_status fill_defaults(const CheckedOp& op, const kh_value* args, uint32_t nargs, kh_value* out, std::string* message);

// A kernel's own message with each "argument 'name'" numbered as the schema numbers it
// ("argument 2 'weight'"), so every op error says which argument, whoever checked it.
std::string number_arguments(const OpSchema& schema, std::string message);

// "float32", "bfloat16", ... for messages.
std::string dtype_name(DLDataType dtype);
uint32_t dtype_mask_bit(DLDataType dtype);  // KH_DTYPE_* bit, 0 if none
std::string dtype_mask_names(uint32_t mask);

}  // namespace kh::loader
