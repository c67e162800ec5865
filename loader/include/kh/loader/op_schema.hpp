// Parses an op schema in PyTorch's syntax, e.g.
//   "rms_norm(Tensor(a!) out, Tensor x, Tensor? weight, float eps=1e-6) -> ()"
// into the per-argument facts the loader checks calls against.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kh/kernel_abi.h"

namespace kh::loader {

enum class ArgType { Tensor, Int, Float, Bool, Str };

struct SchemaArg {
  std::string name;
  ArgType type = ArgType::Tensor;
  bool optional = false;  // "Tensor?" / "float?": KH_VALUE_NONE accepted
  bool mutated = false;   // "Tensor(a!)": the op writes it
  // "float softcap=0.0": a caller may leave a trailing argument out; kh_op_call passes
  // default_value in its place. default_text is the schema's spelling ("" when none);
  // has_default is false when kh cannot read it (then the argument must be given).
  std::string default_text;
  bool has_default = false;
  kh_value default_value{};
  std::string default_string;  // a str default's characters (for default_value.u.s, set per call)
};

struct OpSchema {
  std::string name;
  std::vector<SchemaArg> args;
  std::string returns;  // the text after "->", e.g. "()"
};

// Throws StatusError(KH_ERROR_INVALID_ARGUMENT) naming the schema and what is wrong.
OpSchema parse_op_schema(std::string_view text);
const char* arg_type_name(ArgType type);

}  // namespace kh::loader
