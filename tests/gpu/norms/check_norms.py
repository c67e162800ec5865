"""check_norms.py: correctness of the CUDA rms-norm and layer-norm libraries against float64.

Usage: python3 check_norms.py --rms LIB.so --layer LIB.so [--quick]
Exits 0 when every case passes (or, printing SKIP, when no CUDA device or PyTorch is
present), 1 otherwise. Each case: random non-zero inputs drawn fresh, outputs poisoned with
NaN (and the gaps between strided rows with a sentinel that must survive), the op called
through libkh's kh_op_call (python/kh) on a PyTorch stream, then compared with a float64 reference of the
CPU oracle's formula:
  residual_out == round(x + residual) exactly (fused ops);
  |out - ref| <= atol + rtol * |ref| per element, rtol = one ulp of the dtype (an fp32
  result may land on either side of a rounding boundary) plus fp32 accumulation slack.
"""
import argparse
import math
import sys

try:
    import torch
except ImportError:  # the GPU test machine has PyTorch; elsewhere this test does not apply
    print("SKIP: PyTorch is not installed")
    sys.exit(0)

import os  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import kh  # noqa: E402


class NormLibrary:
    """A kernel library file loaded through python/kh (kh_load_kernel_library: no hub), its
    ops called through kh_op_call; call() returns (status, message) instead of raising."""

    def __init__(self, path):
        self.kernel = kh.load_library(path)
        self.name, self.version, self.variant = self.kernel.name, self.kernel.version, self.kernel.variant
        self.ops = self.kernel.ops

    def call(self, op, *args, stream=None):
        try:
            self.kernel.op(op)(*args, stream=stream)
            return 0, ""
        except kh.Error as e:
            return e.status, e.message

# Per-element tolerance: one ulp of the output dtype relative (2^-7 bf16, 2^-10 fp16) plus
# fp32 accumulation over up to 70001 elements; atol covers results near zero.
TOL = {
    torch.float32: (2e-5, 2e-5),
    torch.float16: (2.0**-10 + 2e-5, 1e-4),
    torch.bfloat16: (2.0**-7 + 2e-5, 1e-3),
}
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
SENTINEL = 12288.0  # 1.5 * 2^13: exact in fp32, fp16 and bf16


def make_rows(rows, hidden, dtype, layout, gen, mean=0.0, scale=1.0):
    """A (rows, hidden) tensor in `layout` ('contig', 'pad8', 'pad3', '3d') with random data,
    plus the storage tensor it views (whose gaps the test checks)."""
    if layout == "contig":
        base = torch.empty(rows, hidden, dtype=dtype, device="cuda")
        view = base
    elif layout in ("pad8", "pad3"):
        pad = 8 if layout == "pad8" else 3
        base = torch.empty(rows, hidden + pad, dtype=dtype, device="cuda")
        view = base[:, :hidden]
    elif layout == "3d":  # (a, b, hidden) cut from (a, b + 1, hidden): rows not evenly spaced
        b = 4 if rows % 4 == 0 else rows
        base = torch.empty(rows // b, b + 1, hidden, dtype=dtype, device="cuda")
        view = base[:, :b, :]
    else:
        raise ValueError(layout)
    base.fill_(SENTINEL)
    data = (torch.randn(view.shape, generator=gen, device="cuda", dtype=torch.float64) * scale + mean)
    # keep inputs away from exact zero
    data = torch.where(data.abs() < 1e-3, torch.full_like(data, 1e-3), data)
    view.copy_(data.to(dtype))
    return view, base


def reference(kind, x, residual, weight, bias, eps, dtype):
    """float64 reference: (out, residual_out) following the CPU oracle."""
    h = x.double()
    res_out = None
    if residual is not None:
        res_out = (h + residual.double()).to(dtype)
        h = res_out.double()
    w = weight.double() if weight is not None else 1.0
    b = bias.double() if bias is not None else 0.0
    if kind == "rms":
        inv = torch.rsqrt((h * h).mean(dim=-1, keepdim=True) + eps)
        out = h * inv * w
    else:
        mean = h.mean(dim=-1, keepdim=True)
        var = ((h - mean) ** 2).mean(dim=-1, keepdim=True)
        out = (h - mean) * torch.rsqrt(var + eps) * w + b
    return out, res_out


class Results:
    def __init__(self):
        self.rows = []
        self.failures = []

    def add(self, key, ok, detail):
        self.rows.append((key, ok, detail))
        if not ok:
            self.failures.append((key, detail))


def gaps_intact(base, view):
    """True when every element of `base` outside `view` still holds the sentinel."""
    mask = torch.ones(base.shape, dtype=torch.bool, device=base.device)
    if base.dim() == 2:
        mask[:, : view.shape[1]] = False
    else:
        mask[:, : view.shape[1], :] = False
    if base.shape == view.shape:
        return True
    return bool((base[mask].float() == SENTINEL).all())


def norm_inputs(kind, fused, dtype, hidden, rows, layout, wdt, params, gen):
    """Random inputs of one case: x (and residual when fused) as row views with their bases,
    weight and bias as params asks (wdt "f32": fp32 parameters; a bias of "other" takes the
    other parameter dtype). Returns x, x_base, residual, res_base, w, b."""
    mean = 0.0 if kind == "rms" else 3.0  # layer norm: a non-zero mean tests the variance
    x, x_base = make_rows(rows, hidden, dtype, layout, gen, mean, 1.0)
    residual = res_base = None
    if fused:
        residual, res_base = make_rows(rows, hidden, dtype, layout, gen, 0.0, 0.5)
    want_w, want_b = params
    if kind == "rms":
        want_w, want_b = True, False  # rms-norm's weight is required, it has no bias
    w = b = None
    if want_w:
        w = (torch.randn(hidden, generator=gen, device="cuda", dtype=torch.float64) * 0.5 + 1.0).to(
            torch.float32 if wdt == "f32" else dtype)
    if want_b:
        bdt = torch.float32 if (wdt == "f32") != (want_b == "other") else dtype
        b = (torch.randn(hidden, generator=gen, device="cuda", dtype=torch.float64) * 0.2).to(bdt)
    return x, x_base, residual, res_base, w, b


def run_case(libs, res, kind, fused, dtype, hidden, rows, layout, wdt, params, inplace, stream, gen):
    lib = libs[kind]
    eps = 1e-6 if kind == "rms" else 1e-5
    x, x_base, residual, res_base, w, b = norm_inputs(kind, fused, dtype, hidden, rows, layout, wdt, params, gen)

    ref_out, ref_res = reference(kind, x, residual, w, b, eps, dtype)
    x_in, r_in = x.clone(), (residual.clone() if residual is not None else None)

    if inplace:  # out is x; residual_out is residual
        out, out_base = x, x_base
        res_out = residual
        res_out_base = res_base if fused else None
    else:
        out, out_base = make_rows(rows, hidden, dtype, layout, gen)
        out.fill_(float("nan"))
        res_out = res_out_base = None
        if fused:
            res_out, res_out_base = make_rows(rows, hidden, dtype, layout, gen)
            res_out.fill_(float("nan"))

    if kind == "rms":
        args = (out, res_out, x, residual, w, eps) if fused else (out, x, w, eps)
        op = "fused_add_rms_norm" if fused else "rms_norm"
    else:
        args = (out, res_out, x, residual, w, b, eps) if fused else (out, x, w, b, eps)
        op = "fused_add_layer_norm" if fused else "layer_norm"
    stream.wait_stream(torch.cuda.current_stream())  # inputs were written on the current stream
    status, err = lib.call(op, *args, stream=stream)
    stream.synchronize()

    key = (op, str(dtype).replace("torch.", ""), hidden, rows, layout, wdt,
           "w" if w is not None else "-", ("b" + ("*" if params[1] == "other" else "")) if b is not None else "-",
           "inplace" if inplace else "")
    if status != 0:
        res.add(key, False, f"status {status}: {err}")
        return
    problems = []
    o = out.double()
    if torch.isnan(o).any():
        problems.append(f"{int(torch.isnan(o).sum())} NaN/unwritten outputs")
    rtol, atol = TOL[dtype]
    diff = (o - ref_out).abs()
    bad = diff > atol + rtol * ref_out.abs()
    if bad.any():
        i = int(bad.flatten().nonzero()[0])
        problems.append(f"{int(bad.sum())} elements off, e.g. flat[{i}] got {o.flatten()[i].item():.7g} "
                        f"want {ref_out.flatten()[i].item():.7g}")
    rel = (torch.linalg.vector_norm(o - ref_out) / torch.linalg.vector_norm(ref_out)).item()
    if fused:
        ro = res_out.double()
        if not torch.equal(ro, ref_res.double()):
            n = int((ro != ref_res.double()).sum())
            problems.append(f"residual_out differs from round(x + residual) in {n} elements")
    if not inplace:
        if not torch.equal(x, x_in) or (fused and not torch.equal(residual, r_in)):
            problems.append("an input was modified")
    for name, v, base in (("out", out, out_base), ("residual_out", res_out, res_out_base)):
        if v is not None and base is not None and not gaps_intact(base, v):
            problems.append(f"{name}: wrote into the gap between rows")
    res.add(key, not problems, "; ".join(problems) if problems else f"rel {rel:.2e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rms", required=True)
    ap.add_argument("--layer", required=True)
    ap.add_argument("--quick", action="store_true", help="a subset (for the sm80 PTX build)")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 0

    libs = {"rms": NormLibrary(a.rms), "layer": NormLibrary(a.layer)}
    for k, l in libs.items():
        print(f"{k}: {l.name} {l.version} {l.variant} ops={sorted(l.ops)}")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(a.seed)
    side = torch.cuda.Stream()
    res = Results()

    hiddens = [1, 7, 64, 1000, 4096, 8192, 65536, 70001]
    rows_list = [1, 3, 1000]
    dtypes = [torch.float32, torch.float16, torch.bfloat16]
    if a.quick:
        hiddens = [7, 1000, 4096, 70001]
        rows_list = [3, 1000]
    ln_params = [(True, True), (True, False), (False, False), (False, True), (True, "other")]
    n = 0
    for kind in ("rms", "layer"):
        for fused in (False, True):
            for dtype in dtypes:
                for hidden in hiddens:
                    for rows in rows_list:
                        if rows * hidden * 4 > (1 << 30):
                            continue
                        for wdt in ("same", "f32"):
                            if dtype == torch.float32 and wdt == "f32":
                                continue
                            params = (True, False) if kind == "rms" else ln_params[n % len(ln_params)]
                            layouts = ["contig"]
                            if rows > 1 and (n % 2 == 0 or hidden in (7, 4096, 70001)):
                                layouts += ["pad8", "pad3"]
                                layouts.append("3d")
                            for layout in layouts:
                                stream = side if n % 3 == 0 else torch.cuda.current_stream()
                                run_case(libs, res, kind, fused, dtype, hidden, rows, layout, wdt, params,
                                         False, stream, gen)
                                n += 1
                # in place: out is x (and residual_out is residual)
                for hidden in (7, 4096, 70001):
                    run_case(libs, res, kind, fused, dtype, hidden, 3, "contig", "same",
                             (True, kind == "layer"), True, torch.cuda.current_stream(), gen)

    # error path: a shape mismatch must come back as an argument error with a message
    x = torch.randn(4, 64, device="cuda", dtype=torch.bfloat16)
    status, err = libs["rms"].call("rms_norm", torch.empty(4, 32, device="cuda", dtype=torch.bfloat16), x,
                                   torch.ones(64, device="cuda", dtype=torch.bfloat16), 1e-6)
    res.add(("rms_norm", "shape mismatch is refused"), status == 1 and "out" in err, f"status {status}: {err}")
    # rows = 0: nothing to do, success
    e = torch.empty(0, 64, device="cuda", dtype=torch.bfloat16)
    status, err = libs["layer"].call("layer_norm", e, e.clone(), None, None, 1e-5)
    res.add(("layer_norm", "zero rows"), status == 0, f"status {status}: {err}")

    worst = {}
    for key, ok, detail in res.rows:
        if ok and detail.startswith("rel "):
            k = (key[0], key[1])
            worst[k] = max(worst.get(k, 0.0), float(detail[4:]))
    print(f"\n{len(res.rows)} cases, {len(res.failures)} failed")
    print("| op | dtype | cases | worst ||out-ref||/||ref|| |")
    print("| --- | --- | --- | --- |")
    counts = {}
    for key, ok, _ in res.rows:
        counts[(key[0], key[1])] = counts.get((key[0], key[1]), 0) + 1
    for k in sorted(worst):
        print(f"| {k[0]} | {k[1]} | {counts[k]} | {worst[k]:.2e} |")
    for key, detail in res.failures[:40]:
        print("FAIL", key, detail)
    return 0 if not res.failures else 1


if __name__ == "__main__":
    sys.exit(main())
