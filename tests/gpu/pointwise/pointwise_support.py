"""pointwise_support.py: what the activation and rotary GPU checks share: tolerances derived
from the dtypes, tensors placed inside larger sentinel-filled buffers (so that a write outside
a view shows), CUDA-graph capture and replay of one call, and the refused-call check.

Tolerance of a GPU result against a float64 reference on the same stored inputs, per element:
  |got - ref| <= ulp(dtype) |ref| + fp32 slack + quantum(dtype)
ulp is the dtype's relative spacing (one rounding of the output, with room for an fp32 result
that lands on the other side of a rounding boundary); the fp32 slack is the evaluation error of
the op's fp32 formula (each check says which); quantum is the absolute spacing where relative
spacing stops (2^-24 in fp16's subnormals; 2^-126 otherwise: fp32's smallest normal, below
which the GPU's approximate exp2 flushes to zero).
"""
import torch

import kh

DT_NAMES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
ULP = {torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}
QUANTUM = {torch.float32: 2.0 ** -126, torch.float16: 2.0 ** -24, torch.bfloat16: 2.0 ** -126}
SENTINEL = 12288.0  # 1.5 * 2^13: exact in fp32, fp16 and bf16
INV, UNS = kh.KH_ERROR_INVALID_ARGUMENT, kh.KH_ERROR_UNSUPPORTED


def within(got, ref, dtype, slack):
    """(max |got - ref|, worst |got - ref| / tol, problems) for float64 ref and a slack tensor."""
    g = got.double()
    tol = ULP[dtype] * ref.abs() + slack + QUANTUM[dtype]
    diff = (g - ref).abs()
    problems = []
    nan = torch.isnan(g) & ~torch.isnan(ref)
    if bool(nan.any()):
        problems.append(f"{int(nan.sum())} NaN (unwritten?) outputs")
    bad = (diff > tol) & ~nan
    if bool(bad.any()):
        i = int(bad.flatten().nonzero()[0])
        problems.append(f"{int(bad.sum())} elements off, e.g. flat[{i}] got {g.flatten()[i].item():.7g} "
                        f"want {ref.flatten()[i].item():.7g}")
    finite = torch.isfinite(diff)
    err = diff[finite].max().item() if bool(finite.any()) else 0.0
    ratio = (diff / tol)[finite].max().item() if bool(finite.any()) else 0.0
    return err, ratio, problems


def padded(shape, dtype, pad, offset=0, fill=SENTINEL):
    """(view, base): a tensor of `shape` laid out with `pad` extra elements after each row and
    after each leading dim (strided rows; pad 0: contiguous), `offset` elements into a
    sentinel-filled buffer with a spare tail of 64 elements."""
    strides, acc = [], 1
    for i in reversed(range(len(shape))):
        strides.insert(0, acc)
        acc = acc * shape[i] + pad
    extent = 1 + sum((n - 1) * st for n, st in zip(shape, strides)) if all(n > 0 for n in shape) else 0
    base = torch.full((offset + extent + 64,), fill, dtype=dtype, device="cuda")
    return torch.as_strided(base, shape, strides, offset), base


def view_mask(base, view):
    """Bool mask over the 1-D base: True at the elements view covers."""
    mask = torch.zeros(base.shape, dtype=torch.bool, device=base.device)
    if view.numel():
        idx = torch.arange(base.numel(), device=base.device)
        covered = torch.as_strided(idx, view.shape, view.stride(), view.storage_offset() - base.storage_offset())
        mask[covered.flatten()] = True
    return mask


def outside_intact(base, views, before):
    """True when every element of base outside the view (or list of views) equals `before`, a
    clone of base taken before the call."""
    mask = torch.zeros(base.shape, dtype=torch.bool, device=base.device)
    for v in views if isinstance(views, (list, tuple)) else [views]:
        mask |= view_mask(base, v)
    return bool(torch.equal(base[~mask], before[~mask]))


def same_bits(a, b):
    """a and b hold the same bytes (NaN-poisoned tensors included: NaN != NaN as values)."""
    return a.shape == b.shape and a.dtype == b.dtype and bool(
        torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)))


def refusal_problems(fn, watched, status, arg):
    """(problems, message) of a call that must be refused: fn() raises kh.Error with `status`
    naming argument `arg`, and every (tensor, clone taken before) in `watched` is unchanged, so
    no kernel ran. problems is empty when all of that holds."""
    try:
        fn()
    except kh.Error as e:
        torch.cuda.synchronize()
        wrong_status = e.status != status
        checks = ((wrong_status, f"status {e.status_name}, expected {kh.Error(status, '').status_name}"),
                  (bool(arg) and f"'{arg}'" not in e.message, f"message does not name '{arg}'"),
                  (not all(same_bits(t, before) for t, before in watched), "a tensor was written (a kernel ran)"))
        return [what for failed, what in checks if failed], str(e)
    except Exception as e:  # noqa: BLE001 - any other failure is a finding
        return [f"{type(e).__name__}: {e}"], ""
    return ["accepted; expected kh.Error"], ""


def expect_refused(res, op, target, case, fn, watched, status, arg):
    problems, message = refusal_problems(fn, watched, status, arg)
    res.add(op, target, "-", "bad args", case, not problems, detail="; ".join(problems) or message)


def capture(call):
    """A CUDA graph holding call(stream) captured on a side stream; nothing runs until replay."""
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        with torch.cuda.graph(g, stream=s):
            call(s)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    return g
