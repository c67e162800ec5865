"""check_activation.py: kernels-community/activation on the GPU, called from check_through_kh.py
with the builds it loaded through kh.load_kernel() (sm90a, sm80 and the CPU oracle).

Per target x op (silu/gelu/gelu_tanh/fatrelu_and_mul) x dtype (fp32/fp16/bf16) x shape class:
inputs uniform in [-8, 8] (the tails of every act()), out placed in a sentinel-filled buffer with
NaN over the view itself, then
  |out - ref64| <= ulp(dtype) |ref64| + 2^-18 (1 + |s|) |ref64| + quantum   (pointwise_support.py)
where ref64 is act(a) * gate in float64 on the stored inputs, written here from the definitions
(gelu through erfc, gelu_tanh through a logistic: no cancellation), and s the argument of the
exponential (a, a^2 / 2, 2u), whose fp32 rounding the function amplifies; every out element
written, nothing around it (gaps between strided rows, the buffer's tail), x untouched (in place:
its gate half). Shape classes: d 1, odd d (element path), vector d, the bench's widths, 3-d
leading dims, strided rows (x's and out's strides independent), an unaligned x (element path),
in place, no rows. Also: the GPU builds against the CPU build; CUDA graph capture then replay,
bit-identical to the eager call, and a replay after x changed in place; bad calls refused with
the argument named and nothing written.
"""
import math

import torch

import kh
from pointwise_support import DT_NAMES, INV, capture, expect_refused, outside_intact, padded, within

OPS = ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul", "fatrelu_and_mul")
THRESHOLD = 0.25
DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# (class, [(leading dims, d, x pad, out pad, x offset, in place)])
CLASSES = [
    ("d 1", [((3,), 1, 0, 0, 0, False)]),
    ("odd d", [((257,), 999, 0, 0, 0, False), ((5,), 4097, 0, 0, 0, False)]),
    ("vector d", [((1000,), 4096, 0, 0, 0, False), ((64,), 64, 0, 0, 0, False)]),
    ("bench widths", [((64,), 14336, 0, 0, 0, False)]),
    ("3-d leading", [((4, 33), 520, 0, 0, 0, False)]),
    ("strided rows", [((100,), 4096, 8, 24, 0, False), ((100,), 1000, 3, 5, 0, False), ((3, 7), 256, 8, 0, 0, False)]),
    ("unaligned x", [((50,), 4096, 0, 0, 1, False)]),
    ("in place", [((33,), 4096, 8, 0, 0, True), ((9,), 999, 0, 0, 0, True)]),
    ("no rows", [((0,), 128, 0, 0, 0, False)]),
]


def reference(op, x, d, threshold=THRESHOLD):
    """(act(a) * gate, s) in float64 from the stored inputs, s the exponential's argument."""
    a, g = x[..., :d].double(), x[..., d:].double()
    if op == "silu_and_mul":
        act, s = a * torch.sigmoid(a), a
    elif op == "gelu_and_mul":
        act, s = 0.5 * a * torch.special.erfc(-a / math.sqrt(2.0)), a * a / 2
    elif op == "gelu_tanh_and_mul":
        two_u = 2 * math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)
        act, s = a * torch.sigmoid(two_u), two_u  # 0.5 (1 + tanh(u)) = sigmoid(2 u)
    else:
        act, s = torch.where(a > threshold, a, torch.zeros_like(a)), torch.zeros_like(a)
    return act * g, s


def slack(ref, s):
    return 2.0 ** -18 * (1 + s.abs()) * ref.abs()


def args_of(op, out, x):
    return (out, x, THRESHOLD) if op == "fatrelu_and_mul" else (out, x)


def make_case(lead, d, x_pad, out_pad, x_offset, in_place, dtype, gen):
    """x (uniform in [-8, 8]) and out, each a view into its sentinel-filled base; out NaN."""
    x, x_base = padded(tuple(lead) + (2 * d,), dtype, x_pad, offset=x_offset)
    x.copy_((torch.rand(x.shape, device="cuda", generator=gen, dtype=torch.float64) * 16 - 8).to(dtype))
    if in_place:
        out, out_base = x[..., :d], x_base
    else:
        out, out_base = padded(tuple(lead) + (d,), dtype, out_pad)
        out.fill_(float("nan"))
    return x, x_base, out, out_base


def run_case(res, op_handle, op, target, dtype, cls, lead, d, x_pad, out_pad, x_offset, in_place, gen, stream=None):
    name = (f"lead {list(lead)} d {d} pads {x_pad}/{out_pad}{f' offset {x_offset}' if x_offset else ''}"
            f"{' in place' if in_place else ''}{' side stream' if stream is not None else ''}")
    try:
        x, x_base, out, out_base = make_case(lead, d, x_pad, out_pad, x_offset, in_place, dtype, gen)
        ref, s = reference(op, x, d)
        x_before, out_base_before = x_base.clone(), out_base.clone()
        if stream is not None:
            stream.wait_stream(torch.cuda.current_stream())
        op_handle(*args_of(op, out, x), stream=stream)
        torch.cuda.synchronize()
        err, ratio, problems = within(out, ref, dtype, slack(ref, s))
        if in_place:  # x's gate half and everything outside out is as it was
            if not outside_intact(x_base, out, x_before):
                problems.append("x's gate half or the padding changed")
        else:
            if not torch.equal(x_base, x_before):
                problems.append("x was modified")
            if not outside_intact(out_base, out, out_base_before):
                problems.append("wrote outside out (gaps between rows or past the end)")
        res.add(op, target, DT_NAMES[dtype], cls, name, not problems, err, err / ratio if ratio > 0 else None,
                "; ".join(problems))
    except kh.Error as e:
        res.add(op, target, DT_NAMES[dtype], cls, name, False, detail=str(e))


def check_activation(res, kernels, gen, quick, targets):
    side = torch.cuda.Stream()
    n = 0
    for target in targets:
        k = kernels[("activation", target)]
        for op in OPS:
            for dtype in DTYPES:
                for cls, cases in CLASSES:
                    for case in cases[:1] if quick else cases:
                        n += 1
                        run_case(res, k.op(op), op, target, dtype, cls, *case, gen, side if n % 4 == 0 else None)
        check_oracle(res, kernels, target, gen)
        check_graph(res, k, target, gen)
        check_bad_args(res, k, target)


def check_oracle(res, kernels, target, gen):
    """The GPU build against the CPU build (correctly rounded from double) on the same inputs."""
    cpu = kernels[("activation", "cpu")]
    for op in OPS:
        for dtype in DTYPES:
            for lead, d in (((37,), 999), ((16,), 4096)):
                name = f"lead {list(lead)} d {d}"
                x = (torch.rand(tuple(lead) + (2 * d,), device="cuda", generator=gen, dtype=torch.float64) * 16 - 8).to(dtype)
                out = torch.full(tuple(lead) + (d,), float("nan"), device="cuda", dtype=dtype)
                xc, oc = x.cpu(), out.cpu()
                try:
                    cpu.op(op)(*args_of(op, oc, xc))
                    kernels[("activation", target)].op(op)(*args_of(op, out, x))
                    torch.cuda.synchronize()
                except kh.Error as e:
                    res.add(op, f"{target} vs cpu", DT_NAMES[dtype], "oracle", name, False, detail=str(e))
                    continue
                ref, s = reference(op, xc, d)
                _, _, cpu_problems = within(oc, ref, dtype, torch.zeros_like(ref))  # the CPU: one rounding of ref
                err, ratio, problems = within(out.cpu(), oc.double(), dtype, slack(ref, s))
                res.add(op, f"{target} vs cpu", DT_NAMES[dtype], "oracle", name, not (problems or cpu_problems), err,
                        err / ratio if ratio > 0 else None,
                        "; ".join(["cpu: " + p for p in cpu_problems] + problems))


def check_graph(res, k, target, gen):
    """One call captured in a CUDA graph: capture runs nothing, a replay equals the eager call
    bit for bit, and a replay after x changed in place computes the new x."""
    op, dtype, d = "silu_and_mul", torch.bfloat16, 4096
    name = f"bf16 rows 333 d {d}"
    try:
        x = (torch.rand(333, 2 * d, device="cuda", generator=gen, dtype=torch.float64) * 16 - 8).to(dtype)
        out = torch.full((333, d), float("nan"), device="cuda", dtype=dtype)
        k.op(op)(out, x)
        torch.cuda.synchronize()
        eager = out.clone()
        out.fill_(float("nan"))
        g = capture(lambda s: k.op(op)(out, x, stream=s))
        problems = [] if bool(torch.isnan(out.float()).all()) else ["capture ran the kernel"]
        g.replay()
        torch.cuda.synchronize()
        if not torch.equal(out, eager):
            problems.append("replay is not bit-identical to the eager call")
        x.copy_((torch.rand(x.shape, device="cuda", generator=gen, dtype=torch.float64) * 16 - 8).to(dtype))
        g.replay()
        torch.cuda.synchronize()
        ref, s = reference(op, x, d)
        err, ratio, more = within(out, ref, dtype, slack(ref, s))
        problems += ["replay after x changed: " + p for p in more]
        res.add(op, target, "bf16", "graph", name, not problems, err, err / ratio if ratio > 0 else None,
                "; ".join(problems) or "replay bit-identical; new x honoured")
    except (kh.Error, RuntimeError) as e:
        res.add(op, target, "bf16", "graph", name, False, detail=f"{type(e).__name__}: {e}")


def check_bad_args(res, k, target):
    dtype = torch.bfloat16
    x = torch.randn(4, 256, device="cuda").to(dtype)
    out = torch.full((4, 128), float("nan"), device="cuda", dtype=dtype)
    silu, fat = k.op("silu_and_mul"), k.op("fatrelu_and_mul")
    watched = [(out, out.clone()), (x, x.clone())]

    def refused(case, fn, arg, op="silu_and_mul", status=INV):
        expect_refused(res, op, target, case, fn, watched, status, arg)

    refused("x's last dim odd", lambda: silu(out, x[:, :255]), "x")
    refused("out's last dim is 2 d", lambda: silu(torch.full_like(x, float("nan")), x), "out")
    refused("out of another dtype", lambda: silu(out.half(), x), "out")
    refused("out on the CPU", lambda: silu(out.cpu(), x), "out")
    refused("x float64", lambda: silu(out, x.double()), "x")
    refused("x's last dim strided", lambda: silu(out, torch.randn(256, 4, device="cuda").to(dtype).t()), "x")
    refused("out overlapping x's gate half", lambda: silu(x[:, 128:], x), "out")
    refused("out broadcast over rows", lambda: silu(out[:1].expand(4, 128), x), "out")
    refused("threshold an int", lambda: fat(out, x, 1), "threshold", "fatrelu_and_mul")
    refused("threshold NaN", lambda: fat(out, x, float("nan")), "threshold", "fatrelu_and_mul")
    refused("threshold missing", lambda: fat(out, x), None, "fatrelu_and_mul")
