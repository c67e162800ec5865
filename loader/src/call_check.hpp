// Checks an op call's arguments against the op's schema and constraints before the kernel
// sees them: count, kinds, dtypes, ranks, devices. On the hot path of every call, so it
// allocates nothing unless the call is bad.
#pragma once

#include <string>
#include <vector>

#include "kh/kernel_abi.h"
#include "op_schema.hpp"

namespace kh::loader {

struct CheckedOp {
  const kh_op_desc* desc = nullptr;
  OpSchema schema;
  std::vector<kh_arg_constraint> constraints;  // one per schema argument (defaults: any)
  uint32_t device_type = kDLCPU;               // of the module
};

// Builds the checked form of an op; throws StatusError if the descriptor is malformed.
CheckedOp make_checked_op(const kh_op_desc& desc, uint32_t device_type);

// KH_OK, or KH_ERROR_INVALID_ARGUMENT with *message naming the argument and the problem.
kh_status check_call(const CheckedOp& op, const kh_value* args, uint32_t nargs, std::string* message);

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
