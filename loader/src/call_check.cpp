// Argument checks of kh_op_call; see call_check.hpp.
#include "kh/loader/call_check.hpp"

#include <cstddef>
#include <cstring>

#include "kh/registry/status_error.hpp"

namespace kh::loader {
namespace {

constexpr int kMaxNdim = 32;  // far past any real kernel; guards against garbage ndim

const char* value_kind_name(uint32_t kind) {
  switch (kind) {
    case KH_VALUE_NONE: return "none";
    case KH_VALUE_TENSOR: return "Tensor";
    case KH_VALUE_INT: return "int";
    case KH_VALUE_DOUBLE: return "float";
    case KH_VALUE_BOOL: return "bool";
    case KH_VALUE_STRING: return "str";
    default: return "an unknown kind";
  }
}

uint32_t expected_kind(ArgType type) {
  switch (type) {
    case ArgType::Tensor: return KH_VALUE_TENSOR;
    case ArgType::Int: return KH_VALUE_INT;
    case ArgType::Float: return KH_VALUE_DOUBLE;
    case ArgType::Bool: return KH_VALUE_BOOL;
    case ArgType::Str: return KH_VALUE_STRING;
  }
  return KH_VALUE_NONE;
}

// Devices a module's tensors may live on: its own type, plus memory that type can read.
bool device_accepted(uint32_t module_device, int32_t tensor_device) {
  if (static_cast<uint32_t>(tensor_device) == module_device) return true;
  if (module_device == kDLCUDA) return tensor_device == kDLCUDAManaged;
  return false;
}

const char* device_name(int32_t device_type) {
  switch (device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda";
    case kDLCUDAHost: return "cuda_host";
    case kDLCUDAManaged: return "cuda_managed";
    case kDLROCM: return "rocm";
    case kDLROCMHost: return "rocm_host";
    default: return "other";
  }
}

std::string arg_label(const CheckedOp& op, size_t i) {
  return op.schema.name + ": argument " + std::to_string(i) + " '" + op.schema.args[i].name + "'";
}

kh_status check_tensor(const CheckedOp& op, size_t i, const DLTensor* t, int32_t* first_device_id,
                       std::string* message, CallCheck mode) {
  const kh_arg_constraint& c = op.constraints[i];
  if (t == nullptr) {
    *message = arg_label(op, i) + ": tensor pointer is NULL";
    return KH_ERROR_INVALID_ARGUMENT;
  }
  if (t->ndim < 0 || t->ndim > kMaxNdim || (t->ndim > 0 && t->shape == nullptr)) {
    *message = arg_label(op, i) + ": invalid ndim " + std::to_string(t->ndim) + " or NULL shape";
    return KH_ERROR_INVALID_ARGUMENT;
  }
  if ((c.min_ndim >= 0 && t->ndim < c.min_ndim) || (c.max_ndim >= 0 && t->ndim > c.max_ndim)) {
    *message = arg_label(op, i) + ": expected ";
    if (c.min_ndim == c.max_ndim)
      *message += std::to_string(c.min_ndim) + " dimensions";
    else if (c.max_ndim < 0)
      *message += "at least " + std::to_string(c.min_ndim) + " dimensions";
    else
      *message += "between " + std::to_string(c.min_ndim < 0 ? 0 : c.min_ndim) + " and " +
                  std::to_string(c.max_ndim) + " dimensions";
    *message += ", got " + std::to_string(t->ndim);
    return KH_ERROR_INVALID_ARGUMENT;
  }
  const uint32_t bit = dtype_mask_bit(t->dtype);
  if (c.dtype_mask != 0 && (bit & c.dtype_mask) == 0) {
    *message = arg_label(op, i) + ": expected dtype " + dtype_mask_names(c.dtype_mask) + ", got " + dtype_name(t->dtype);
    return KH_ERROR_INVALID_ARGUMENT;
  }
  if (!device_accepted(op.device_type, t->device.device_type)) {
    *message = arg_label(op, i) + ": tensor is on device " + device_name(t->device.device_type) +
               ", but this build of the kernel runs on " + device_name(static_cast<int32_t>(op.device_type)) +
               "; load a variant for that device or move the tensor";
    return KH_ERROR_INVALID_ARGUMENT;
  }
  if (*first_device_id < 0) {
    *first_device_id = t->device.device_id;
  } else if (t->device.device_id != *first_device_id) {
    *message = arg_label(op, i) + ": tensor is on device index " + std::to_string(t->device.device_id) +
               " but an earlier tensor is on " + std::to_string(*first_device_id) + "; all tensors of a call share one device";
    return KH_ERROR_INVALID_ARGUMENT;
  }
  bool empty = false;
  for (int d = 0; d < t->ndim; ++d) {
    if (t->shape[d] < 0) {
      *message = arg_label(op, i) + ": negative size in dimension " + std::to_string(d);
      return KH_ERROR_INVALID_ARGUMENT;
    }
    if (t->shape[d] == 0) empty = true;
  }
  if (mode == CallCheck::kShapesOnly) return KH_OK;  // a size query: data may be absent
  if (t->data == nullptr && !empty) {
    *message = arg_label(op, i) + ": data pointer is NULL for a non-empty tensor";
    return KH_ERROR_INVALID_ARGUMENT;
  }
  // Kernels read whole elements (and vectors of them) from data + byte_offset: an address
  // that is not a multiple of the element size would be a misaligned access on every device.
  const uint64_t element_bytes = (static_cast<uint64_t>(t->dtype.bits) * t->dtype.lanes + 7) / 8;
  const uint64_t address = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  if (element_bytes > 1 && !empty && address % element_bytes != 0) {
    *message = arg_label(op, i) + ": data + byte_offset (" + std::to_string(t->byte_offset) +
               ") is not aligned to its " + std::to_string(element_bytes) + "-byte " + dtype_name(t->dtype) +
               " elements";
    return KH_ERROR_INVALID_ARGUMENT;
  }
  return KH_OK;
}

}  // namespace

CheckedOp make_checked_op(const kh_op_desc& desc, uint32_t device_type, const kh_op_ext* ext) {
  CheckedOp op;
  op.desc = &desc;
  op.device_type = device_type;
  op.schema = parse_op_schema(desc.schema);
  if (op.schema.name != desc.name)
    fail(KH_ERROR_LOAD_FAILED, std::string("op '") + desc.name + "': its schema names it '" + op.schema.name + "'");
  const kh_arg_constraint any{sizeof(kh_arg_constraint), 0, -1, -1};
  op.constraints.assign(op.schema.args.size(), any);
  if (desc.arg_constraints != nullptr) {
    for (size_t i = 0; i < op.schema.args.size(); ++i) {
      const kh_arg_constraint& given = desc.arg_constraints[i];
      if (given.struct_size < sizeof(kh_arg_constraint))
        fail(KH_ERROR_LOAD_FAILED, std::string("op '") + desc.name + "': constraint " + std::to_string(i) +
                                       " has struct_size " + std::to_string(given.struct_size));
      op.constraints[i] = given;
    }
  }
  if (ext != nullptr) {
    // Fields are read only where the library's struct_size covers them (kh_op_ext may grow).
    if (ext->struct_size >= offsetof(kh_op_ext, workspace_arg) + sizeof(ext->workspace_arg))
      op.workspace_arg = ext->workspace_arg;
    if (ext->struct_size >= offsetof(kh_op_ext, workspace_size) + sizeof(ext->workspace_size))
      op.workspace_size = ext->workspace_size;
    const int64_t nargs = static_cast<int64_t>(op.schema.args.size());
    if (op.workspace_arg < -1 || op.workspace_arg >= nargs ||
        (op.workspace_arg >= 0 && op.schema.args[static_cast<size_t>(op.workspace_arg)].type != ArgType::Tensor))
      fail(KH_ERROR_LOAD_FAILED, std::string("op '") + desc.name + "': its workspace argument " +
                                     std::to_string(op.workspace_arg) + " is not a tensor argument of its schema");
  }
  return op;
}

kh_status check_call(const CheckedOp& op, const kh_value* args, uint32_t nargs, std::string* message,
                     CallCheck mode) {
  const size_t expected = op.schema.args.size();
  if (nargs != expected || (nargs > 0 && args == nullptr)) {
    *message = op.schema.name + ": expected " + std::to_string(expected) + " arguments, got " + std::to_string(nargs) +
               (nargs > 0 && args == nullptr ? " with a NULL argument array" : "") + "; schema: " + op.desc->schema;
    return KH_ERROR_INVALID_ARGUMENT;
  }
  int32_t device_id = -1;
  for (size_t i = 0; i < expected; ++i) {
    const SchemaArg& spec = op.schema.args[i];
    const kh_value& v = args[i];
    if (v.kind == KH_VALUE_NONE && spec.optional) continue;
    // A size query comes before the workspace exists.
    if (v.kind == KH_VALUE_NONE && mode == CallCheck::kShapesOnly && static_cast<int32_t>(i) == op.workspace_arg) continue;
    if (v.kind != expected_kind(spec.type)) {
      *message = arg_label(op, i) + ": expected " + arg_type_name(spec.type) + (spec.optional ? " or none" : "") +
                 ", got " + value_kind_name(v.kind);
      return KH_ERROR_INVALID_ARGUMENT;
    }
    if (spec.type == ArgType::Tensor) {
      kh_status s = check_tensor(op, i, v.u.tensor, &device_id, message, mode);
      if (s != KH_OK) return s;
    } else if (spec.type == ArgType::Str && v.u.s == nullptr) {
      *message = arg_label(op, i) + ": string pointer is NULL";
      return KH_ERROR_INVALID_ARGUMENT;
    } else if (spec.type == ArgType::Bool && v.u.b != 0 && v.u.b != 1) {
      *message = arg_label(op, i) + ": bool must be 0 or 1, got " + std::to_string(v.u.b);
      return KH_ERROR_INVALID_ARGUMENT;
    }
  }
  return KH_OK;
}

kh_status fill_defaults(const CheckedOp& op, const kh_value* args, uint32_t nargs, kh_value* out, std::string* message) {
  const size_t expected = op.schema.args.size();
  for (size_t i = 0; i < expected; ++i) {
    if (i < nargs) {
      out[i] = args[i];
      continue;
    }
    const SchemaArg& a = op.schema.args[i];
    if (!a.has_default) {
      *message = arg_label(op, i) + ": left out, and it has " +
                 (a.default_text.empty() ? std::string("no default")
                                         : "a default kh cannot fill ('" + a.default_text + "')") +
                 "; pass it (" + std::to_string(nargs) + " of " + std::to_string(expected) +
                 " arguments given; trailing arguments with defaults may be left out). Schema: " + op.desc->schema;
      return KH_ERROR_INVALID_ARGUMENT;
    }
    out[i] = a.default_value;
    if (out[i].kind == KH_VALUE_STRING) out[i].u.s = a.default_string.c_str();
  }
  return KH_OK;
}

std::string number_arguments(const OpSchema& schema, std::string message) {
  for (size_t i = 0; i < schema.args.size(); ++i) {
    const std::string plain = "argument '" + schema.args[i].name + "'";
    const std::string numbered = "argument " + std::to_string(i) + " '" + schema.args[i].name + "'";
    for (size_t at = message.find(plain); at != std::string::npos; at = message.find(plain, at + numbered.size()))
      message.replace(at, plain.size(), numbered);
  }
  return message;
}

uint32_t dtype_mask_bit(DLDataType dtype) {
  if (dtype.lanes != 1) return 0;
  switch (dtype.code) {
    case kDLFloat:
      return dtype.bits == 32 ? KH_DTYPE_F32 : dtype.bits == 16 ? KH_DTYPE_F16 : dtype.bits == 64 ? KH_DTYPE_F64 : 0;
    case kDLBfloat: return dtype.bits == 16 ? KH_DTYPE_BF16 : 0;
    case kDLInt: return dtype.bits == 32 ? KH_DTYPE_I32 : dtype.bits == 64 ? KH_DTYPE_I64 : dtype.bits == 8 ? KH_DTYPE_I8 : 0;
    case kDLUInt: return dtype.bits == 8 ? KH_DTYPE_U8 : dtype.bits == 1 ? KH_DTYPE_BOOL : 0;
    default: return 0;
  }
}

std::string dtype_name(DLDataType dtype) {
  std::string base;
  switch (dtype.code) {
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLComplex: base = "complex"; break;
    default: base = "code" + std::to_string(dtype.code) + "_"; break;
  }
  std::string name = base + std::to_string(dtype.bits);
  if (dtype.lanes != 1) name += "x" + std::to_string(dtype.lanes);
  return name;
}

std::string dtype_mask_names(uint32_t mask) {
  static const struct {
    uint32_t bit;
    const char* name;
  } kNames[] = {{KH_DTYPE_F32, "float32"}, {KH_DTYPE_F16, "float16"}, {KH_DTYPE_BF16, "bfloat16"},
                {KH_DTYPE_F64, "float64"}, {KH_DTYPE_I32, "int32"},   {KH_DTYPE_I64, "int64"},
                {KH_DTYPE_U8, "uint8"},    {KH_DTYPE_I8, "int8"},     {KH_DTYPE_BOOL, "bool"}};
  std::string out;
  for (const auto& n : kNames) {
    if (mask & n.bit) {
      if (!out.empty()) out += " or ";
      out += n.name;
    }
  }
  return out.empty() ? "(none)" : out;
}

}  // namespace kh::loader
