"""kh._abi: ctypes mirrors of the C structs and constants in abi/include/kh/kh.h and
kernel_abi.h (ABI 1.0), DLPack's DLTensor, and the prototypes of libkh.so's exports.

Field order and types must match the headers exactly; the headers are the truth. Structs
that begin with struct_size are only ever appended to there, and must be here too.
"""
import ctypes

# Status codes (kernel_abi.h). Values never change meaning.
KH_OK = 0
KH_ERROR_INVALID_ARGUMENT = 1
KH_ERROR_NOT_FOUND = 2
KH_ERROR_NETWORK = 3
KH_ERROR_VERIFICATION = 4
KH_ERROR_BAD_METADATA = 5
KH_ERROR_BAD_ARCHIVE = 6
KH_ERROR_ABI_MISMATCH = 7
KH_ERROR_LOAD_FAILED = 8
KH_ERROR_NO_COMPATIBLE_VARIANT = 9
KH_ERROR_IO = 10
KH_ERROR_OFFLINE = 11
KH_ERROR_UNSUPPORTED = 12
KH_ERROR_DEVICE = 13
KH_ERROR_INTERNAL = 14
KH_ERROR_OUT_OF_MEMORY = 15
KH_ERROR_LOCKED = 16
KH_ERROR_SIGNATURE = 17
KH_ERROR_ROLLBACK = 18
KH_ERROR_EXPIRED = 19
KH_ERROR_TIMEOUT = 20

# kh_value_kind
KH_VALUE_NONE = 0
KH_VALUE_TENSOR = 1
KH_VALUE_INT = 2
KH_VALUE_DOUBLE = 3
KH_VALUE_BOOL = 4
KH_VALUE_STRING = 5

# kh_load_options.flags
KH_LOAD_OFFLINE = 1 << 0

# DLPack device types and dtype codes
kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLCUDAManaged = 13
kDLROCM = 10
kDLInt = 0
kDLUInt = 1
kDLFloat = 2
kDLBfloat = 4
kDLBool = 6


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),  # in elements; NULL: compact row-major
        ("byte_offset", ctypes.c_uint64),
    ]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    """The legacy ("dltensor") capsule payload of __dlpack__()."""
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    """The DLPack >= 1.0 ("dltensor_versioned") capsule payload."""
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


class _ValueUnion(ctypes.Union):
    _fields_ = [
        ("tensor", ctypes.POINTER(DLTensor)),
        ("i", ctypes.c_int64),
        ("d", ctypes.c_double),
        ("b", ctypes.c_int32),
        ("s", ctypes.c_char_p),
    ]


class KhValue(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint32), ("reserved", ctypes.c_uint32), ("u", _ValueUnion)]


class KhLoadOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("hub", ctypes.c_char_p),
        ("cache_dir", ctypes.c_char_p),
        ("variant", ctypes.c_char_p),
        ("lockfile", ctypes.c_char_p),
        # appended: the device (DLPack device type and id; 0, 0: the first GPU)
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        # appended: the operation's deadline (ms; 0: KH_OPERATION_TIMEOUT) and a root of trust
        ("timeout_ms", ctypes.c_uint32),
        ("trusted_root", ctypes.c_void_p),  # root.json's bytes (trusted_root_size of them)
        ("trusted_root_size", ctypes.c_size_t),
    ]


def declare(lib):
    """Sets argtypes/restype of every libkh.so export this package calls."""
    P = ctypes.c_void_p  # kh_kernel*, const kh_op*: opaque handles
    protos = {
        "kh_load_kernel": (ctypes.c_int32, [ctypes.c_char_p, ctypes.POINTER(KhLoadOptions), ctypes.POINTER(P)]),
        "kh_trust_root": (ctypes.c_int32, [ctypes.POINTER(KhLoadOptions)]),
        "kh_load_kernel_library": (ctypes.c_int32, [ctypes.c_char_p, ctypes.POINTER(P)]),
        "kh_kernel_release": (None, [P]),
        "kh_kernel_name": (ctypes.c_char_p, [P]),
        "kh_kernel_version": (ctypes.c_char_p, [P]),
        "kh_kernel_variant": (ctypes.c_char_p, [P]),
        "kh_kernel_path": (ctypes.c_char_p, [P]),
        "kh_kernel_device_type": (ctypes.c_int32, [P]),
        "kh_kernel_num_ops": (ctypes.c_uint32, [P]),
        "kh_kernel_op_at": (P, [P, ctypes.c_uint32]),
        "kh_kernel_find_op": (ctypes.c_int32, [P, ctypes.c_char_p, ctypes.POINTER(P)]),
        "kh_op_name": (ctypes.c_char_p, [P]),
        "kh_op_schema": (ctypes.c_char_p, [P]),
        "kh_op_num_args": (ctypes.c_uint32, [P]),
        "kh_op_call": (ctypes.c_int32, [P, ctypes.POINTER(KhValue), ctypes.c_uint32, P]),
        "kh_op_workspace_size": (ctypes.c_int32, [P, ctypes.POINTER(KhValue), ctypes.c_uint32,
                                                  ctypes.POINTER(ctypes.c_uint64)]),
        "kh_op_workspace_arg": (ctypes.c_int32, [P]),
        "kh_status_string": (ctypes.c_char_p, [ctypes.c_int32]),
        "kh_last_error": (ctypes.c_char_p, []),
        "kh_abi_version": (ctypes.c_uint32, []),
        "kh_version_string": (ctypes.c_char_p, []),
    }
    # A libkh older than these answers no workspace query (Op.workspace_size says so).
    optional = {"kh_op_workspace_size", "kh_op_workspace_arg"}
    for name, (restype, argtypes) in protos.items():
        if name in optional and not hasattr(lib, name):
            continue
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib
