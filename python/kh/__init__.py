"""kh: Python binding (preview) of libkh, the kernel hub's host library.

    import kh, torch
    k = kh.load_kernel("kernels-community/rms-norm@1")      # resolve, fetch, verify, cache, load
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(4096, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    k.op("rms_norm")(out, x, w, 1e-6)                       # on torch's current stream

A thin ctypes layer over the C API in abi/include/kh/kh.h: kh.load_kernel() is
kh_load_kernel(), an op call is kh_op_call() (arguments checked against the op's schema
before the kernel runs). Tensors are borrowed through DLPack structs, never copied.
No dependency beyond the standard library; PyTorch, NumPy, CuPy... are only used when the
caller passes their arrays. See docs/python.md. The API may still change (preview).

libkh.so is found at $KH_LIBRARY, else beside this file, else on the dynamic loader's path.
"""
import ctypes
import os
import threading

from . import _abi, _tensors
from ._abi import (KH_OK, KH_ERROR_INVALID_ARGUMENT, KH_ERROR_NOT_FOUND, KH_ERROR_NETWORK,  # noqa: F401
                   KH_ERROR_VERIFICATION, KH_ERROR_BAD_METADATA, KH_ERROR_BAD_ARCHIVE, KH_ERROR_ABI_MISMATCH,
                   KH_ERROR_LOAD_FAILED, KH_ERROR_NO_COMPATIBLE_VARIANT, KH_ERROR_IO, KH_ERROR_OFFLINE,
                   KH_ERROR_UNSUPPORTED, KH_ERROR_DEVICE, KH_ERROR_INTERNAL, KH_ERROR_OUT_OF_MEMORY,
                   KH_ERROR_LOCKED, KH_ERROR_SIGNATURE, KH_ERROR_ROLLBACK, KH_ERROR_EXPIRED, KH_ERROR_TIMEOUT)

__all__ = ["load_kernel", "load_library", "trust", "Kernel", "Op", "BoundCall", "Error", "library_version",
           "library_path"]

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
                _lib = _abi.declare(lib)
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


class Op:
    """One op of a loaded package. Call it with the schema's arguments in order:
    tensors (PyTorch-like or __dlpack__), None for an omitted optional, bool, int, float
    (a double), str. stream: a CUDA/HIP stream (int handle, torch.cuda.Stream, CuPy
    stream); default: the current PyTorch (or CuPy) stream of the first GPU tensor, else
    the default stream. Raises kh.Error when the call is refused or fails."""

    def __init__(self, kernel, handle):
        self._kernel = kernel  # keeps the package loaded while the op is in use
        self._handle = handle
        lib = _library()
        self.name = lib.kh_op_name(handle).decode()
        self.schema = lib.kh_op_schema(handle).decode()
        self.num_args = lib.kh_op_num_args(handle)
        self._arguments = _tensors.schema_arguments(self.schema)

    def _fill(self, values, args, stream, keep):
        for i, a in enumerate(args):
            name, written = self._arguments[i] if i < len(self._arguments) else (f"#{i}", False)
            _tensors.fill_value(values[i], a, stream, keep, writable=written,
                                label=f"{self.name}: argument {i} '{name}'")

    def __call__(self, *args, stream=None):
        if self._kernel._handle is None:
            raise Error(KH_ERROR_INVALID_ARGUMENT, f"{self.name}: its kernel package was released")
        s = _tensors.stream_handle(stream) if stream is not None else _tensors.current_stream_for(args)
        values = (_abi.KhValue * len(args))()
        keep = []
        self._fill(values, args, s, keep)
        status = _library().kh_op_call(self._handle, values, len(args), s or None)
        del keep  # the borrowed DLTensors (and DLPack capsules) end with the call
        _check(status)

    def bind(self, *args, stream=None):
        """A BoundCall: this op with these arguments, converted once. Calling it repeats
        kh_op_call with the same kh_value array (the loader's checks still run on every
        call), without the per-call Python conversion of __call__. The tensors must stay
        alive, and keep their storage, as long as the BoundCall is used."""
        s = _tensors.stream_handle(stream) if stream is not None else _tensors.current_stream_for(args)
        return BoundCall(self, args, s)

    def __repr__(self):
        return f"<kh.Op {self.schema}>"


class BoundCall:
    """Op.bind()'s result: call() (or ()) runs the op again on the bound arguments and stream.
    For loops that repeat one call (benchmarks, decode steps on fixed buffers)."""

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
        if self._op._kernel._handle is None:
            raise Error(KH_ERROR_INVALID_ARGUMENT, f"{self._op.name}: its kernel package was released")
        _check(self._call(self._op._handle, self._values, self._nargs, self._stream))


class Kernel:
    """A loaded kernel package (kh_kernel*). Released by close(), `with`, or garbage collection;
    its ops must not be used afterwards."""

    def __init__(self, handle):
        self._handle = handle
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

    def op(self, name):
        """The op called `name`; kh.Error(KH_ERROR_NOT_FOUND) lists the package's ops if none is."""
        if self._handle is None:
            raise Error(KH_ERROR_INVALID_ARGUMENT, f"{self.name} was released")
        handle = ctypes.c_void_p()
        _check(_library().kh_kernel_find_op(self._handle, _bytes(name), ctypes.byref(handle)))
        return self.ops.get(name) or Op(self, handle.value)

    def close(self):
        if self._handle is not None and _lib is not None:
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


def _options(hub=None, cache_dir=None, variant=None, offline=False, lockfile=None, timeout=None, trusted_root=None):
    """A kh_load_options, and the buffer its trusted_root points into (keep both alive)."""
    opts = _abi.KhLoadOptions()
    opts.struct_size = ctypes.sizeof(_abi.KhLoadOptions)
    opts.flags = _abi.KH_LOAD_OFFLINE if offline else 0
    opts.hub = _bytes(hub)
    opts.cache_dir = _bytes(cache_dir)
    opts.variant = _bytes(variant)
    opts.lockfile = _bytes(lockfile)
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
                trusted_root=None):
    """kh_load_kernel(): resolves spec ("org/name", "org/name@1", "org/name@sha256:<hex>", ...)
    on the hub (default $KH_HUB), fetches and verifies the build that fits this machine (or
    `variant`, a variant key) into the cache (default $KH_CACHE, ...), loads it and returns a
    Kernel. offline=True: cache and cached metadata only. lockfile: resolve only what this
    kernels.lock pins. timeout: seconds the call may spend waiting on the hub and cache locks
    (default $KH_OPERATION_TIMEOUT); past it kh.Error(KH_ERROR_TIMEOUT), the cache as it was.
    trusted_root: the hub's root.json (bytes, or a path) that a fresh cache is pinned to; a
    cache pinned to another root fails naming both (docs/trust.md). Raises kh.Error."""
    lib = _library()
    opts, _root = _options(hub, cache_dir, variant, offline, lockfile, timeout, trusted_root)
    handle = ctypes.c_void_p()
    _check(lib.kh_load_kernel(_bytes(spec), ctypes.byref(opts), ctypes.byref(handle)))
    return Kernel(handle.value)


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
