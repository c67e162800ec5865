#!/usr/bin/env python3
"""varlen_probe.py: attention_varlen_fwd on mixed lengths against attention_fwd on equal ones with
the same total tokens, for one kernel library called through the kernel ABI with ctypes (as
decode_probe.py does), so that a profiler can watch just these kernels (cuda/NOTES.md, the
varlen sections). Prints median ms and TFLOP/s of real tokens; --only varlen|fixed runs one op a
few times (for Nsight Compute).

  python3 varlen_probe.py --module [LABEL=]LIB [--module ...] [--lens 2048,1024,...[;MIX...]]
      [--head-dim 128[,192...]] [--causal] [--rounds N] [--pairs-off] [--only varlen]
"""
import argparse
import ctypes
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_dev_check import (KH_VALUE_BOOL, KH_VALUE_DOUBLE, KH_VALUE_INT, KH_VALUE_NONE,  # noqa: E402
                                 KH_VALUE_TENSOR, KhCallCtx, KhValue, negotiate)
from decode_probe import dl_tensor, time_us  # noqa: E402


class Ops:
    """The library's ops by name: ops[name](*args) with tensors, None, ints, floats and bools."""

    def __init__(self, path):
        self.lib, neg = negotiate(path)
        mod = neg.module.contents
        self.invokes = {mod.ops[i].name.decode(): mod.ops[i].invoke for i in range(mod.num_ops)}
        self.err = ctypes.create_string_buffer(1024)

    def bind(self, name, *values):
        keep, args = [], (KhValue * len(values))()
        for i, v in enumerate(values):
            if v is None:
                args[i].kind = KH_VALUE_NONE
            elif isinstance(v, torch.Tensor):
                d = dl_tensor(v)
                keep.append(d)
                args[i].kind = KH_VALUE_TENSOR
                args[i].u.tensor = ctypes.pointer(d[0])
            elif isinstance(v, bool):
                args[i].kind = KH_VALUE_BOOL
                args[i].u.b = 1 if v else 0
            elif isinstance(v, int):
                args[i].kind = KH_VALUE_INT
                args[i].u.i = v
            else:
                args[i].kind = KH_VALUE_DOUBLE
                args[i].u.d = float(v)
        ctx = KhCallCtx(ctypes.sizeof(KhCallCtx), 0, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),
                        ctypes.cast(self.err, ctypes.c_char_p), len(self.err))
        invoke = self.invokes[name]

        def call():
            rc = invoke(args, len(values), ctypes.byref(ctx))
            if rc != 0:
                raise RuntimeError(f"{name} failed ({rc}): {self.err.value.decode()}")
        call.keep = (keep, args, ctx)
        return call


def flops(lens, heads, d, causal):
    f = sum(4.0 * heads * n * n * d for n in lens)
    return f / 2 if causal else f


def make_case(lens, h, d):
    """Inputs of one mix: packed q, k, v, out (bf16) and cu_seqlens."""
    total = sum(lens)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(3)
    q, k, v = (torch.randn(total, h, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), device="cuda", dtype=torch.int32)
    return q, k, v, torch.empty_like(q), cu


def bind_calls(ops, case, lens, causal):
    """(varlen call, attention_fwd call on equal lengths with the same total tokens) of one library."""
    q, k, v, out, cu = case
    h, d = q.shape[1], q.shape[2]
    eq = sum(lens) // len(lens)
    scale = 1.0 / math.sqrt(d)
    varlen = ops.bind("attention_varlen_fwd", out, None, q, k, v, cu, cu, max(lens), max(lens), scale, causal, -1, 0.0)
    qf, kf, vf, outf = (t.view(len(lens), eq, h, d) for t in (q, k, v, out))
    return varlen, ops.bind("attention_fwd", outf, None, qf, kf, vf, scale, causal)


def time_row(label, calls, lens, h, d, causal, env=None):
    """One table row: the varlen call's and the equal-length call's medians (ms) and TFLOP/s."""
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        varlen, fixed = calls
        t_var, t_fix = time_us([varlen], 30) / 1e3, time_us([fixed], 30) / 1e3  # ms
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    eq = sum(lens) // len(lens)
    tf_var = flops(lens, h, d, causal) / t_var / 1e9
    tf_fix = flops([eq] * len(lens), h, d, causal) / t_fix / 1e9
    # The process's own KH_ATTENTION settings, with this row's on top.
    merged = {k: v for k, v in os.environ.items() if k.startswith("KH_ATTENTION")}
    merged.update(env or {})
    setting = " ".join(f"{k}={v}" for k, v in sorted(merged.items()))
    print(f"| {label} {'causal' if causal else 'full'} lens {','.join(map(str, lens))} | {setting or '-'} "
          f"| {t_var:.3f} | {tf_var:.0f} | {t_fix:.3f} | {tf_fix:.0f} | {tf_var / tf_fix:.2f}x |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True, action="append",
                    help="LIB or LABEL=LIB; repeat it to time several libraries, alternating, in one process")
    ap.add_argument("--lens", default="2048,1024,4096,1024,3072,1024,2048,2048", help="a mix, or mixes split by ';'")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--head-dim", default="128", help="a head dim, or several split by ','")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--rounds", type=int, default=1, help="rounds over the libraries")
    ap.add_argument("--pairs-off", action="store_true",
                    help="shorthand for --variant off:KH_ATTENTION_VARLEN_PAIRS=0 (the causal tile list)")
    ap.add_argument("--variant", action="append", default=[],
                    help="LABEL:NAME=VALUE: also time the last library with that environment setting")
    ap.add_argument("--only", choices=("varlen", "fixed"), help="run one op 5 times, untimed (for a profiler)")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    if args.pairs_off:
        args.variant.append("off:KH_ATTENTION_VARLEN_PAIRS=0")
    mods = [m.split("=", 1) if "=" in m else [args.label, m] for m in args.module]
    libs = [(label, Ops(path)) for label, path in mods]
    mixes = [[int(x) for x in mix.split(",")] for mix in args.lens.split(";")]
    dims = [int(x) for x in args.head_dim.split(",")]
    if args.only:
        varlen, fixed = bind_calls(libs[0][1], make_case(mixes[0], args.heads, dims[0]), mixes[0], args.causal)
        call = varlen if args.only == "varlen" else fixed
        for _ in range(5):
            call()
        torch.cuda.synchronize()
        return
    for d in dims:
        for lens in mixes:
            case = make_case(lens, args.heads, d)
            calls = [(label, bind_calls(ops, case, lens, args.causal)) for label, ops in libs]
            for r in range(args.rounds):
                tag = f" r{r + 1}" if args.rounds > 1 else ""
                for label, c in calls:
                    time_row(f"{label}{tag} d{d}", c, lens, args.heads, d, args.causal)
                for v in args.variant:
                    label, setting = v.split(":", 1)
                    name, value = setting.split("=", 1)
                    time_row(f"{label}{tag} d{d}", calls[-1][1], lens, args.heads, d, args.causal, {name: value})


if __name__ == "__main__":
    main()
