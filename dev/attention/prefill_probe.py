#!/usr/bin/env python3
"""prefill_probe.py: attention_fwd of several kernel libraries (builds of the same tree with
different compile-time switches, or of two trees) timed side by side in one process, shape by
shape and alternating between libraries, against PyTorch SDPA's default backend in the same
process (cuda/NOTES.md, the prefill sections). Every library's output is compared with the first
one's (max |difference|) and the first one's with SDPA (relative error) before timing.

  python3 prefill_probe.py --module base=LIB --module new=LIB2 [--shapes b4s4096h16d192c,...]

A shape is b<batch>s<seqlen>h<heads>d<head dim>, then c for causal (f or nothing: full).
"""
import argparse
import math
import os
import re
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_probe import time_us  # noqa: E402
from varlen_probe import Ops  # noqa: E402

DEFAULT_SHAPES = ("b4s4096h16d192c,b4s4096h16d192f,b2s8192h16d192c,b2s8192h16d192f,"
                  "b4s4096h16d128c,b4s4096h16d128f,b4s4096h16d256c,b4s4096h16d256f")


def parse_shape(text):
    m = re.fullmatch(r"b(\d+)s(\d+)h(\d+)d(\d+)([cf]?)", text)
    if not m:
        raise SystemExit(f"bad shape {text!r}: expected b<batch>s<seqlen>h<heads>d<head dim>[c|f]")
    b, s, h, d = (int(m.group(i)) for i in range(1, 5))
    return b, s, h, d, m.group(5) == "c"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", action="append", required=True, help="label=path of a kernel library")
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    libs = []
    for spec in args.module:
        label, _, path = spec.partition("=")
        libs.append((label, Ops(path)))
    gen = torch.Generator(device="cuda")
    gen.manual_seed(5)
    print("| shape | " + " | ".join(f"{label} ms | TF/s" for label, _ in libs) + " | SDPA TF/s | "
          + " | ".join(f"{label}/{libs[0][0]}" for label, _ in libs[1:]) + " | max diff |")
    print("| --- " * (2 * len(libs) + 3 + len(libs) - 1) + "|")
    for text in args.shapes.split(","):
        b, s, h, d, causal = parse_shape(text)
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
        scale = 1.0 / math.sqrt(d)
        outs = [torch.empty_like(q) for _ in libs]
        calls = [ops.bind("attention_fwd", out, None, q, k, v, scale, causal) for (_, ops), out in zip(libs, outs)]
        for c in calls:
            c()
        ref = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                             is_causal=causal, scale=scale).transpose(1, 2)
        err = ((outs[0].float() - ref.float()).norm() / ref.float().norm()).item()
        if not err < 1e-2:
            raise SystemExit(f"{text}: {libs[0][0]} rel error {err:.2e} against SDPA")
        diff = max((o.float() - outs[0].float()).abs().max().item() for o in outs[1:]) if len(outs) > 1 else 0.0
        times = [[] for _ in libs]
        for _ in range(args.rounds):
            for i, c in enumerate(calls):
                times[i].append(time_us([c], 20) / 1e3)
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        sdpa_ms = time_us([lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale)], 20) / 1e3
        fl = 4.0 * b * h * s * s * d / (2 if causal else 1)
        ms = [statistics.median(t) for t in times]
        cells = " | ".join(f"{m:.3f} | {fl / m / 1e9:.0f}" for m in ms)
        ratios = " | ".join(f"{ms[0] / m:.3f}x" for m in ms[1:])
        print(f"| {text} | {cells} | {fl / sdpa_ms / 1e9:.0f} | {ratios} | {diff:.1e} |", flush=True)
        del q, k, v, outs, calls
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
