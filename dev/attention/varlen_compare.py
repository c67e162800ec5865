#!/usr/bin/env python3
"""varlen_compare.py: attention_varlen_fwd of two kernel libraries on the same random mixes of
sequence lengths (odd tile counts, empty and one-row sequences, more keys than queries), output
and lse compared bit for bit. For schedule changes (cuda/NOTES.md, the varlen sections): which
CTA computes a tile, and in what order, must not change a bit of it, so a library whose only
change is its tile order must match the previous one exactly (that one checked against float64).

  python3 varlen_compare.py --base LIB --new LIB [--head-dims 128,192,256] [--cases 12]
"""
import argparse
import math
import os
import random
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from varlen_probe import Ops  # noqa: E402


def run(ops, lens_q, lens_k, h, hkv, d, causal, gen_seed):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(gen_seed)
    tq, tk = sum(lens_q), sum(lens_k)
    q = torch.randn(tq, h, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    k = torch.randn(tk, hkv, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    v = torch.randn(tk, hkv, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    out = torch.full_like(q, float("nan"))
    lse = torch.full((h, tq), float("nan"), device="cuda", dtype=torch.float32)
    cu_q = torch.tensor([0] + torch.tensor(lens_q).cumsum(0).tolist(), device="cuda", dtype=torch.int32)
    cu_k = torch.tensor([0] + torch.tensor(lens_k).cumsum(0).tolist(), device="cuda", dtype=torch.int32)
    call = ops.bind("attention_varlen_fwd", out, lse, q, k, v, cu_q, cu_k, max(lens_q), max(lens_k),
                    1.0 / math.sqrt(d), causal, -1, 0.0)
    call()
    torch.cuda.synchronize()
    return out, lse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--head-dims", default="64,96,128,192,256")
    ap.add_argument("--cases", type=int, default=12)
    args = ap.parse_args()
    base, new = Ops(args.base), Ops(args.new)
    rng = random.Random(11)
    failed = 0
    for d in (int(x) for x in args.head_dims.split(",")):
        for c in range(args.cases):
            n = rng.randint(1, 12)
            lens_q = [rng.choice([0, 1, 127, 128, 129, rng.randint(1, 3000), rng.randint(2000, 9000)]) for _ in range(n)]
            if max(lens_q) == 0:
                lens_q[0] = 300
            lens_k = [lq + (rng.randint(0, 400) if rng.random() < 0.3 else 0) for lq in lens_q]
            h, hkv = rng.choice([(16, 16), (32, 8), (8, 1), (12, 4)])
            causal = c % 4 != 3
            o0, l0 = run(base, lens_q, lens_k, h, hkv, d, causal, c)
            o1, l1 = run(new, lens_q, lens_k, h, hkv, d, causal, c)
            same = torch.equal(o0.view(torch.int16), o1.view(torch.int16)) and torch.equal(l0.view(torch.int32),
                                                                                           l1.view(torch.int32))
            finite = bool(torch.isfinite(o1).all())
            failed += not (same and finite)
            print(f"{'ok  ' if same and finite else 'FAIL'} d{d} h{h}/{hkv} {'causal' if causal else 'full'} "
                  f"lens_q {lens_q} lens_k {lens_k}: {'bit-identical' if same else 'DIFFERENT'}"
                  f"{'' if finite else ', non-finite output'}", flush=True)
    print(f"varlen_compare: {failed} of {args.cases * len(args.head_dims.split(','))} cases differ")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
