"""kh.torch: the ops of a loaded kh package as PyTorch custom operators (torch.library), so that
torch.compile(fullgraph=True) traces code that calls them and CUDA graphs capture them.

    import torch, kh.torch
    norm = kh.torch.load("kernels-community/rms-norm@1")          # kh.load_kernel + register
    y = norm.rms_norm(x, w, 1e-6)                                  # functional: allocates out
    torch.ops.kh_kernels_community__rms_norm_v1.rms_norm(out, x, w, 1e-6)   # the op as kh defines it

Per package and major version, one torch.library namespace: kh_<org>__<name>_v<major>, '-' and
'.' written '_' (kernels-community/rms-norm@1.2 -> kh_kernels_community__rms_norm_v1), so two
packages, or two majors of one, coexist. In it, for every op of the package:
  - <op>: the op with kh's schema as is (PyTorch's schema syntax: Tensor(a!) marks what it writes),
    implemented by the kh op for the dispatch key of the build (CPU; CUDA, also for ROCm); its
    fake (meta) implementation returns nothing, which is all a schema whose outputs are the
    written arguments needs: torch.compile functionalizes the writes.
  - <op>_functional: the op's functional form (kh._outputs): the arguments less what the op
    writes; allocates outputs (out, lse, ...) and workspaces (as the op sizes them:
    kh_op_workspace_size; the docs' rule in traced code), copies what the op writes in place
    (rotary_embedding's query and key, both required here), returns the written tensors. Its fake implementation
    allocates the same shapes as empty tensors, so tracing never runs a kernel.
Both are tagged needs_fixed_stride_order (kh ops want their last dim contiguous and take the
strides they are given). The Package that register()/load() return has the functional forms as
attributes (package.rms_norm) and the namespace as package.ops.

Loading the same package for another device (device="cuda:1") adds that build for the tensors of
that device: the CUDA implementation picks the kh op by the device of the call's first tensor.
Registering again for a device replaces the build used there.
"""
import re
import threading

import torch

from . import Error, KH_ERROR_INVALID_ARGUMENT, _outputs, _schema, load_kernel

__all__ = ["load", "register", "namespace_for", "Package"]

_lock = threading.Lock()
_namespaces = {}  # namespace -> _Namespace

# DLDeviceType of a kh build -> the PyTorch dispatch key its kernels serve (ROCm tensors are "cuda").
_DISPATCH_KEYS = {1: "CPU", 2: "CUDA", 10: "CUDA"}
_TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
                 "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8,
                 "bool": torch.bool}
_DTYPE_NAMES = {v: k for k, v in _TORCH_DTYPES.items()}
_TAGS = tuple(t for t in (getattr(torch.Tag, "needs_fixed_stride_order", None),) if t is not None)


def namespace_for(name, version):
    """kh_<org>__<name>_v<major> of a package name ("org/name") and version ("1.2.0")."""
    org, _, pkg = name.partition("/")
    major = str(version).split(".", 1)[0]

    def clean(s):
        return re.sub(r"[^0-9a-z]", "_", s.lower())
    return f"kh_{clean(org)}__{clean(pkg)}_v{major}"


class _TorchArrays:
    """kh._outputs' allocator for torch tensors (also fake tensors, while tracing)."""

    @staticmethod
    def empty(shape, dtype, like):
        return torch.empty(shape, dtype=_TORCH_DTYPES[dtype], device=like.device)

    @staticmethod
    def clone(x):
        return x.clone()

    @staticmethod
    def shape(x):
        return tuple(x.shape)

    @staticmethod
    def dtype_name(x):
        return _DTYPE_NAMES.get(x.dtype, str(x.dtype))


class _DeviceOps:
    """The kh ops of one op name behind one dispatch key, by device index; called by the dispatcher."""

    def __init__(self, name, key):
        self.name = name
        self.key = key
        self.by_index = {}
        self.only = None

    def set(self, index, op):
        self.by_index[index] = op
        self.only = op if len(self.by_index) == 1 else None

    def pick(self, args):
        if self.only is not None:
            return self.only
        for a in args:
            if isinstance(a, torch.Tensor):
                op = self.by_index.get(a.device.index or 0)
                if op is None:
                    raise Error(KH_ERROR_INVALID_ARGUMENT,
                                f"{self.name}: no build registered for {a.device} (kh.torch.load(..., device="
                                f"'{a.device}') registers one); registered: {sorted(self.by_index)}")
                return op
        raise Error(KH_ERROR_INVALID_ARGUMENT, f"{self.name}: a call without tensors")

    def __call__(self, *args, **kwargs):
        return self.pick(args)(*args, **kwargs)


class _FunctionalImpl:
    """The dispatcher's implementation of <op>_functional for one dispatch key."""

    def __init__(self, plan, device_ops):
        self.plan = plan
        self.device_ops = device_ops

    def __call__(self, *args, **kwargs):
        values = self.plan.bind(args, kwargs)
        op = self.device_ops.pick([values[self.plan.like]] if self.plan.like else args)
        return _outputs.run_bound(self.plan, op, _TorchArrays, values, query=op.workspace_size)


def _no_kernel(*args):  # the fake implementation's stand-in for the kernel: tracing runs none
    del args


class _Namespace:
    def __init__(self, ns, package):
        self.ns = ns
        self.package = package
        self.lib = torch.library.Library(ns, "FRAGMENT")  # kept: dropping it unregisters everything
        self.schemas = {}  # op name -> kh schema
        self.defined = set()  # op names defined in the namespace
        self.device_ops = {}  # (op name, dispatch key) -> _DeviceOps
        self.plans = {}  # op name -> kh._outputs.Plan
        self.unavailable = {}  # op name -> why it has no functional form (or no registration)

    def define(self, op, manifest):
        name = op.name
        if name in self.schemas:
            if self.schemas[name] != op.schema:
                raise Error(KH_ERROR_INVALID_ARGUMENT,
                            f"{self.ns}::{name} is registered with schema '{self.schemas[name]}'; this build of "
                            f"{self.package} has '{op.schema}' (a package's major version keeps its schemas)")
            return
        if not _outputs.schema_returns_nothing(op.schema):
            self.unavailable[name] = "returns values; kh.torch registers ops that write their arguments"
            self.schemas[name] = op.schema
            return
        self.lib.define(op.schema, tags=_TAGS)
        torch.library.register_fake(f"{self.ns}::{name}", _fake_nothing, lib=self.lib)
        self.schemas[name] = op.schema
        self.defined.add(name)
        try:
            plan = _outputs.plan_for(op, manifest)
            self.lib.define(_functional_schema(plan), tags=_TAGS)
        except (_outputs.NotPlannable, RuntimeError) as e:
            self.unavailable[name] = f"no functional form: {e}"
            return

        def fake(*args, **kwargs):
            return _outputs.call_functional(plan, _no_kernel, _TorchArrays, args, kwargs)
        torch.library.register_fake(f"{self.ns}::{name}_functional", fake, lib=self.lib)
        self.plans[name] = plan

    def implement(self, op, key, index):
        name = op.name
        if name not in self.defined:
            return
        slot = (name, key)
        device_ops = self.device_ops.get(slot)
        if device_ops is None:
            device_ops = self.device_ops[slot] = _DeviceOps(f"{self.ns}::{name}", key)
            device_ops.set(index, op)
            self.lib.impl(name, device_ops, key)
            if name in self.plans:
                self.lib.impl(f"{name}_functional", _FunctionalImpl(self.plans[name], device_ops), key)
        else:
            device_ops.set(index, op)


def _fake_nothing(*args, **kwargs):
    """The fake implementation of an op that only writes its arguments: nothing to return."""
    del args, kwargs


def _functional_schema(plan):
    """<op>_functional's schema: the op's inputs -> the tensors it writes and returns. Arguments it
    writes in place lose their alias annotation and are required there (an optional one, such as
    rotary_embedding's key, is given: the functional form returns a copy of each)."""
    params = []
    for a in plan.inputs:
        type_text = a.type_text
        if a.name in plan.inplace:
            type_text = re.sub(r"\([a-z]+!?\)", "", type_text).rstrip("?")
        text = f"{type_text} {a.name}"
        if a.default is not _schema.NO_DEFAULT and a.name not in plan.inplace:
            text += "=" + _default_text(a.default)
        params.append(text)
    returns = ["Tensor"] * len(plan.returns)
    ret = returns[0] if len(returns) == 1 else "(" + ", ".join(returns) + ")"
    return f"{plan.name}_functional({', '.join(params)}) -> {ret}"


def _default_text(value):
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return f"'{value}'"
    return repr(value)


class Package:
    """A kh package registered with torch.library: namespace (str), ops (torch.ops.<namespace>),
    kernel (the kh.Kernel), functional forms as attributes named like the ops, unavailable
    ({op name: why it has no functional form})."""

    def __init__(self, space, kernel):
        self.namespace = space.ns
        self.kernel = kernel
        self.ops = getattr(torch.ops, space.ns)
        self.unavailable = dict(space.unavailable)
        for name in kernel.ops:
            if name in space.plans:
                setattr(self, name, getattr(self.ops, f"{name}_functional").default)

    def __getattr__(self, name):  # only for names that are not functional forms
        why = self.__dict__.get("unavailable", {}).get(name)
        raise AttributeError(f"{self.__dict__.get('namespace')}: no functional form '{name}'" +
                             (f" ({why})" if why else ""))

    def __repr__(self):
        return f"<kh.torch.Package {self.namespace} ({self.kernel.name} {self.kernel.version} {self.kernel.variant})>"


def register(kernel, namespace=None):
    """Registers every op of `kernel` (a kh.Kernel) with torch.library in `namespace` (default
    namespace_for(kernel.name, kernel.version)); returns a Package."""
    key = _DISPATCH_KEYS.get(kernel.device_type)
    if key is None:
        raise Error(KH_ERROR_INVALID_ARGUMENT, f"{kernel.name}: its build runs on DLPack device type "
                    f"{kernel.device_type}, which kh.torch has no dispatch key for")
    ns = namespace or namespace_for(kernel.name, kernel.version)
    index = kernel.device[1] if key != "CPU" else 0
    manifest = kernel.manifest
    with _lock:
        space = _namespaces.get(ns)
        if space is None:
            space = _namespaces[ns] = _Namespace(ns, kernel.name)
        elif space.package != kernel.name:
            raise Error(KH_ERROR_INVALID_ARGUMENT, f"torch namespace {ns} holds {space.package}, not {kernel.name}")
        for op in kernel.ops.values():
            space.define(op, manifest)
        for op in kernel.ops.values():
            space.implement(op, key, index)
        return Package(space, kernel)


def _torch_device(device):
    """kh.load_kernel's device for a torch.device or "cuda:N" (ROCm builds of torch call HIP "cuda")."""
    if device is None:
        return None
    if isinstance(device, (str, torch.device)):
        d = torch.device(device)
        if d.type == "cuda":
            return (10 if torch.version.hip else 2, d.index if d.index is not None else torch.cuda.current_device())
    return device


def load(spec, device=None, namespace=None, **load_options):
    """kh.load_kernel(spec, device=..., **load_options) then register(); returns the Package.
    device: a torch.device or "cuda:N" (default: kh's default, the first GPU, else the CPU build)."""
    kernel = load_kernel(spec, device=_torch_device(device), **load_options)
    return register(kernel, namespace)
