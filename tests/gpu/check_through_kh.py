#!/usr/bin/env python3
"""check_through_kh.py: every kernel package, loaded the way users load it, checked on the GPU.

Each package is loaded with kh.load_kernel() (python/kh over libkh's kh_load_kernel: hub ->
cache -> sha256-verified -> dlopen -> ABI negotiation), once per build: variant= the
cuda sm90a build, the cuda sm80 build (on an H200 through its compute_80 PTX) and the CPU
build (the float64-accumulating oracle). Every op call goes through kh_op_call, so the
loader's schema checks run too. Then, per op x target x dtype x shape class:

  attention_fwd  outputs poisoned with NaN before every call, random non-zero inputs;
                 max|out - ref64| <= 2 * max|sdpa - ref64| + 1e-5, where ref64 is a float64
                 reference on the same rounded inputs and sdpa PyTorch's SDPA at the same
                 precision (over rows that see a key); lse within 1e-3 of ref64's; fully masked
                 rows (causal, sq > sk) exactly 0 with lse -inf.
                 Shapes: length 1, odd lengths, sq < sk and sq > sk (causal is bottom-right
                 aligned), GQA, MQA, packed (strided) qkv; head dims 64, 128, 256; bf16, fp16.
  norms          rms_norm, fused_add_rms_norm, layer_norm, fused_add_layer_norm: per element
                 |out - ref64| <= atol + rtol |ref64| (one ulp of the dtype + fp32
                 accumulation slack, tests/gpu/norms/check_norms.py's TOL); residual_out
                 exactly round(x + residual); inputs unmodified; gaps between strided rows
                 untouched. fp32/fp16/bf16, hidden 1 .. 70001 (non-multiples of the vector
                 width), strided and 3-d rows, with and without weight/bias, fp32 weights, in place.
  oracle         a subset run on both the GPU build and the kh CPU build: the CPU output
                 within rounding of ref64, the GPU output within the GPU rule of the CPU's.
  attention prefill (1.1)   tests/gpu/attention/check_prefill.py: attention_fwd at every head dim
                 32..256 step 8 and 192/128; attention_varlen_fwd (packed sequences of lengths
                 0/1/odd/unequal q and k, NaN in packed rows outside every sequence, window,
                 soft-cap, GQA/MQA, every head-dim bucket), the same rule as attention_fwd per
                 sequence; the CPU build as oracle; CUDA graph capture + replay; bad calls.
  attention_decode_paged (1.1)   tests/gpu/attention/check_decode.py: paged caches with
                 shuffled blocks and padded block-table rows, lengths 0/1/odd/long (split-KV),
                 q_len 1-8, GQA/MQA, window, soft-cap, every head dim 32..256 step 8, bf16/fp16,
                 against float64 with the rule above (PyTorch same-precision error x 2); the CPU
                 build as oracle; CUDA graph capture + replay bit-identical; bad calls refused.
  bad args       mismatched shapes, wrong dtypes, head_dim 36, non-contiguous last dim, a
                 CPU tensor, an int for a float...: kh.Error with the expected KH_ status and
                 the argument named, and the NaN-poisoned output untouched (no launch).
  activation, rotary   tests/gpu/pointwise/check_activation.py, check_rotary.py: every op x
                 target x dtype x shape class against float64 on the same stored inputs, outputs
                 poisoned and gaps checked, the CPU build as oracle, CUDA graph capture + replay,
                 bad calls refused (their docstrings say what each checks).
  binding        automatic selection picks sm90a; the package sits in the cache; unknown
                 packages/variants/ops raise kh.Error; __dlpack__ objects (and CuPy/NumPy
                 when present) and explicit streams work.

Prints a summary table (op x target x dtype x shape class -> pass/fail, cases, max error,
worst error/tolerance); with --out DIR also writes DIR/summary.txt and DIR/summary.json.
Exit status 1 on any failure; 0 with SKIP where no CUDA device or PyTorch is present.
KH_GPU_CHECK_ONLY=<section>[,<section>...] runs only the sections whose names start with one
of the given words (e.g. "attention decode,binding"); the loads always run.

  python3 tests/gpu/check_through_kh.py --hub file:///path/hub --cache /path/cache [--out DIR] [--quick]
      [--packages "rms-norm attention ..."]   (default: every package with a cpu and a cuda backend)
(KH_LIBRARY names libkh.so; tests/gpu/run.sh sets everything up.)
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "attention"))
sys.path.insert(0, os.path.join(HERE, "norms"))
sys.path.insert(0, os.path.join(HERE, "pointwise"))

try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not installed")
    sys.exit(0)

import kh  # noqa: E402
# The references and tolerance rules of each package's checks.
from attention_reference import make_inputs, reference as attention_reference, sdpa_same_precision  # noqa: E402
from check_decode import check_decode, check_decode_bad_blocks, check_decode_oracle  # noqa: E402
from check_prefill import check_head_dims, check_varlen, check_varlen_oracle  # noqa: E402
from check_norms import SENTINEL, TOL, gaps_intact, make_rows, norm_inputs, reference as norm_reference  # noqa: E402
from check_activation import check_activation  # noqa: E402
from check_rotary import check_rotary  # noqa: E402

ORG = "kernels-community"
# Every package with a CPU and a CUDA backend, from their manifests (packages_from_manifests);
# run.sh passes the staged list with --packages.
PACKAGES = ()
GPU_TARGETS = ("sm90a", "sm80")
DT_NAMES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


# --- results --------------------------------------------------------------------------

class Results:
    def __init__(self):
        self.cases = []

    def add(self, op, target, dtype, shape_class, case, ok, err=None, tol=None, detail=""):
        ratio = (err / tol) if (err is not None and tol) else None
        self.cases.append(dict(op=op, target=target, dtype=dtype, shape_class=shape_class, case=case, ok=bool(ok),
                               err=err, tol=tol, ratio=ratio, detail=detail))
        if not ok:
            print(f"FAIL {op} {target} {dtype} [{shape_class}] {case}: {detail}", flush=True)

    def summary(self, by_class=True):
        """Rows per (op, target, dtype, shape class); by_class=False: per (op, target, dtype)."""
        groups = {}
        for c in self.cases:
            k = (c["op"], c["target"], c["dtype"], c["shape_class"] if by_class else "(all)")
            if not by_class and c["shape_class"] in ("bad args", "binding", "load", "crash"):
                k = k[:3] + (c["shape_class"],)
            g = groups.setdefault(k, dict(op=k[0], target=k[1], dtype=k[2], shape_class=k[3], cases=0, failed=0,
                                          max_err=None, worst_ratio=None))
            g["cases"] += 1
            g["failed"] += 0 if c["ok"] else 1
            if c["err"] is not None and math.isfinite(c["err"]):
                g["max_err"] = max(g["max_err"] or 0.0, c["err"])
            if c["ratio"] is not None and math.isfinite(c["ratio"]):
                g["worst_ratio"] = max(g["worst_ratio"] or 0.0, c["ratio"])
        return list(groups.values())

    def failures(self):
        return [c for c in self.cases if not c["ok"]]


def table(rows):
    head = ("op", "target", "dtype", "shape class", "result", "cases", "max err", "err/tol")
    lines = [head]
    for g in rows:
        lines.append((g["op"], g["target"], g["dtype"], g["shape_class"],
                      "pass" if g["failed"] == 0 else f"FAIL({g['failed']})", str(g["cases"]),
                      "-" if g["max_err"] is None else f"{g['max_err']:.2e}",
                      "-" if g["worst_ratio"] is None else f"{g['worst_ratio']:.2f}"))
    w = [max(len(r[i]) for r in lines) for i in range(len(head))]
    out = []
    for n, r in enumerate(lines):
        out.append("| " + " | ".join(r[i].ljust(w[i]) for i in range(len(head))) + " |")
        if n == 0:
            out.append("| " + " | ".join("-" * w[i] for i in range(len(head))) + " |")
    return "\n".join(out)


def nan_like_untouched(t):
    torch.cuda.synchronize()
    return bool(torch.isnan(t.float()).all())


# --- variants and loading -------------------------------------------------------------

def packages_from_manifests():
    """The folders kernels-src/list-packages.sh lists with a cpu and a cuda backend."""
    out = subprocess.run([os.path.join(HERE, "..", "..", "kernels-src", "list-packages.sh")], check=True,
                         capture_output=True, text=True).stdout
    return tuple(line.split()[0] for line in out.splitlines()
                 if {"cpu", "cuda"} <= set(line.split()[3].split(",")))


# A host loads several packages one after another; each library must stay itself (the
# loader keeps every loaded library's /proc/self/fd name distinct).
def check_fd_name_reuse(res, args, variants):
    """Two packages loaded one after the other in one process, as any host does."""
    loaded = []
    try:
        for pkg in ("attention", "rms-norm"):
            loaded.append(kh.load_kernel(f"{ORG}/{pkg}@1", hub=args.hub, cache_dir=args.cache,
                                         variant=variants[pkg]["cpu"]))
        ok = loaded[1].name == f"{ORG}/rms-norm"
        res.add("load_kernel", "cpu", "-", "binding", "a second package in the same process", ok,
                detail=" then ".join(f"{k.name} {k.variant}" for k in loaded))
    except kh.Error as e:
        res.add("load_kernel", "cpu", "-", "binding", "a second package in the same process", False,
                detail=f"{e}")
    for k in loaded:
        k.close()


def hub_variants(hub, pkg):
    """Variant keys of the newest 1.x release in a file:// hub's index, by target name."""
    if not hub.startswith("file://"):
        raise SystemExit("--hub must be a file:// hub (its index is read to find the variant keys)")
    with open(os.path.join(hub[len("file://"):], "repos", ORG, pkg, "index.json")) as f:
        index = json.load(f)
    keys = set()
    for rel in index["releases"].values() if isinstance(index["releases"], dict) else index["releases"]:
        keys.update(rel["variants"].keys())
    found = {}
    for key in sorted(keys):
        m = re.match(r"^(cpu|cuda[0-9.]+)-([a-z0-9_]+)-abi", key)
        if not m:
            continue
        target = m.group(2) if m.group(1).startswith("cuda") else "cpu"
        if target == "cpu" and "cpu" in found and key.count("_v") > found["cpu"].count("_v"):
            continue  # prefer the baseline CPU build: it runs everywhere
        found[target] = key
    return found


# --- attention ------------------------------------------------------------------------

ATTN_CLASSES = [  # (shape class, [(b, sq, sk, hq, hkv, packed)])
    ("len1", [(2, 1, 1, 4, 4, False), (2, 1, 300, 4, 4, False)]),
    ("odd", [(2, 17, 17, 4, 4, False), (2, 300, 300, 4, 4, False)]),
    ("sq<sk", [(2, 17, 300, 4, 4, False), (2, 128, 1024, 4, 4, False)]),
    ("sq>sk", [(2, 300, 17, 4, 4, False), (2, 1024, 128, 4, 4, False)]),
    ("gqa", [(2, 300, 300, 8, 2, False)]),
    ("mqa", [(2, 257, 257, 8, 1, False)]),
    ("packed-qkv", [(2, 300, 300, 4, 4, True), (1, 200, 200, 8, 2, True)]),
]


def attention_case(op, q, k, v, out, causal, stream=None):
    """Runs attention_fwd with out/lse poisoned; returns (out, lse)."""
    b, sq, hq, d = q.shape
    out.fill_(float("nan"))
    lse = torch.full((b, hq, sq), float("nan"), device=q.device, dtype=torch.float32)
    op(out, lse, q, k, v, 1.0 / math.sqrt(d), causal, stream=stream)
    if q.is_cuda:
        torch.cuda.synchronize()
    return out, lse


def sdpa_error(q, k, v, scale, causal, ref_o, ref_lse):
    """max|sdpa - ref64| over rows that attend to at least one key. Fully masked rows (causal,
    sq > sk) are excluded: SDPA's output there is backend-defined (NaN, or an average with
    enable_gqa), while kh must write exactly 0 there (checked against ref64's 0 by the caller)."""
    o = sdpa_same_precision(q, k, v, scale, causal)
    valid = torch.isfinite(ref_lse).transpose(1, 2).unsqueeze(-1).to(o.device)  # (b, sq, hq, 1)
    diff = (o - ref_o.to(o.device)).abs().masked_fill(~valid, 0.0)
    return diff.max().item() if diff.numel() else 0.0


def attention_errors(out, lse, ref_o, ref_lse):
    o = out.double()
    nan_out = bool(torch.isnan(o).any())
    err = (o - ref_o).abs().max().item() if o.numel() else 0.0
    inf_ref = torch.isinf(ref_lse)
    lse_nan = bool(torch.isnan(lse).any())
    lse_inf_ok = bool((torch.isinf(lse) == inf_ref).all()) and bool((lse[inf_ref] < 0).all())
    fin = ~inf_ref
    lse_err = (lse.double()[fin] - ref_lse[fin]).abs().max().item() if fin.any() else 0.0
    problems = []
    if nan_out:
        problems.append("NaN (unwritten) outputs")
    if lse_nan:
        problems.append("NaN lse")
    if not lse_inf_ok:
        problems.append("lse -inf mismatch")
    if lse_err > 1e-3:
        problems.append(f"lse err {lse_err:.1e} > 1e-3")
    masked_rows = o[inf_ref.transpose(1, 2).to(o.device)]  # (rows, d) of fully masked query rows
    if masked_rows.numel() and not bool((masked_rows == 0).all()):
        problems.append("fully masked rows are not exactly 0")
    return err, lse_err, problems


def check_attention(res, kernels, gen, quick):
    for target in GPU_TARGETS:
        op = kernels[("attention", target)].op("attention_fwd")
        for d in ((64, 128) if quick else (64, 128, 256)):
            for dtype in (torch.bfloat16, torch.float16):
                for causal in (False, True):
                    for cls, shapes in ATTN_CLASSES:
                        for (b, sq, sk, hq, hkv, packed) in (shapes[:1] if quick else shapes):
                            name = f"d{d} b{b} sq{sq} sk{sk} hq{hq} hkv{hkv} {'causal' if causal else 'full'}"
                            try:
                                q, k, v, out = make_inputs(b, sq, sk, hq, hkv, d, dtype, packed, gen)
                                out, lse = attention_case(op, q, k, v, out, causal)
                                scale = 1.0 / math.sqrt(d)
                                ref_o, ref_lse = attention_reference(q, k, v, scale, causal)
                                sdpa_err = sdpa_error(q, k, v, scale, causal, ref_o, ref_lse)
                                err, lse_err, problems = attention_errors(out, lse, ref_o, ref_lse)
                                tol = 2.0 * sdpa_err + 1e-5
                                if err > tol:
                                    problems.append(f"err {err:.2e} > tol {tol:.2e}")
                                res.add("attention_fwd", target, DT_NAMES[dtype], cls, name, not problems, err, tol,
                                        "; ".join(problems) or f"sdpa {sdpa_err:.2e} lse_err {lse_err:.1e}")
                            except kh.Error as e:
                                res.add("attention_fwd", target, DT_NAMES[dtype], cls, name, False, detail=str(e))


def check_attention_oracle(res, kernels, gen):
    """The GPU builds against the kh CPU build's output, on a few small shapes."""
    cpu_op = kernels[("attention", "cpu")].op("attention_fwd")
    shapes = [("sq<sk gqa", 1, 77, 200, 4, 2, False, True), ("sq>sk mqa", 1, 200, 77, 2, 1, False, True),
              ("odd", 1, 130, 130, 2, 2, False, False), ("packed-qkv", 1, 130, 130, 2, 2, True, True)]
    for d in (64, 128):
        for dtype in (torch.bfloat16, torch.float16):
            for cls, b, sq, sk, hq, hkv, packed, causal in shapes:
                q, k, v, out = make_inputs(b, sq, sk, hq, hkv, d, dtype, packed, gen)
                scale = 1.0 / math.sqrt(d)
                qc, kc, vc = (t.cpu() for t in (q, k, v))
                oc = torch.empty(qc.shape, dtype=dtype)
                name = f"d{d} sq{sq} sk{sk} hq{hq} hkv{hkv} {'causal' if causal else 'full'}"
                try:
                    oc, lc = attention_case(cpu_op, qc, kc, vc, oc, causal)
                except kh.Error as e:
                    res.add("attention_fwd", "cpu", DT_NAMES[dtype], "oracle " + cls, name, False, detail=str(e))
                    continue
                ref_o, ref_lse = attention_reference(q, k, v, scale, causal)
                ref_o, ref_lse = ref_o.cpu(), ref_lse.cpu()
                # The oracle itself: float64 accumulation, one rounding to dtype at the end.
                rtol = 2.0 ** -7 if dtype == torch.bfloat16 else 2.0 ** -10
                o_err = (oc.double() - ref_o).abs()
                o_ok = bool((o_err <= rtol * ref_o.abs() + 1e-6).all())
                err_c, lse_err_c, problems = attention_errors(oc, lc, ref_o, ref_lse)
                if not o_ok:
                    problems.append("CPU oracle is not within one rounding of ref64")
                res.add("attention_fwd", "cpu", DT_NAMES[dtype], "oracle " + cls, name, not problems, err_c,
                        None, "; ".join(problems) or f"lse_err {lse_err_c:.1e}")
                sdpa_err = sdpa_error(q, k, v, scale, causal, ref_o, ref_lse)
                for target in GPU_TARGETS:
                    op = kernels[("attention", target)].op("attention_fwd")
                    try:
                        og, lg = attention_case(op, q, k, v, out, causal)
                    except kh.Error as e:
                        res.add("attention_fwd", f"{target} vs cpu", DT_NAMES[dtype], "oracle " + cls, name, False,
                                detail=str(e))
                        continue
                    err, lse_err, problems = attention_errors(og.cpu(), lg.cpu(), oc.double(), lc.double())
                    tol = 2.0 * sdpa_err + err_c + 1e-5
                    if err > tol:
                        problems.append(f"|gpu - cpu| {err:.2e} > {tol:.2e}")
                    res.add("attention_fwd", f"{target} vs cpu", DT_NAMES[dtype], "oracle " + cls, name, not problems,
                            err, tol, "; ".join(problems) or f"lse |gpu - cpu| {lse_err:.1e}")


# --- norms ----------------------------------------------------------------------------

NORM_OPS = {  # op -> (package, kind, fused)
    "rms_norm": ("rms-norm", "rms", False),
    "fused_add_rms_norm": ("rms-norm", "rms", True),
    "layer_norm": ("layer-norm", "layer", False),
    "fused_add_layer_norm": ("layer-norm", "layer", True),
}
# (shape class, [(hidden, rows, layout, weight dtype, (weight?, bias? | "other"), in place)])
NORM_CLASSES = [
    ("hidden 1", [(1, 3, "contig", "same", (True, True), False)]),
    ("hidden 7 (< vector)", [(7, 1000, "contig", "same", (True, True), False)]),
    ("vector multiple", [(64, 1000, "contig", "same", (True, True), False),
                         (4096, 1000, "contig", "same", (True, True), False)]),
    ("odd hidden", [(999, 257, "contig", "same", (True, True), False),
                    (4097, 64, "contig", "same", (True, True), False)]),
    ("large", [(8192, 64, "contig", "same", (True, True), False),
               (65536, 16, "contig", "same", (True, True), False)]),
    ("> 65536 odd", [(70001, 9, "contig", "same", (True, True), False)]),
    ("strided rows", [(4096, 100, "pad8", "same", (True, True), False), (999, 100, "pad3", "same", (True, True), False),
                      (70001, 8, "pad3", "same", (True, True), False), (1000, 100, "3d", "same", (True, True), False)]),
    ("weight/bias", [(1000, 64, "contig", "f32", (True, True), False), (1000, 64, "contig", "same", (True, False), False),
                     (1000, 64, "contig", "same", (False, False), False), (1000, 64, "contig", "same", (False, True), False),
                     (1000, 64, "contig", "same", (True, "other"), False)]),
    ("in place", [(4096, 3, "contig", "same", (True, True), True), (70001, 3, "contig", "same", (True, True), True)]),
]


def norm_args(kind, fused, out, res_out, x, residual, w, b, eps):
    if kind == "rms":
        return (out, res_out, x, residual, w, eps) if fused else (out, x, w, eps)
    return (out, res_out, x, residual, w, b, eps) if fused else (out, x, w, b, eps)


def norm_errors(out, ref_out, dtype):
    o = out.double()
    rtol, atol = TOL[dtype]
    diff = (o - ref_out).abs()
    bound = atol + rtol * ref_out.abs()
    problems = []
    if torch.isnan(o).any():
        problems.append(f"{int(torch.isnan(o).sum())} NaN (unwritten) outputs")
    bad = diff > bound
    if bad.any():
        i = int(bad.flatten().nonzero()[0])
        problems.append(f"{int(bad.sum())} elements off, e.g. flat[{i}] got {o.flatten()[i].item():.7g} "
                        f"want {ref_out.flatten()[i].item():.7g}")
    err = diff.max().item() if diff.numel() else 0.0
    ratio = (diff / bound).max().item() if diff.numel() else 0.0
    return err, ratio, problems


def check_norms(res, kernels, gen, quick):
    side = torch.cuda.Stream()
    n = 0
    for target in GPU_TARGETS:
        for opname, (pkg, kind, fused) in NORM_OPS.items():
            op = kernels[(pkg, target)].op(opname)
            eps = 1e-6 if kind == "rms" else 1e-5
            for dtype in (torch.float32, torch.float16, torch.bfloat16):
                for cls, cases in NORM_CLASSES:
                    if kind == "rms" and cls == "weight/bias":
                        cases = [c for c in cases if c[3] == "f32"]  # only the weight's dtype varies
                    for (hidden, rows, layout, wdt, params, inplace) in (cases[:1] if quick else cases):
                        if dtype == torch.float32 and wdt == "f32":
                            wdt = "same"
                        n += 1
                        stream = side if n % 3 == 0 else None  # None: torch's current stream
                        name = (f"hidden {hidden} rows {rows} {layout} weight {'-' if not params[0] else wdt} "
                                f"bias {params[1] if kind == 'layer' else '-'}{' inplace' if inplace else ''}"
                                f"{' side-stream' if stream is not None else ''}")
                        try:
                            norm_case(res, op, opname, target, kind, fused, dtype, cls, name, hidden, rows, layout,
                                      wdt, params, inplace, eps, stream, gen)
                        except kh.Error as e:
                            res.add(opname, target, DT_NAMES[dtype], cls, name, False, detail=str(e))


def norm_case(res, op, opname, target, kind, fused, dtype, cls, name, hidden, rows, layout, wdt, params, inplace,
              eps, stream, gen):
    x, x_base, residual, res_base, w, b = norm_inputs(kind, fused, dtype, hidden, rows, layout, wdt, params, gen)
    ref_out, ref_res = norm_reference(kind, x, residual, w, b, eps, dtype)
    x_in, r_in = x.clone(), (residual.clone() if residual is not None else None)
    if inplace:  # out is x; residual_out is residual
        out, out_base, res_out, res_out_base = x, x_base, residual, res_base
    else:
        out, out_base = make_rows(rows, hidden, dtype, layout, gen)
        out.fill_(float("nan"))
        res_out = res_out_base = None
        if fused:
            res_out, res_out_base = make_rows(rows, hidden, dtype, layout, gen)
            res_out.fill_(float("nan"))
    if stream is not None:
        stream.wait_stream(torch.cuda.current_stream())  # the inputs were written on the current stream
    op(*norm_args(kind, fused, out, res_out, x, residual, w, b, eps), stream=stream)
    (stream if stream is not None else torch.cuda.current_stream()).synchronize()
    err, ratio, problems = norm_errors(out, ref_out, dtype)
    if fused and not torch.equal(res_out.double(), ref_res.double()):
        problems.append(f"residual_out differs from round(x + residual) in "
                        f"{int((res_out.double() != ref_res.double()).sum())} elements")
    if not inplace and (not torch.equal(x, x_in) or (fused and not torch.equal(residual, r_in))):
        problems.append("an input was modified")
    for what, view, base in (("out", out, out_base), ("residual_out", res_out, res_out_base)):
        if view is not None and base is not None and not gaps_intact(base, view):
            problems.append(f"{what}: wrote into the gap between rows")
    tol = err / ratio if ratio > 0 else None
    res.add(opname, target, DT_NAMES[dtype], cls, name, not problems, err, tol, "; ".join(problems))


def check_norms_oracle(res, kernels, gen):
    """The GPU builds against the kh CPU build on the same inputs (CPU copies, same layout)."""
    for opname, (pkg, kind, fused) in NORM_OPS.items():
        cpu_op = kernels[(pkg, "cpu")].op(opname)
        eps = 1e-6 if kind == "rms" else 1e-5
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for (hidden, rows, layout) in ((999, 64, "contig"), (4096, 8, "pad3"), (70001, 2, "contig")):
                name = f"hidden {hidden} rows {rows} {layout}"
                x, _, residual, _, w, b = norm_inputs(kind, fused, dtype, hidden, rows, layout, "same", (True, True),
                                                      gen)
                ref_out, ref_res = norm_reference(kind, x, residual, w, b, eps, dtype)
                # CPU copies in the same layout (strided rows stay strided)
                def to_cpu(t):
                    if t is None:
                        return None
                    base = torch.full((t.shape[0], t.stride(0)) if t.dim() == 2 else t.shape, SENTINEL, dtype=t.dtype)
                    view = base[:, : t.shape[1]] if t.dim() == 2 else base
                    view.copy_(t.cpu())
                    return view
                xc, rc, wc, bc = to_cpu(x), to_cpu(residual), (w.cpu() if w is not None else None), \
                    (b.cpu() if b is not None else None)
                oc = torch.full(xc.shape, float("nan"), dtype=dtype)
                roc = torch.full(xc.shape, float("nan"), dtype=dtype) if fused else None
                try:
                    cpu_op(*norm_args(kind, fused, oc, roc, xc, rc, wc, bc, eps))
                except kh.Error as e:
                    res.add(opname, "cpu", DT_NAMES[dtype], "oracle", name, False, detail=str(e))
                    continue
                err_c, ratio_c, problems = norm_errors(oc, ref_out.cpu(), dtype)
                if fused and not torch.equal(roc.double(), ref_res.double().cpu()):
                    problems.append("CPU residual_out differs from round(x + residual)")
                res.add(opname, "cpu", DT_NAMES[dtype], "oracle", name, not problems, err_c,
                        err_c / ratio_c if ratio_c > 0 else None, "; ".join(problems))
                rtol, atol = TOL[dtype]
                for target in GPU_TARGETS:
                    op = kernels[(pkg, target)].op(opname)
                    out = torch.full(x.shape, float("nan"), dtype=dtype, device="cuda")
                    res_out = torch.full(x.shape, float("nan"), dtype=dtype, device="cuda") if fused else None
                    try:
                        op(*norm_args(kind, fused, out, res_out, x, residual, w, b, eps))
                        torch.cuda.synchronize()
                    except kh.Error as e:
                        res.add(opname, f"{target} vs cpu", DT_NAMES[dtype], "oracle", name, False, detail=str(e))
                        continue
                    diff = (out.double().cpu() - oc.double()).abs()
                    bound = 2 * (atol + rtol * oc.double().abs())
                    problems = []
                    if torch.isnan(out).any():
                        problems.append("NaN (unwritten) outputs")
                    if bool((diff > bound).any()):
                        problems.append(f"{int((diff > bound).sum())} elements further than 2 tolerances from the CPU's")
                    if fused and not torch.equal(res_out.cpu(), roc):
                        problems.append("residual_out differs from the CPU's")
                    err = diff.max().item()
                    ratio = (diff / bound).max().item()
                    res.add(opname, f"{target} vs cpu", DT_NAMES[dtype], "oracle", name, not problems, err,
                            err / ratio if ratio > 0 else None, "; ".join(problems))


# --- bad arguments --------------------------------------------------------------------

def expect_error(res, op_label, target, case, fn, poisoned, status, arg):
    """fn() must raise kh.Error(status) naming 'arg', and leave `poisoned` all NaN."""
    try:
        fn()
    except kh.Error as e:
        problems = []
        if e.status != status:
            problems.append(f"status {e.status_name}, expected {kh.Error(status, '').status_name}")
        if arg and f"'{arg}'" not in e.message:
            problems.append(f"message does not name '{arg}'")
        if poisoned is not None and not nan_like_untouched(poisoned):
            problems.append("the output was written (a kernel ran)")
        res.add(op_label, target, "-", "bad args", case, not problems, detail="; ".join(problems) or str(e))
        return
    except Exception as e:  # noqa: BLE001 - any other failure is a finding
        res.add(op_label, target, "-", "bad args", case, False, detail=f"{type(e).__name__}: {e}")
        return
    res.add(op_label, target, "-", "bad args", case, False, detail="accepted; expected kh.Error")


def check_bad_args(res, kernels):
    INV, UNS = kh.KH_ERROR_INVALID_ARGUMENT, kh.KH_ERROR_UNSUPPORTED
    for target in GPU_TARGETS:
        op = kernels[("attention", target)].op("attention_fwd")
        dev = "cuda"

        def qkv(d=64, dtype=torch.bfloat16, b=2, sq=16, sk=16, hq=4, hkv=4):
            q = torch.randn(b, sq, hq, d, device=dev).to(dtype)
            k = torch.randn(b, sk, hkv, d, device=dev).to(dtype)
            v = torch.randn(b, sk, hkv, d, device=dev).to(dtype)
            out = torch.full((b, sq, hq, d), float("nan"), device=dev, dtype=dtype)
            lse = torch.full((b, hq, sq), float("nan"), device=dev, dtype=torch.float32)
            return q, k, v, out, lse

        q, k, v, out, lse = qkv(d=36)  # 1.0 refused 96 too; 1.1 takes every multiple of 8 in [32, 256]
        expect_error(res, "attention_fwd", target, "head_dim 36", lambda: op(out, lse, q, k, v, 0.1, False), out, UNS, "q")
        q, k, v, out, lse = qkv()
        k3 = torch.randn(3, 16, 4, 64, device=dev).to(torch.bfloat16)
        expect_error(res, "attention_fwd", target, "k batch != q batch",
                     lambda: op(out, lse, q, k3, k3, 0.1, False), out, INV, "k")
        out2 = torch.full((2, 15, 4, 64), float("nan"), device=dev, dtype=torch.bfloat16)
        expect_error(res, "attention_fwd", target, "out shape != q shape",
                     lambda: op(out2, None, q, k, v, 0.1, False), out2, INV, "out")
        v2 = torch.randn(2, 17, 4, 64, device=dev).to(torch.bfloat16)
        expect_error(res, "attention_fwd", target, "v shape != k shape",
                     lambda: op(out, lse, q, k, v2, 0.1, False), out, INV, "v")
        q32, k32, v32, out32, lse32 = qkv(dtype=torch.float32)
        expect_error(res, "attention_fwd", target, "float32 q (unsupported dtype)",
                     lambda: op(out, lse, q32, k32, v32, 0.1, False), out, INV, "q")
        expect_error(res, "attention_fwd", target, "k fp16, q bf16",
                     lambda: op(out, lse, q, k.to(torch.float16), v, 0.1, False), out, INV, "k")
        lse_bf = torch.full((2, 4, 16), float("nan"), device=dev, dtype=torch.bfloat16)
        expect_error(res, "attention_fwd", target, "lse bf16",
                     lambda: op(out, lse_bf, q, k, v, 0.1, False), out, INV, "lse")
        q_nc = torch.randn(2, 16, 4, 64, device=dev).to(torch.bfloat16).transpose(1, 3).contiguous().transpose(1, 3)
        assert q_nc.stride(-1) != 1
        expect_error(res, "attention_fwd", target, "q last dim not contiguous",
                     lambda: op(out, lse, q_nc, k, v, 0.1, False), out, INV, "q")
        expect_error(res, "attention_fwd", target, "v on the CPU",
                     lambda: op(out, lse, q, k, v.cpu(), 0.1, False), out, INV, "v")
        expect_error(res, "attention_fwd", target, "int for float scale",
                     lambda: op(out, lse, q, k, v, 1, False), out, INV, "scale")
        expect_error(res, "attention_fwd", target, "6 of 7 arguments",
                     lambda: op(out, lse, q, k, v, 0.1), out, INV, None)

        for opname, (pkg, kind, fused) in NORM_OPS.items():
            nop = kernels[(pkg, target)].op(opname)
            eps = 1e-5
            x = torch.randn(4, 64, device=dev).to(torch.bfloat16)
            r = torch.randn(4, 64, device=dev).to(torch.bfloat16)
            w = torch.ones(64, device=dev, dtype=torch.bfloat16)
            bias = torch.zeros(64, device=dev, dtype=torch.bfloat16)

            def nan(shape=(4, 64), dtype=torch.bfloat16):
                return torch.full(shape, float("nan"), device=dev, dtype=dtype)

            def call(out, xx, ww=w, rr=r, e=eps, res_out=None):
                ro = res_out if res_out is not None else nan()
                nop(*norm_args(kind, fused, out, ro if fused else None, xx, rr if fused else None, ww, bias, e))

            o = nan((4, 32))
            expect_error(res, opname, target, "out shape != x shape", lambda: call(o, x), o, INV, "out")
            o = nan()
            expect_error(res, opname, target, "float64 x", lambda: call(o, x.double()), o, INV, "x")
            x_nc = torch.randn(64, 4, device=dev).to(torch.bfloat16).t()
            expect_error(res, opname, target, "x last dim not contiguous", lambda: call(o, x_nc), o, INV, "x")
            expect_error(res, opname, target, "weight of 63", lambda: call(o, x, ww=w[:63]), o, INV, "weight")
            expect_error(res, opname, target, "eps < 0", lambda: call(o, x, e=-1.0), o, INV, "eps")
            if fused:
                expect_error(res, opname, target, "residual shape != x shape",
                             lambda: call(o, x, rr=torch.randn(4, 65, device=dev).to(torch.bfloat16)), o, INV,
                             "residual")


# --- the binding itself ---------------------------------------------------------------

class DLPackOnly:
    """An array that offers nothing but the DLPack protocol (what NumPy, CuPy, JAX offer)."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, stream=None, **kw):
        return self._t.__dlpack__(stream=stream) if stream is not None else self._t.__dlpack__()

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def check_binding(res, kernels, args, variants, gen):
    # Automatic selection (no variant=) on this machine: the sm90a build.
    for pkg in PACKAGES:
        try:
            k = kh.load_kernel(f"{ORG}/{pkg}@1", hub=args.hub, cache_dir=args.cache)
            ok = "-sm90a-" in k.variant
            in_cache = os.path.realpath(k.path).startswith(os.path.realpath(args.cache))
            res.add("load_kernel", "auto", "-", "binding", f"{pkg}@1 selects sm90a", ok and in_cache,
                    detail=f"{k.variant} at {k.path}" + ("" if in_cache else " (not in the cache)"))
            k.close()
        except kh.Error as e:
            res.add("load_kernel", "auto", "-", "binding", f"{pkg}@1 selects sm90a", False, detail=str(e))

    def expect_load_error(case, fn, status):
        try:
            fn()
            res.add("load_kernel", "-", "-", "binding", case, False, detail="loaded; expected kh.Error")
        except kh.Error as e:
            res.add("load_kernel", "-", "-", "binding", case, e.status in status, detail=str(e))

    expect_load_error("unknown package", lambda: kh.load_kernel(f"{ORG}/no-such-kernel@1", hub=args.hub,
                                                                 cache_dir=args.cache), (kh.KH_ERROR_NOT_FOUND,))
    expect_load_error("unknown variant", lambda: kh.load_kernel(f"{ORG}/rms-norm@1", hub=args.hub, cache_dir=args.cache,
                                                                 variant="cuda13.0-sm99-abi1-x86_64-linux"),
                      (kh.KH_ERROR_NOT_FOUND, kh.KH_ERROR_NO_COMPATIBLE_VARIANT))
    expect_load_error("unknown version", lambda: kh.load_kernel(f"{ORG}/rms-norm@7", hub=args.hub,
                                                                 cache_dir=args.cache), (kh.KH_ERROR_NOT_FOUND,))
    # offline: everything needed is cached by now
    try:
        k = kh.load_kernel(f"{ORG}/rms-norm@1", cache_dir=args.cache, hub=args.hub, offline=True,
                           variant=variants["rms-norm"]["sm90a"])
        res.add("load_kernel", "sm90a", "-", "binding", "offline from the cache", True, detail=k.variant)
    except kh.Error as e:
        res.add("load_kernel", "sm90a", "-", "binding", "offline from the cache", False, detail=str(e))
    try:
        kernels[("rms-norm", "sm90a")].op("no_such_op")
        res.add("Kernel.op", "sm90a", "-", "binding", "unknown op", False, detail="found; expected kh.Error")
    except kh.Error as e:
        res.add("Kernel.op", "sm90a", "-", "binding", "unknown op",
                e.status == kh.KH_ERROR_NOT_FOUND and "rms_norm" in e.message, detail=str(e))

    # __dlpack__-only arrays on the GPU (bf16 through torch's DLPack export) and an explicit stream.
    for target in GPU_TARGETS:
        op = kernels[("rms-norm", target)].op("rms_norm")
        for dtype in (torch.bfloat16, torch.float32):
            x = torch.randn(33, 1000, device="cuda", generator=gen).to(dtype)
            w = torch.rand(1000, device="cuda", generator=gen).to(dtype) + 0.5
            out = torch.full_like(x, float("nan"))
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            try:
                op(DLPackOnly(out), DLPackOnly(x), DLPackOnly(w), 1e-6, stream=s)
                s.synchronize()
                ref, _ = norm_reference("rms", x, None, w, None, 1e-6, dtype)
                err, ratio, problems = norm_errors(out, ref, dtype)
                res.add("rms_norm", target, DT_NAMES[dtype], "binding", "__dlpack__ arrays, explicit stream",
                        not problems, err, err / ratio if ratio > 0 else None, "; ".join(problems))
            except (kh.Error, TypeError, RuntimeError) as e:
                res.add("rms_norm", target, DT_NAMES[dtype], "binding", "__dlpack__ arrays, explicit stream", False,
                        detail=f"{type(e).__name__}: {e}")
    try:
        import cupy  # noqa: F401
        cp = sys.modules["cupy"]
        op = kernels[("rms-norm", "sm90a")].op("rms_norm")
        x = cp.random.standard_normal((17, 4097), dtype=cp.float32)
        w = cp.ones(4097, dtype=cp.float32)
        out = cp.full_like(x, cp.nan)
        op(out, x, w, 1e-6)  # CuPy's current stream
        cp.cuda.get_current_stream().synchronize()
        xt = torch.from_dlpack(x)
        ref, _ = norm_reference("rms", xt, None, torch.from_dlpack(w), None, 1e-6, torch.float32)
        err, ratio, problems = norm_errors(torch.from_dlpack(out), ref, torch.float32)
        res.add("rms_norm", "sm90a", "f32", "binding", "CuPy arrays", not problems, err,
                err / ratio if ratio > 0 else None, "; ".join(problems))
    except ImportError:
        print("(CuPy not installed: its binding check is skipped)")
    except Exception as e:  # noqa: BLE001
        res.add("rms_norm", "sm90a", "f32", "binding", "CuPy arrays", False, detail=f"{type(e).__name__}: {e}")
    try:
        import numpy as np
        op = kernels[("rms-norm", "cpu")].op("rms_norm")
        x = np.random.default_rng(1).standard_normal((5, 333)).astype(np.float32)
        w = np.full(333, 1.5, dtype=np.float32)
        out = np.full_like(x, np.nan)
        op(out, x, w, 1e-6)
        ref = x.astype(np.float64) / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * 1.5
        err = float(np.abs(out - ref).max())
        res.add("rms_norm", "cpu", "f32", "binding", "NumPy arrays", err <= 1e-4, err, 1e-4)
    except ImportError:
        print("(NumPy not installed: its binding check is skipped)")
    except Exception as e:  # noqa: BLE001
        res.add("rms_norm", "cpu", "f32", "binding", "NumPy arrays", False, detail=f"{type(e).__name__}: {e}")


# --- main -----------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hub", default=os.environ.get("KH_HUB"), help="file:// hub holding every variant")
    ap.add_argument("--cache", default=os.environ.get("KH_CACHE"), help="kh cache directory")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="folder for summary.txt and summary.json")
    ap.add_argument("--quick", action="store_true", help="one shape per class, head dims 64/128")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--packages", help="the package folders to load, space-separated (default: kernels-src's "
                    "packages with a cpu and a cuda backend, from kernels-src/list-packages.sh)")
    args = ap.parse_args()
    global PACKAGES
    PACKAGES = tuple(args.packages.split()) if args.packages else packages_from_manifests()
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 0
    if not args.hub or not args.cache:
        ap.error("--hub and --cache (or KH_HUB and KH_CACHE) are required")
    t0 = time.time()
    version, abi = kh.library_version()
    print(f"kh {version} (ABI {abi[0]}.{abi[1]}) from {kh.library_path()}; {torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}")

    res = Results()
    variants = {pkg: hub_variants(args.hub, pkg) for pkg in PACKAGES}
    check_fd_name_reuse(res, args, variants)
    kernels = {}
    for pkg in PACKAGES:
        for target in ("sm90a", "sm80", "cpu"):
            key = variants[pkg].get(target)
            case = f"{pkg}@1 variant={key}"
            if key is None:
                res.add("load_kernel", target, "-", "load", case, False, detail=f"the hub has no {target} build")
                continue
            try:
                k = kh.load_kernel(f"{ORG}/{pkg}@1", hub=args.hub, cache_dir=args.cache, variant=key)
                ok = k.variant == key and k.name == f"{ORG}/{pkg}"
                res.add("load_kernel", target, "-", "load", case, ok,
                        detail=f"{k.name} {k.version} {k.variant} ops={list(k.ops)} at {k.path}")
                print(f"loaded {k.name} {k.version} {k.variant} ops={list(k.ops)}")
                kernels[(pkg, target)] = k
            except kh.Error as e:
                res.add("load_kernel", target, "-", "load", case, False, detail=str(e))
    if len(kernels) != 3 * len(PACKAGES):
        print("not every build loaded; stopping")
    else:
        gen = torch.Generator(device="cuda")
        gen.manual_seed(args.seed)
        for section, fn in (("attention", lambda: check_attention(res, kernels, gen, args.quick)),
                            ("attention vs the CPU oracle", lambda: check_attention_oracle(res, kernels, gen)),
                            ("attention prefill head dims",
                             lambda: check_head_dims(res, kernels, gen, args.quick, GPU_TARGETS)),
                            ("attention varlen",
                             lambda: check_varlen(res, kernels, gen, args.quick, GPU_TARGETS, expect_error)),
                            ("attention varlen vs the CPU oracle",
                             lambda: check_varlen_oracle(res, kernels, gen, GPU_TARGETS)),
                            ("attention decode", lambda: check_decode(res, kernels, gen, args.quick, GPU_TARGETS)),
                            ("attention decode vs the CPU oracle",
                             lambda: check_decode_oracle(res, kernels, gen, GPU_TARGETS)),
                            ("attention decode bad block ids",
                             lambda: check_decode_bad_blocks(res, kernels, gen, GPU_TARGETS)),
                            ("norms", lambda: check_norms(res, kernels, gen, args.quick)),
                            ("norms vs the CPU oracle", lambda: check_norms_oracle(res, kernels, gen)),
                            ("bad arguments", lambda: check_bad_args(res, kernels)),
                            ("activation", lambda: check_activation(res, kernels, gen, args.quick, GPU_TARGETS)),
                            ("rotary", lambda: check_rotary(res, kernels, gen, args.quick, GPU_TARGETS)),
                            ("binding", lambda: check_binding(res, kernels, args, variants, gen))):
            only = [w.strip() for w in os.environ.get("KH_GPU_CHECK_ONLY", "").split(",") if w.strip()]
            if only and not any(section.startswith(w) for w in only):
                print(f"({section}: skipped, KH_GPU_CHECK_ONLY)")
                continue
            t = time.time()
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - report and carry on with the other sections
                traceback.print_exc()
                res.add(section, "-", "-", "crash", section, False, detail=f"{type(e).__name__}: {e}")
            print(f"({section}: {time.time() - t:.1f} s)", flush=True)

    rows = res.summary()
    text = table(rows)
    failures = res.failures()
    verdict = f"{len(res.cases)} checks, {len(failures)} failed, {time.time() - t0:.0f} s"
    print("\n" + text)
    print("\nper op x target x dtype (all shape classes):\n" + table(res.summary(by_class=False)) + "\n\n" + verdict)
    for c in failures[:30]:
        print(f"FAIL {c['op']} {c['target']} {c['dtype']} [{c['shape_class']}] {c['case']}: {c['detail']}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "summary.txt"), "w") as f:
            f.write(text + "\n\n" + verdict + "\n")
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, kh=version,
                           variants=variants, summary=rows, cases=res.cases, failed=len(failures)), f, indent=1)
    print("CHECK THROUGH KH:", "PASS" if not failures else "FAIL")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
