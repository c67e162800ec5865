#!/usr/bin/env python3
"""one_pass_probe.py: what the fastest single kernels that only move a decode call's K/V bytes take
at small sizes, timed as gpu_bench.py times the op (CUDA events around each call, queued behind a
GPU sleep, buffer sets rotated so that no pass is served from L2). For the batch 1 x 4k target of
cuda/NOTES.md "Decode" (at most half of SDPA's time): if no kernel that merely reads these bytes
finishes in that time, the target is below this GPU's floor for the shape.

Rows per size: a device copy (reads and writes nbytes in all, as gpu_bench's "1-pass us"), a
Triton kernel that reads nbytes once (each program sums its block of 16-byte words, one float
out a program: a pure read), and an empty kernel (the launch alone).

  python3 one_pass_probe.py [--mib 16.8,134,268] [--reps 200]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_probe import time_us  # noqa: E402 (the decode probe's timing, so both time alike)

L2_BYTES = 60 << 20


def triton_reader():
    """A Triton read kernel and its launcher, or None where Triton is missing."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def read_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs, mask=offs < n, other=0, eviction_policy="evict_first")
        tl.store(out_ptr + pid, tl.sum(v.to(tl.float32), axis=0))

    def launcher(x, out, block):
        n = x.numel()
        grid = (triton.cdiv(n, block),)
        return lambda: read_sum[grid](x, out, n, BLOCK=block)
    return launcher


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", default="16.8,134.2,268.4", help="sizes in MB (1e6 bytes), comma-separated")
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    reader = triton_reader()
    empty = torch.empty(1, device="cuda")
    print(f"empty kernel (x.zero_() of one float): {time_us([empty.zero_], args.reps):.1f} us")
    print("| MB | device copy us (read + write) | Triton read us (best block) | read TB/s |")
    print("| --- | --- | --- | --- |")
    for mb in (float(x) for x in args.mib.split(",")):
        nbytes = int(mb * 1e6)
        nsets = max(1, min(16, -(-2 * L2_BYTES // nbytes)))
        n = nbytes // 2  # bf16 elements read
        srcs = [torch.ones(n // 2, device="cuda", dtype=torch.bfloat16) for _ in range(nsets)]
        dsts = [torch.empty_like(x) for x in srcs]
        copy_us = time_us([(lambda i=i: dsts[i].copy_(srcs[i])) for i in range(nsets)], args.reps)
        del srcs, dsts
        read = "-"
        tbs = "-"
        if reader is not None:
            xs = [torch.ones(n, device="cuda", dtype=torch.bfloat16) for _ in range(nsets)]
            best = None
            for block in (4096, 8192, 16384):
                outs = [torch.empty(-(-n // block), device="cuda") for _ in range(nsets)]
                calls = [reader(xs[i], outs[i], block) for i in range(nsets)]
                us = time_us(calls, args.reps)
                best = us if best is None or us < best else best
            read, tbs = f"{best:.1f}", f"{nbytes / best / 1e6:.2f}"
            del xs
        print(f"| {mb:g} | {copy_us:.1f} | {read} | {tbs} |", flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
