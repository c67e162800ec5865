"""kh._tensors: Python values -> kh_value arguments; tensors -> borrowed DLTensors.

Tensors are borrowed, never copied: the DLTensor points at the caller's memory and lives
only for the call. Two kinds of tensor objects are understood:
  - PyTorch-like: data_ptr(), shape, stride() (in elements), dtype and device. Read
    directly (no DLPack capsule), so bfloat16 and views with any strides work.
  - Host arrays with __array_interface__ (NumPy): read from the interface, so read-only
    arrays work as inputs (DLPack exports refuse them); an op's outputs must be writable.
  - Anything else with __dlpack__() / __dlpack_device__() (CuPy, JAX, ...): the capsule's
    DLTensor is passed as is and the capsule is kept alive until the call returns.
"""
import ctypes
import numbers
import sys

from . import _abi
from ._schema import schema_args

# dtype name (the last part of str(dtype), e.g. "torch.bfloat16" -> "bfloat16") -> (code, bits)
_DTYPES = {
    "float32": (_abi.kDLFloat, 32), "float": (_abi.kDLFloat, 32),
    "float16": (_abi.kDLFloat, 16), "half": (_abi.kDLFloat, 16),
    "bfloat16": (_abi.kDLBfloat, 16),
    "float64": (_abi.kDLFloat, 64), "double": (_abi.kDLFloat, 64),
    "int8": (_abi.kDLInt, 8), "int16": (_abi.kDLInt, 16), "int32": (_abi.kDLInt, 32), "int64": (_abi.kDLInt, 64),
    "uint8": (_abi.kDLUInt, 8),
    "bool": (_abi.kDLBool, 8),
}
_DEVICE_TYPES = {"cpu": _abi.kDLCPU, "cuda": _abi.kDLCUDA}

_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _is_torch_like(obj):
    return hasattr(obj, "data_ptr") and hasattr(obj, "stride") and hasattr(obj, "dtype") and hasattr(obj, "device")


def _device_of(obj):
    """(DLDeviceType, index) of a tensor object."""
    if hasattr(obj, "__dlpack_device__"):
        dev_type, dev_id = obj.__dlpack_device__()
        return int(dev_type), int(dev_id)
    dev = obj.device
    kind = getattr(dev, "type", str(dev))
    if kind not in _DEVICE_TYPES:
        raise TypeError(f"kh: tensors on device '{kind}' are not supported (cpu or cuda)")
    return _DEVICE_TYPES[kind], getattr(dev, "index", None) or 0


def _torch_like_tensor(obj, keep):
    name = str(obj.dtype).rsplit(".", 1)[-1]
    if name not in _DTYPES:
        raise TypeError(f"kh: dtype {obj.dtype} has no DLPack mapping here")
    code, bits = _DTYPES[name]
    dims = tuple(int(s) for s in obj.shape)
    shape = (ctypes.c_int64 * len(dims))(*dims)
    strides = (ctypes.c_int64 * len(dims))(*(int(s) for s in obj.stride()))
    dev_type, dev_id = _device_of(obj)
    t = _abi.DLTensor(ctypes.c_void_p(obj.data_ptr()), _abi.DLDevice(dev_type, dev_id), len(dims),
                      _abi.DLDataType(code, bits, 1), shape, strides, 0)
    keep += (t, shape, strides)
    return ctypes.pointer(t)


# __array_interface__ typestr kind -> DLPack type code
_TYPESTR_CODES = {"f": _abi.kDLFloat, "i": _abi.kDLInt, "u": _abi.kDLUInt, "b": _abi.kDLBool}


def _array_interface_tensor(obj, keep, writable, label):
    """A host array (NumPy) as a borrowed DLTensor on the CPU, from __array_interface__."""
    ai = obj.__array_interface__
    pointer, read_only = ai["data"]
    if read_only and writable:
        raise TypeError(f"kh: {label} is read-only, but the op writes it: pass a writable array")
    typestr = ai["typestr"]
    if typestr[0] not in "<|=" or typestr[1] not in _TYPESTR_CODES:
        raise TypeError(f"kh: {label}: array type {typestr} has no DLPack mapping here (little-endian numbers only)")
    code, bits = _TYPESTR_CODES[typestr[1]], 8 * int(typestr[2:])
    dims = tuple(int(d) for d in ai["shape"])
    shape = (ctypes.c_int64 * len(dims))(*dims)
    strides = None
    if ai.get("strides") is not None:
        item = bits // 8
        if any(int(st) % item for st in ai["strides"]):
            raise TypeError(f"kh: {label}: strides {ai['strides']} are not whole elements")
        strides = (ctypes.c_int64 * len(dims))(*(int(st) // item for st in ai["strides"]))
    t = _abi.DLTensor(ctypes.c_void_p(pointer), _abi.DLDevice(_abi.kDLCPU, 0), len(dims),
                      _abi.DLDataType(code, bits, 1), shape, strides, 0)
    keep += (obj, t, shape, strides)
    return ctypes.pointer(t)


def _dlpack_tensor(obj, stream, keep):
    dev_type, _ = obj.__dlpack_device__()
    kwargs = {}
    if int(dev_type) in (_abi.kDLCUDA, _abi.kDLCUDAManaged, _abi.kDLROCM) and stream is not None:
        # The producer makes its pending work visible to this stream (DLPack's stream rule;
        # 1 names CUDA's legacy default stream, which NULL means to kh).
        kwargs["stream"] = stream or 1
    capsule = obj.__dlpack__(**kwargs)
    keep.append(capsule)  # an unconsumed capsule frees the tensor when it goes away
    if _capsule_is_valid(capsule, b"dltensor"):
        managed = _abi.DLManagedTensor.from_address(_capsule_get_pointer(capsule, b"dltensor"))
    elif _capsule_is_valid(capsule, b"dltensor_versioned"):
        managed = _abi.DLManagedTensorVersioned.from_address(_capsule_get_pointer(capsule, b"dltensor_versioned"))
    else:
        raise TypeError(f"kh: {type(obj).__name__}.__dlpack__() returned no DLPack capsule")
    keep.append(managed)
    return ctypes.pointer(managed.dl_tensor)


def fill_value(value, arg, stream, keep, writable=False, label="argument"):
    """Sets kh_value `value` from Python `arg`; appends what must outlive the call to keep.
    writable: the op writes this argument (a read-only array is refused); label names it."""
    if arg is None:
        value.kind = _abi.KH_VALUE_NONE
    elif isinstance(arg, bool) or type(arg).__name__ == "bool_":
        value.kind = _abi.KH_VALUE_BOOL
        value.u.b = 1 if arg else 0
    elif isinstance(arg, numbers.Integral):
        value.kind = _abi.KH_VALUE_INT
        value.u.i = int(arg)
    elif isinstance(arg, numbers.Real):
        value.kind = _abi.KH_VALUE_DOUBLE
        value.u.d = float(arg)
    elif isinstance(arg, str):
        b = arg.encode("utf-8")
        keep.append(b)
        value.kind = _abi.KH_VALUE_STRING
        value.u.s = b
    elif _is_torch_like(arg):
        value.kind = _abi.KH_VALUE_TENSOR
        value.u.tensor = _torch_like_tensor(arg, keep)
    elif hasattr(arg, "__array_interface__"):
        value.kind = _abi.KH_VALUE_TENSOR
        value.u.tensor = _array_interface_tensor(arg, keep, writable, label)
    elif hasattr(arg, "__dlpack__"):
        value.kind = _abi.KH_VALUE_TENSOR
        value.u.tensor = _dlpack_tensor(arg, stream, keep)
    else:
        raise TypeError(f"kh: cannot pass {type(arg).__name__} to an op "
                        "(tensors, None, bool, int, float and str are understood)")


def describe(obj, writable, label):
    """The compiled call path's slow path (kh._kh, python/src/_kh.c): a PyTorch-like tensor without
    DLPack's C exchange API, or a host array with __array_interface__, as plain numbers:
    (data, device_type, device_id, code, bits, lanes, shape, strides or None, byte_offset, keep),
    strides in elements; keep holds what must outlive the call."""
    keep = []
    if _is_torch_like(obj):
        t = _torch_like_tensor(obj, keep).contents
    else:
        t = _array_interface_tensor(obj, keep, writable, label).contents
    shape = tuple(t.shape[d] for d in range(t.ndim))
    strides = None if not t.strides else tuple(t.strides[d] for d in range(t.ndim))
    return (t.data or 0, t.device.device_type, t.device.device_id, t.dtype.code, t.dtype.bits, t.dtype.lanes,
            shape, strides, t.byte_offset, (obj, keep))


def current_stream_of(obj):
    """The current stream of a GPU tensor's framework (PyTorch, CuPy) as an int, else None."""
    return current_stream_for((obj,))


def schema_arguments(schema):
    """[(name, written)] of an op schema "name(Tensor(a!) out, Tensor x, ...) -> ()":
    written is True for the arguments the op writes (an alias annotation with '!')."""
    return [(a.name, a.written) for a in schema_args(schema)]


def stream_handle(stream):
    """A cudaStream_t / hipStream_t as an int (0: the default stream) from an int, a
    torch.cuda.Stream (.cuda_stream), a CuPy stream (.ptr) or a ctypes pointer."""
    if stream is None:
        return None
    if isinstance(stream, numbers.Integral):
        return int(stream)
    for attr in ("cuda_stream", "ptr", "value"):
        if hasattr(stream, attr):
            v = getattr(stream, attr)
            return int(v or 0)
    raise TypeError(f"kh: cannot use {type(stream).__name__} as a stream (an int or an object with .cuda_stream)")


def current_stream_for(args):
    """The stream a call uses when the caller names none: the current PyTorch (or CuPy)
    stream of the first GPU tensor's device, else None (the default stream)."""
    for a in args:
        if a is None or isinstance(a, (numbers.Number, str)):
            continue
        module = type(a).__module__.split(".", 1)[0]
        if module == "torch" and _is_torch_like(a) and a.device.type == "cuda":
            return sys.modules["torch"].cuda.current_stream(a.device).cuda_stream
        if module == "cupy" and hasattr(a, "__dlpack__"):
            return sys.modules["cupy"].cuda.get_current_stream().ptr
    return None
