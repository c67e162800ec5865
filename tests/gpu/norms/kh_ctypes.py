"""kh_ctypes.py: loads a kh kernel library with ctypes and calls its ops on PyTorch tensors.

Mirrors abi/include/kh/kernel_abi.h (ABI 1.0) and DLPack 0.6's DLTensor. Used by the GPU
norm tests (check_norms.py, bench_norms.py); knows nothing about norms itself.
"""
import ctypes
import os

KH_OK = 0
KH_VALUE_NONE, KH_VALUE_TENSOR, KH_VALUE_INT, KH_VALUE_DOUBLE, KH_VALUE_BOOL = 0, 1, 2, 3, 4
KH_ABI_VERSION = (1 << 16) | 0
KDL_CPU, KDL_CUDA = 1, 2
KDL_FLOAT, KDL_BFLOAT = 2, 4


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
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


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


class KhCallCtx(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
        ("stream", ctypes.c_void_p),
        ("error_buf", ctypes.c_char_p),
        ("error_buf_size", ctypes.c_size_t),
    ]


InvokeFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(KhValue), ctypes.c_uint32, ctypes.POINTER(KhCallCtx))


class KhOpDesc(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("schema", ctypes.c_char_p),
        ("invoke", InvokeFn),
        ("arg_constraints", ctypes.c_void_p),
    ]


class KhModuleDesc(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("abi_version", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("version", ctypes.c_char_p),
        ("variant", ctypes.c_char_p),
        ("device_type", ctypes.c_uint32),
        ("num_ops", ctypes.c_uint32),
        ("ops", ctypes.POINTER(KhOpDesc)),
    ]


class KhNegotiation(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("loader_min_abi", ctypes.c_uint32),
        ("loader_max_abi", ctypes.c_uint32),
        ("kernel_abi", ctypes.c_uint32),
        ("module", ctypes.POINTER(KhModuleDesc)),
    ]


def _dl_dtype(torch, dtype):
    return {
        torch.float32: DLDataType(KDL_FLOAT, 32, 1),
        torch.float16: DLDataType(KDL_FLOAT, 16, 1),
        torch.bfloat16: DLDataType(KDL_BFLOAT, 16, 1),
    }[dtype]


class PreparedCall:
    """One op call with its argument array built once, so timing loops pay only the call."""

    def __init__(self, lib, op, args):
        import torch

        self._torch = torch
        self._keep = []  # ctypes objects the argument array points into
        self.invoke = lib.ops[op]
        self.op = op
        self.values = (KhValue * len(args))()
        for i, a in enumerate(args):
            v = self.values[i]
            if a is None:
                v.kind = KH_VALUE_NONE
            elif isinstance(a, torch.Tensor):
                t = DLTensor()
                shape = (ctypes.c_int64 * a.dim())(*a.shape)
                strides = (ctypes.c_int64 * a.dim())(*a.stride())
                t.data = a.data_ptr()
                t.device = DLDevice(KDL_CUDA if a.is_cuda else KDL_CPU, a.device.index or 0)
                t.ndim = a.dim()
                t.dtype = _dl_dtype(torch, a.dtype)
                t.shape = shape
                t.strides = strides
                t.byte_offset = 0
                self._keep += [t, shape, strides, a]
                v.kind = KH_VALUE_TENSOR
                v.u.tensor = ctypes.pointer(t)
            elif isinstance(a, float):
                v.kind = KH_VALUE_DOUBLE
                v.u.d = a
            elif isinstance(a, bool):
                v.kind = KH_VALUE_BOOL
                v.u.b = int(a)
            elif isinstance(a, int):
                v.kind = KH_VALUE_INT
                v.u.i = a
            else:
                raise TypeError(f"unsupported argument {a!r}")
        self.error = ctypes.create_string_buffer(512)
        self.ctx = KhCallCtx(ctypes.sizeof(KhCallCtx), 0, None, ctypes.cast(self.error, ctypes.c_char_p), 512)
        self.nargs = len(args)

    def __call__(self, stream=None):
        """Runs the op on `stream` (a torch.cuda.Stream; None: the current stream)."""
        s = stream if stream is not None else self._torch.cuda.current_stream()
        self.ctx.stream = s.cuda_stream
        status = self.invoke(self.values, self.nargs, ctypes.byref(self.ctx))
        return status, self.error.value.decode(errors="replace")


class KhLibrary:
    """A kernel library: dlopen'ed with RTLD_LOCAL, negotiated, its ops by name."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.lib = ctypes.CDLL(self.path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        negotiate = self.lib.kh_kernel_negotiate
        negotiate.restype = ctypes.c_int32
        negotiate.argtypes = [ctypes.POINTER(KhNegotiation)]
        n = KhNegotiation(ctypes.sizeof(KhNegotiation), KH_ABI_VERSION, KH_ABI_VERSION, 0, None)
        status = negotiate(ctypes.byref(n))
        if status != KH_OK:
            raise RuntimeError(f"{path}: kh_kernel_negotiate returned {status}")
        m = n.module.contents
        self.name = m.name.decode()
        self.version = m.version.decode()
        self.variant = m.variant.decode()
        self.device_type = m.device_type
        self.ops = {}
        self.schemas = {}
        for i in range(m.num_ops):
            op = m.ops[i]
            self.ops[op.name.decode()] = op.invoke
            self.schemas[op.name.decode()] = op.schema.decode()

    def prepare(self, op, *args):
        return PreparedCall(self, op, args)

    def call(self, op, *args, stream=None):
        return PreparedCall(self, op, args)(stream)
