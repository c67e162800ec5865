"""kh: the Python binding of libkh, the kernel hub's host library.

    import kh, torch
    k = kh.load_kernel("kernels-community/rms-norm@1")      # resolve, fetch, verify, cache, load
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(4096, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    k.op("rms_norm")(out, x, w, 1e-6)                       # on torch's current stream

Over the C API in abi/include/kh/kh.h: kh.load_kernel() is kh_load_kernel() (through ctypes),
an op call is kh_op_call() (arguments checked against the op's schema before the kernel runs).
Calls go through the compiled extension kh._kh (python/src/_kh.c: arguments converted in C,
DLPack's C exchange API for PyTorch tensors) where it is present, as in the wheel; without it
(a source checkout on PYTHONPATH) through ctypes, converting in Python on every call
(kh.CALL_PATH says which). Tensors are borrowed, never copied. No dependency beyond the
standard library; PyTorch, NumPy, CuPy... are only used when the caller passes their arrays;
kh.torch registers ops with torch.library. See docs/python.md.

libkh.so is found at $KH_LIBRARY, else beside this file (the wheel bundles it), else on the
dynamic loader's path. KH_CALL_PATH=ctypes forces the ctypes call path.
"""
import ctypes
import json
import os
import threading

from . import _abi, _outputs, _tensors
from ._abi import (KH_OK, KH_ERROR_INVALID_ARGUMENT, KH_ERROR_NOT_FOUND, KH_ERROR_NETWORK,  # noqa: F401
                   KH_ERROR_VERIFICATION, KH_ERROR_BAD_METADATA, KH_ERROR_BAD_ARCHIVE, KH_ERROR_ABI_MISMATCH,
                   KH_ERROR_LOAD_FAILED, KH_ERROR_NO_COMPATIBLE_VARIANT, KH_ERROR_IO, KH_ERROR_OFFLINE,
                   KH_ERROR_UNSUPPORTED, KH_ERROR_DEVICE, KH_ERROR_INTERNAL, KH_ERROR_OUT_OF_MEMORY,
                   KH_ERROR_LOCKED, KH_ERROR_SIGNATURE, KH_ERROR_ROLLBACK, KH_ERROR_EXPIRED, KH_ERROR_TIMEOUT)

__all__ = ["load_kernel", "load_library", "trust", "Kernel", "Op", "BoundCall", "Error", "library_version",
           "library_path", "CALL_PATH"]

# The compiled call path, unless it is missing or KH_CALL_PATH=ctypes asks for the fallback.
_ext = None
if os.environ.get("KH_CALL_PATH", "") != "ctypes":
    try:
        from . import _kh as _ext
    except ImportError:
        _ext = None
CALL_PATH = "extension" if _ext is not None else "ctypes"

_lib = None
_lib_path = None
_lib_lock = threading.Lock()


def _find_library():
    env = os.environ.get("KH_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libkh.so", "libkh.so.0"):
        p = os.path.join(here, name)
        if os.path.exists(p):
            return p
    return "libkh.so.0"  # the dynamic loader's search path (LD_LIBRARY_PATH, ld.so.cache)


def _library():
    global _lib, _lib_path
    if _lib is None:
        with _lib_lock:
            if _lib is None:
                path = _find_library()
                try:
                    lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
                except OSError as e:
                    raise OSError(f"kh: cannot load libkh ({path}): {e}; set KH_LIBRARY to the path of "
                                  "libkh.so (e.g. build/release/loader/libkh.so)") from e
                _lib_path = path
                _abi.declare(lib)
                if _ext is not None:
                    address = lambda f: ctypes.cast(f, ctypes.c_void_p).value  # noqa: E731
                    _ext._setup(address(lib.kh_op_call), address(lib.kh_last_error), Error, _tensors.describe,
                                _tensors.current_stream_of)
                _lib = lib
    return _lib


def library_path():
    """The libkh this module loaded (loading it if needed)."""
    _library()
    return _lib_path


def library_version():
    """(kh_version_string(), (abi major, abi minor)) of the loaded libkh."""
    lib = _library()
    abi = lib.kh_abi_version()
    return lib.kh_version_string().decode(), (abi >> 16, abi & 0xFFFF)


class Error(RuntimeError):
    """A failed kh call: status (a KH_* code), status_name ("KH_ERROR_NOT_FOUND") and message
    (kh_last_error() of the failing call: what failed, on which input)."""

    def __init__(self, status, message):
        self.status = int(status)
        self.status_name = _library().kh_status_string(self.status).decode()
        self.message = message
        super().__init__(f"{self.status_name}: {message}")

    @classmethod
    def _last(cls, status):
        return cls(status, (_library().kh_last_error() or b"").decode("utf-8", "replace"))


def _check(status):
    if status != KH_OK:
        raise Error._last(status)


def _bytes(s):
    return None if s is None else os.fsencode(s) if isinstance(s, os.PathLike) else str(s).encode("utf-8")


class _CtypesCaller:
    """The call path where the compiled extension kh._kh is absent: every call converts its
    arguments in Python into ctypes kh_value/DLTensor structs (tens of microseconds a call)."""

    def _setup(self, handle, name, arg_names, written, device_type):  # pylint: disable=unused-argument
        self._op_handle = handle
        self._op_name = name
        self._labels = [f"{name}: argument {i} '{n}'" for i, n in enumerate(arg_names)]
        self._written = tuple(written)

    def _release(self):
        self._op_handle = None

    def _check_live(self):
        if self._op_handle is None:
            raise Error(KH_ERROR_INVALID_ARGUMENT, f"{self._op_name}: its kernel package was released")

    def _fill(self, values, args, stream, keep):
        for i, a in enumerate(args):
            label = self._labels[i] if i < len(self._labels) else f"{self._op_name}: argument {i}"
            written = self._written[i] if i < len(self._written) else False
            _tensors.fill_value(values[i], a, stream, keep, writable=written, label=label)

    def __call__(self, *args, stream=None):
        self._check_live()
        s = _tensors.stream_handle(stream) if stream is not None else _tensors.current_stream_for(args)
        values = (_abi.KhValue * len(args))()
        keep = []
        self._fill(values, args, s, keep)
        status = _library().kh_op_call(self._op_handle, values, len(args), s or None)
        del keep  # the borrowed DLTensors (and DLPack capsules) end with the call
        _check(status)

    def bind(self, *args, stream=None):
        """A BoundCall: this op with these arguments, converted once. Calling it repeats
        kh_op_call with the same kh_value array (the loader's checks still run on every
        call), without the per-call conversion. The tensors must stay alive, and keep their
        storage, as long as the BoundCall is used."""
        self._check_live()
        s = _tensors.stream_handle(stream) if stream is not None else _tensors.current_stream_for(args)
        return _CtypesBoundCall(self, args, s)


class _CtypesBoundCall:
    """Op.bind()'s result on the ctypes call path: calling it runs the op again on the bound
    arguments and stream."""

    def __init__(self, op, args, stream):
        self._op = op
        self._args = args  # the Python objects whose memory the DLTensors borrow
        self._values = (_abi.KhValue * len(args))()
        self._keep = []
        op._fill(self._values, args, stream, self._keep)
        self._nargs = len(args)
        self._stream = stream or None
        self._call = _library().kh_op_call

    def __call__(self):
        self._op._check_live()
        _check(self._call(self._op._op_handle, self._values, self._nargs, self._stream))

    def __repr__(self):
        return f"<kh.BoundCall {self._op._op_name}, {self._nargs} arguments>"


_Caller = _ext.OpCaller if _ext is not None else _CtypesCaller
BoundCall = _ext.BoundCall if _ext is not None else _CtypesBoundCall


class Op(_Caller):
    """One op of a loaded package. Call it with the schema's arguments in order:
    tensors (PyTorch, NumPy, CuPy, anything with __dlpack__), None for an omitted optional,
    bool, int, float (a double), str; trailing arguments with schema defaults may be left
    out. stream: a CUDA/HIP stream (int handle, torch.cuda.Stream, CuPy stream); default:
    the current PyTorch (or CuPy) stream of the first GPU tensor, else the default stream.
    Raises kh.Error when the call is refused or fails. op.bind(*args) converts the arguments
    once and returns a BoundCall that repeats the call."""

    def __init__(self, kernel, handle):  # pylint: disable=super-init-not-called
        self._kernel = kernel  # keeps the package loaded while the op is in use
        self._handle = handle
        lib = _library()
        self.name = lib.kh_op_name(handle).decode()
        self.schema = lib.kh_op_schema(handle).decode()
        self.num_args = lib.kh_op_num_args(handle)
        self._arguments = _tensors.schema_arguments(self.schema)
        self._setup(handle, self.name, tuple(n for n, _ in self._arguments), tuple(w for _, w in self._arguments),
                    kernel.device_type)

    @property
    def written(self):
        """The names of the arguments this op writes (Tensor(a!) in its schema)."""
        return tuple(n for n, w in self._arguments if w)

    @property
    def workspace_arg(self):
        """The schema index of the op's workspace argument (kh_op_workspace_arg), -1 when none."""
        lib = _library()
        return lib.kh_op_workspace_arg(self._handle) if hasattr(lib, "kh_op_workspace_arg") else -1

    def workspace_size(self, *args):
        """The bytes of workspace a call with these arguments needs, from the op itself
        (kh_op_workspace_size): the call's arguments with the workspace None. Raises kh.Error
        (KH_ERROR_UNSUPPORTED when the op does not answer: it takes no workspace, or its library
        or this libkh predate the query). Converted in Python; the functional forms ask once per argument signature."""
        lib = _library()
        if not hasattr(lib, "kh_op_workspace_size"):
            raise Error(KH_ERROR_UNSUPPORTED, f"{self.name}: this libkh has no kh_op_workspace_size (upgrade kh)")
        values = (_abi.KhValue * len(args))()
        keep = []
        for i, a in enumerate(args):
            name = self._arguments[i][0] if i < len(self._arguments) else str(i)
            _tensors.fill_value(values[i], a, None, keep, writable=False, label=f"{self.name}: argument {i} '{name}'")
        size = ctypes.c_uint64(0)
        status = lib.kh_op_workspace_size(self._handle, values, len(args), ctypes.byref(size))
        del keep
        _check(status)
        return size.value

    def __repr__(self):
        return f"<kh.Op {self.schema}>"


class Kernel:
    """A loaded kernel package (kh_kernel*). Released by close(), `with`, or garbage collection;
    its ops must not be used afterwards."""

    def __init__(self, handle, device=(0, 0)):
        self._handle = handle
        self.device = device  # (DLPack device type, id) it was loaded for; (0, 0): the default
        lib = _library()
        self.name = lib.kh_kernel_name(handle).decode()
        self.version = lib.kh_kernel_version(handle).decode()
        self.variant = lib.kh_kernel_variant(handle).decode()
        self.path = lib.kh_kernel_path(handle).decode()
        self.device_type = lib.kh_kernel_device_type(handle)  # DLDeviceType: 1 cpu, 2 cuda, 10 rocm
        ops = {}
        for i in range(lib.kh_kernel_num_ops(handle)):
            op = Op(self, lib.kh_kernel_op_at(handle, i))
            ops[op.name] = op
        self.ops = ops  # name -> Op, in the module's order
        self._issued = list(ops.values())

    def op(self, name):
        """The op called `name`; kh.Error(KH_ERROR_NOT_FOUND) lists the package's ops if none is."""
        if self._handle is None:
            raise Error(KH_ERROR_INVALID_ARGUMENT, f"{self.name} was released")
        handle = ctypes.c_void_p()
        _check(_library().kh_kernel_find_op(self._handle, _bytes(name), ctypes.byref(handle)))
        op = self.ops.get(name)
        if op is None:
            op = Op(self, handle.value)
            self._issued.append(op)
        return op

    @property
    def manifest(self):
        """The package's kh-manifest.json (name, version, variant, ops with their argument docs:
        shapes, dtypes), or None for a library loaded by path (kh.load_library)."""
        path = os.path.join(self.path, "kh-manifest.json")
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def functional(self, name):
        """The functional form of op `name` on NumPy arrays: takes the op's arguments less those it
        writes, allocates its outputs (and workspaces, as the op sizes them) with numpy.empty, copies
        the arguments it writes in place, calls the op and returns what it wrote (one array or a
        tuple). Planned from the package's manifest (kh._outputs); kh.torch has the same for torch."""
        op = self.op(name)
        plan = _outputs.plan_for(op, self.manifest)
        arrays = _outputs.NumpyArrays()

        def functional(*args, **kwargs):
            return _outputs.call_functional(plan, op, arrays, args, kwargs, query=op.workspace_size)

        functional.__name__ = name
        functional.__doc__ = repr(plan)
        functional.plan = plan
        return functional

    def close(self):
        """Releases the package (kh_kernel_release); its ops and their BoundCalls raise kh.Error after."""
        if self._handle is not None:
            for op in self._issued:
                op._release()
            if _lib is not None:
                _lib.kh_kernel_release(self._handle)
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def __repr__(self):
        return f"<kh.Kernel {self.name} {self.version} {self.variant} ops={list(self.ops)}>"


def _root_bytes(root):
    """A root of trust given as bytes (root.json's content) or as a path to it."""
    if root is None or isinstance(root, (bytes, bytearray)):
        return None if root is None else bytes(root)
    with open(root, "rb") as f:
        return f.read()


# Device names load_kernel understands -> DLPack device type (kh_load_options.device_type).
_GPU_DEVICE_TYPES = {"cuda": _abi.kDLCUDA, "rocm": _abi.kDLROCM, "hip": _abi.kDLROCM}


def _device_request(device):
    """(device_type, device_id) of kh_load_options from `device`: None (the first GPU, else the
    CPU build), an int (that ordinal of any GPU backend), "cuda", "cuda:1", "rocm:0", a
    torch.device, or a DLPack (device_type, device_id) pair such as tensor.__dlpack_device__()."""
    if device is None:
        return 0, 0
    if isinstance(device, bool):
        raise TypeError("kh: device=True/False: give a device such as 'cuda:0', an int or (device_type, id)")
    if isinstance(device, int):
        kind, index = 0, device
    elif isinstance(device, tuple) and len(device) == 2:
        kind, index = int(device[0]), int(device[1])
        if kind == _abi.kDLCPU:
            kind = "cpu"
    else:
        name, _, index_text = str(device).partition(":")
        if name != "cpu" and name not in _GPU_DEVICE_TYPES:
            raise ValueError(f"kh: device={device!r}: give 'cuda', 'cuda:N', 'rocm:N', an int, a torch.device or a "
                             "DLPack (device_type, device_id) pair")
        kind = "cpu" if name == "cpu" else _GPU_DEVICE_TYPES[name]
        index = int(index_text) if index_text else (getattr(device, "index", None) or 0)
    if kind == "cpu":
        raise ValueError("kh: device='cpu': libkh selects builds for a GPU (kh_load_options.device_type is a GPU "
                         "backend); a machine without a GPU gets the CPU build by default, and variant='cpu-...' "
                         "(a CPU variant key, see `kernels info`) forces it on one with a GPU")
    if index < 0:
        raise ValueError(f"kh: device={device!r}: a device index is 0 or more")
    return kind, index


def _options(hub=None, cache_dir=None, variant=None, offline=False, lockfile=None, timeout=None, trusted_root=None,
             device=None):
    """A kh_load_options, and the buffer its trusted_root points into (keep both alive)."""
    opts = _abi.KhLoadOptions()
    opts.struct_size = ctypes.sizeof(_abi.KhLoadOptions)
    opts.flags = _abi.KH_LOAD_OFFLINE if offline else 0
    opts.hub = _bytes(hub)
    opts.cache_dir = _bytes(cache_dir)
    opts.variant = _bytes(variant)
    opts.lockfile = _bytes(lockfile)
    opts.device_type, opts.device_id = _device_request(device)
    if timeout is not None:
        if not timeout > 0:
            raise ValueError(f"kh: timeout={timeout!r}: give the seconds the call may take, above 0")
        opts.timeout_ms = max(1, min(int(round(timeout * 1000)), 0xFFFFFFFF))
    root = _root_bytes(trusted_root)
    buf = None
    if root is not None:
        buf = ctypes.create_string_buffer(root, len(root))
        opts.trusted_root = ctypes.cast(buf, ctypes.c_void_p)
        opts.trusted_root_size = len(root)
    return opts, buf


def load_kernel(spec, hub=None, cache_dir=None, variant=None, offline=False, lockfile=None, timeout=None,
                trusted_root=None, device=None):
    """kh_load_kernel(): resolves spec ("org/name", "org/name@1", "org/name@sha256:<hex>", ...)
    on the hub (default $KH_HUB), fetches and verifies the build that fits this machine (or
    `variant`, a variant key) into the cache (default $KH_CACHE, ...), loads it and returns a
    Kernel. offline=True: cache and cached metadata only. lockfile: resolve only what this
    kernels.lock pins. timeout: seconds the call may spend waiting on the hub and cache locks
    (default $KH_OPERATION_TIMEOUT); past it kh.Error(KH_ERROR_TIMEOUT), the cache as it was.
    trusted_root: the hub's root.json (bytes, or a path) that a fresh cache is pinned to; a
    cache pinned to another root fails naming both (docs/trust.md). device: the GPU to select
    the build for (kh_load_options.device_type/device_id): "cuda:1", "rocm:0", an int (that
    ordinal of any backend), a torch.device or a DLPack (device_type, device_id) pair; default
    the first GPU, else the CPU build. Raises kh.Error."""
    lib = _library()
    opts, _root = _options(hub, cache_dir, variant, offline, lockfile, timeout, trusted_root, device)
    handle = ctypes.c_void_p()
    _check(lib.kh_load_kernel(_bytes(spec), ctypes.byref(opts), ctypes.byref(handle)))
    return Kernel(handle.value, (opts.device_type, opts.device_id))


def trust(root, hub=None, cache_dir=None):
    """kh_trust_root(): pins `root` (root.json's bytes, or a path to it) as the root of trust
    of `hub` (default $KH_HUB) in the cache (default $KH_CACHE, ...), as `kernels trust` does,
    fetching nothing. The same root again is fine; a cache pinned to another root for the hub
    raises kh.Error(KH_ERROR_SIGNATURE) naming both."""
    opts, _root = _options(hub=hub, cache_dir=cache_dir, trusted_root=root)
    _check(_library().kh_trust_root(ctypes.byref(opts)))


def load_library(path):
    """kh_load_kernel_library(): loads a kernel library file with no hub, cache or
    verification (for kernel authors and tests)."""
    handle = ctypes.c_void_p()
    _check(_library().kh_load_kernel_library(_bytes(os.fspath(path)), ctypes.byref(handle)))
    return Kernel(handle.value)
