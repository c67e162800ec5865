"""kh._outputs: functional forms of kh ops, planned from the op's schema and its package's manifest.

kh ops write into tensors the caller passes (Tensor(a!) in the schema). A functional form takes
the op's other arguments and allocates what it writes:
  - outputs: written arguments whose shape (the manifest's "(..., hidden)", "(batch, heads_q,
    q_len)", "(..., d)" next to an input's "(..., 2 d)") follows from the shapes of the op's
    required read tensors; allocated and returned, optional ones (lse) too;
  - workspaces: written scratch the op sizes itself (kh_op_workspace_size, asked with the call's
    arguments); where no call can be asked (traced code, an op or libkh without the query), the
    size follows the rule in the op's docs (WORKSPACE_RULES: attention_decode_paged's split-KV);
    allocated, not returned;
  - in place: written arguments whose shape the inputs do not fix (rotary_embedding's query and
    key, a KV cache): taken as inputs, copied, the copies written and returned.
An output's dtype is the manifest's when it lists one (lse: f32), else that of the first
required read tensor whose allowed dtypes cover the output's (out follows x, or q); its device
is that of the first required read tensor. Pure Python: kh.torch uses it with torch tensors,
Kernel.functional() with NumPy arrays.
"""
import re

from ._schema import NO_DEFAULT, schema_args


def schema_returns_nothing(schema):
    return schema[schema.rindex("->") + 2:].strip() == "()"


# ---- manifest shapes ------------------------------------------------------------------------------
ELLIPSIS = "..."
_TERM = re.compile(r"^\s*(?:(\d+)\s*\*?\s*)?([A-Za-z_]\w*)?\s*$")


def parse_dim(text):
    """A dimension of a manifest shape as (coefficient, symbol or None, constant): "hidden" ->
    (1, "hidden", 0), "2 d" -> (2, "d", 0), "batch + 1" -> (1, "batch", 1), "64" -> (0, None, 64).
    None where the text is something else."""
    coef, symbol, const = 0, None, 0
    for term in text.split("+"):
        m = _TERM.match(term)
        if not m or not (m.group(1) or m.group(2)):
            return None
        number = int(m.group(1)) if m.group(1) else None
        if m.group(2):
            if symbol is not None:
                return None
            symbol, coef = m.group(2), number if number is not None else 1
        else:
            const += number
    return coef, symbol, const


def parse_shape(text):
    """[ELLIPSIS or (coefficient, symbol, constant)] of "(..., hidden)"; None if unreadable."""
    text = (text or "").strip()
    if not (text.startswith("(") and text.endswith(")")):
        return None
    dims = []
    for part in text[1:-1].split(","):
        part = part.strip()
        if part == ELLIPSIS:
            dims.append(ELLIPSIS)
            continue
        d = parse_dim(part)
        if d is None:
            return None
        dims.append(d)
    return dims


def _symbols(dims):
    out = set()
    for d in dims or ():
        if d == ELLIPSIS:
            out.add(ELLIPSIS)
        elif d[1] is not None:
            out.add(d[1])
    return out


def bind_symbols(shapes, dims_of, order):
    """{symbol: size} (and ELLIPSIS: leading dims) from the actual shapes of tensors, in `order`;
    the first tensor to give a symbol a value wins (the kernel checks that the others agree)."""
    sym = {}
    for name in order:
        shape, dims = shapes.get(name), dims_of.get(name)
        if shape is None or dims is None:
            continue
        if ELLIPSIS in dims:
            k = dims.index(ELLIPSIS)
            tail = len(dims) - k - 1
            if len(shape) < len(dims) - 1:
                continue
            sym.setdefault(ELLIPSIS, tuple(shape[:len(shape) - tail]))
            pairs = list(zip(dims[:k], shape[:k])) + list(zip(dims[k + 1:], shape[len(shape) - tail:]))
        else:
            if len(shape) != len(dims):
                continue
            pairs = list(zip(dims, shape))
        for (coef, symbol, const), size in pairs:
            if symbol is None or symbol in sym or coef == 0:
                continue
            value = size - const
            if value % coef == 0:
                sym[symbol] = value // coef
    return sym


def evaluate(dims, sym):
    out = []
    for d in dims:
        if d == ELLIPSIS:
            out.extend(sym[ELLIPSIS])
        else:
            coef, symbol, const = d
            out.append(coef * sym[symbol] + const if symbol is not None else const)
    return tuple(out)


# ---- workspace rules (from the ops' docs; used only where the op cannot be asked) -------------------
def _ceil_div(a, b):
    return -(-a // b)


def _decode_paged_workspace(sym):
    """attention_decode_paged(_fp8)'s rule (docs/ops-attention-decode.md): n >= (max_splits > 1 ?
    batch * q_len * heads_q * max_splits * (head_dim + 1) : 0), max_splits = max(1, min(64,
    ceil(max_kv / 128), ceil(4096 / (batch * heads_kv)))), max_kv = max_blocks_per_seq * block_size."""
    batch, q_len, heads_q, head_dim = sym["batch"], sym["q_len"], sym["heads_q"], sym["head_dim"]
    max_kv = sym["max_blocks_per_seq"] * sym["block_size"]
    max_splits = max(1, min(64, _ceil_div(max_kv, 128), _ceil_div(4096, max(1, batch * sym["heads_kv"]))))
    return (batch * q_len * heads_q * max_splits * (head_dim + 1) if max_splits > 1 else 0,)


WORKSPACE_RULES = {
    ("attention_decode_paged", "workspace"): _decode_paged_workspace,
    ("attention_decode_paged_fp8", "workspace"): _decode_paged_workspace,
}


class NotPlannable(ValueError):
    pass


class Plan:
    """How one op's functional form calls it. args: the schema's [Arg]; inputs: the [Arg] the
    functional form takes, in schema order; outputs, workspaces, inplace: names; returns: names
    (outputs and in-place arguments, schema order); like: the input whose device (and dtype, where
    the manifest leaves it open) outputs take."""

    def __init__(self, name, schema, manifest_op):
        self.name = name
        self.args = schema_args(schema)
        self.asked = {}  # the op's workspace answers by argument signature (_asked_workspace)
        by_name = {a["name"]: a for a in (manifest_op or {}).get("args", [])}
        self.dims = {a.name: parse_shape(by_name.get(a.name, {}).get("shape")) for a in self.args if a.is_tensor}
        self.dtypes = {a.name: tuple(by_name.get(a.name, {}).get("dtypes") or ()) for a in self.args if a.is_tensor}
        required_reads = [a.name for a in self.args if a.is_tensor and not a.written and not a.optional]
        self.reads = [a.name for a in self.args if a.is_tensor and not a.written]
        provided = set()
        for n in required_reads:
            provided |= _symbols(self.dims[n])
        self.outputs, self.workspaces, self.inplace = [], [], []
        self.dtype_rule = {}
        for a in self.args:
            if not a.written:
                continue
            if not a.is_tensor:
                raise NotPlannable(f"{name}: argument '{a.name}' is written but not a tensor")
            if (name, a.name) in WORKSPACE_RULES:
                self.workspaces.append(a.name)
            elif self.dims[a.name] is not None and _symbols(self.dims[a.name]) <= provided and required_reads:
                self.outputs.append(a.name)
            else:
                self.inplace.append(a.name)
                continue
            allowed = self.dtypes[a.name]
            if len(allowed) == 1:
                self.dtype_rule[a.name] = (allowed[0], ())
            else:
                equal = [n for n in required_reads if allowed and self.dtypes[n] == allowed]
                cover = [n for n in required_reads if n not in equal and set(allowed) <= set(self.dtypes[n] or allowed)]
                if not equal + cover:
                    raise NotPlannable(f"{name}: no input gives '{a.name}' its dtype")
                self.dtype_rule[a.name] = (None, tuple(equal + cover))
        allocated = set(self.outputs) | set(self.workspaces)
        self.inputs = [a for a in self.args if a.name not in allocated]
        self.returns = [a.name for a in self.args if a.name in self.outputs or a.name in self.inplace]
        self.like = required_reads[0] if required_reads else None
        if (self.outputs or self.workspaces) and self.like is None:
            raise NotPlannable(f"{name}: no required input tensor to take a device from")

    def bind(self, args, kwargs):
        """{input name: value} of a functional call, schema defaults filled."""
        if len(args) > len(self.inputs):
            raise TypeError(f"{self.name}: takes {len(self.inputs)} arguments, got {len(args)}")
        values = {}
        for a, v in zip(self.inputs, args):
            values[a.name] = v
        for k, v in kwargs.items():
            if k in values or not any(a.name == k for a in self.inputs):
                raise TypeError(f"{self.name}: unexpected or repeated argument '{k}'")
            values[k] = v
        for a in self.inputs:
            if a.name not in values:
                if a.default is NO_DEFAULT:
                    raise TypeError(f"{self.name}: missing argument '{a.name}'")
                values[a.name] = a.default
        return values

    def allocation(self, shapes):
        """{output or workspace name: shape} from {tensor input name: shape}."""
        sym = bind_symbols(shapes, self.dims, self.reads)
        out = {}
        for n in self.outputs:
            try:
                out[n] = evaluate(self.dims[n], sym)
            except KeyError as e:
                raise ValueError(f"{self.name}: the shape of '{n}' needs {e.args[0]}, which no input gave") from None
        for n in self.workspaces:
            try:
                out[n] = WORKSPACE_RULES[(self.name, n)](sym)
            except KeyError as e:
                raise ValueError(f"{self.name}: the size of '{n}' needs {e.args[0]}, which no input gave") from None
        return out

    def __repr__(self):
        return (f"<kh functional {self.name}({', '.join(a.name for a in self.inputs)}) -> "
                f"({', '.join(self.returns)}); workspaces {self.workspaces}>")


def plan_for(op, manifest):
    """The Plan of kh.Op `op` with its package's manifest (a dict or None)."""
    entry = None
    for o in (manifest or {}).get("ops", []):
        if o.get("name") == op.name:
            entry = o
    if entry is None:
        raise NotPlannable(f"{op.name}: its package has no manifest entry for it (a library loaded by path?)")
    if not schema_returns_nothing(op.schema):
        raise NotPlannable(f"{op.name}: returns values; only ops that write their arguments have functional forms")
    return Plan(op.name, op.schema, entry)


def call_functional(plan, call, arrays, args, kwargs, query=None):
    """Runs plan's functional form: binds args, allocates with `arrays` (empty(shape, dtype name,
    like), clone(x), shape(x), dtype_name(x)), calls call(*schema-ordered args), returns the
    returns (one value, or a tuple). query(*schema-ordered args, the workspace None): the bytes
    of workspace the op needs (Op.workspace_size); None: the docs' rule."""
    return run_bound(plan, call, arrays, plan.bind(args, kwargs), query)


_ITEM_BYTES = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "f16": 2, "bf16": 2, "i16": 2, "u8": 1, "i8": 1, "bool": 1}


def _signature(value):
    """What a workspace size may depend on: a tensor's shape, dtype and device (never its data),
    or a scalar argument's value."""
    shape = getattr(value, "shape", None)
    if not shape:  # a scalar, or a NumPy scalar (shape ()): its value counts
        return value
    # torch.Size, torch.dtype, torch.device and NumPy's shapes and dtypes hash as they are: no
    # conversion to text, which cost a microsecond or two a tensor on every functional call.
    return (shape, value.dtype, getattr(value, "device", None))


def _asked_workspace(plan, values, n, query):
    """Workspace n's shape as the op sizes it for this call, or None where it cannot be asked.
    Asked once per signature of the arguments (shapes, dtypes, devices, scalars), not per call:
    the answer depends on nothing else, and a query costs a conversion of every argument."""
    if query is None:
        return None
    fixed, _ = plan.dtype_rule[n]
    item = _ITEM_BYTES.get(fixed)
    if item is None:
        return None
    asked = dict(values)
    asked[n] = None
    args = [asked[a.name] for a in plan.args]
    key = (n, tuple(_signature(a) for a in args))
    try:
        if key in plan.asked:
            return plan.asked[key]
    except TypeError:  # an unhashable argument: asked every time
        key = None
    try:
        size = query(*args)
    except Exception as e:  # pylint: disable=broad-except
        if getattr(e, "status", None) != 12:  # KH_ERROR_UNSUPPORTED: the op does not answer
            raise
        shape = None
    else:
        shape = (-(-size // item),)
    if key is not None:
        if len(plan.asked) >= 256:  # a bound on memory for shapes that keep changing
            plan.asked.clear()
        plan.asked[key] = shape
    return shape


def run_bound(plan, call, arrays, values, query=None):
    """call_functional on already bound inputs ({name: value}, Plan.bind's result)."""
    values = dict(values)
    shapes = {n: arrays.shape(values[n]) for n in plan.reads if values.get(n) is not None}
    sizes = plan.allocation(shapes)
    like = values[plan.like] if plan.like else None
    for n in plan.outputs:
        values.setdefault(n, None)
    for n in plan.workspaces:
        values.setdefault(n, None)
    for n in plan.outputs + plan.workspaces:
        if n in plan.workspaces:
            sizes[n] = _asked_workspace(plan, values, n, query) or sizes[n]
        fixed, candidates = plan.dtype_rule[n]
        if fixed is not None:
            values[n] = arrays.empty(sizes[n], fixed, like)
            continue
        source = None
        for c in candidates:
            if values.get(c) is not None and arrays.dtype_name(values[c]) in plan.dtypes[n]:
                source = values[c]
                break
        if source is None:
            raise TypeError(f"{plan.name}: no input has a dtype '{n}' may take ({', '.join(plan.dtypes[n])}); "
                            f"call the op with '{n}' allocated instead")
        values[n] = arrays.empty(sizes[n], arrays.dtype_name(source), like)
    for n in plan.inplace:
        if values[n] is not None:
            values[n] = arrays.clone(values[n])
    call(*[values[a.name] for a in plan.args])
    result = tuple(values[n] for n in plan.returns)
    return result[0] if len(result) == 1 else result


class NumpyArrays:
    """call_functional's allocator for NumPy arrays (the CPU path)."""

    _NAMES = {"float32": "f32", "float16": "f16", "float64": "f64", "int8": "i8", "int16": "i16", "int32": "i32",
              "int64": "i64", "uint8": "u8", "bool": "bool"}

    def __init__(self):
        import numpy  # pylint: disable=import-outside-toplevel
        self.np = numpy
        self._dtypes = {v: numpy.dtype(k) for k, v in self._NAMES.items()}

    def empty(self, shape, dtype, like):  # pylint: disable=unused-argument
        if dtype not in self._dtypes:
            raise TypeError(f"kh: NumPy has no dtype {dtype}")
        return self.np.empty(shape, dtype=self._dtypes[dtype])

    def clone(self, x):
        return self.np.array(x, copy=True)

    def shape(self, x):
        return tuple(x.shape)

    def dtype_name(self, x):
        return self._NAMES.get(str(x.dtype), str(x.dtype))
