#!/usr/bin/env python3
"""varlen_probe.py: attention_varlen_fwd on mixed lengths against attention_fwd on equal ones with
the same total tokens, for one kernel library called through the kernel ABI with ctypes (as
decode_probe.py does), so that a profiler can watch just these kernels (cuda/NOTES.md, the
varlen sections). Prints median ms and TFLOP/s of real tokens; --only varlen|fixed runs one op a
few times (for Nsight Compute).

  python3 varlen_probe.py --module LIB [--lens 2048,1024,4096,...] [--causal] [--only varlen]
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True)
    ap.add_argument("--lens", default="2048,1024,4096,1024,3072,1024,2048,2048")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--only", choices=("varlen", "fixed"), help="run one op 5 times, untimed (for a profiler)")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    ops = Ops(args.module)
    lens = [int(x) for x in args.lens.split(",")]
    total, h, d = sum(lens), args.heads, args.head_dim
    eq = total // len(lens)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(3)
    q, k, v = (torch.randn(total, h, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
    out = torch.empty_like(q)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), device="cuda", dtype=torch.int32)
    scale = 1.0 / math.sqrt(d)
    varlen = ops.bind("attention_varlen_fwd", out, None, q, k, v, cu, cu, max(lens), max(lens), scale, args.causal, -1,
                      0.0)
    qf, kf, vf = (t.view(len(lens), eq, h, d) for t in (q, k, v))
    outf = out.view(len(lens), eq, h, d)
    fixed = ops.bind("attention_fwd", outf, None, qf, kf, vf, scale, args.causal)
    if args.only:
        call = varlen if args.only == "varlen" else fixed
        for _ in range(5):
            call()
        torch.cuda.synchronize()
        return
    mode = "causal" if args.causal else "full"
    t_var, t_fix = time_us([varlen], 30) / 1e3, time_us([fixed], 30) / 1e3  # ms
    tf_var = flops(lens, h, d, args.causal) / t_var / 1e9
    tf_fix = flops([eq] * len(lens), h, d, args.causal) / t_fix / 1e9
    env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("KH_ATTENTION"))
    print(f"| {args.label} {mode} lens {args.lens} | {env or '-'} | {t_var:.3f} | {tf_var:.0f} | {t_fix:.3f} "
          f"| {tf_fix:.0f} | {tf_var / tf_fix:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
