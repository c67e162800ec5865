#!/usr/bin/env python3
"""memset_probe.py: what a few-byte cudaMemsetAsync before each decode call costs, for the designs
of cuda/NOTES.md "Left to do" that need per-call zeroed state in the workspace (a chunk counter
that persistent CTAs take work from, or a count that lets the last CTA of a row combine). The op
alone against a memset of 16 bytes of its workspace then the op, timed as decode_probe.py times
(events around each call, queued behind a GPU sleep), on the stream and as CUDA graph replays.

  python3 memset_probe.py --module LIB [--shapes b1x4096,b16x4096,b16x32768]
"""
import argparse
import ctypes
import glob
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_probe import DecodeOp, time_us, workspace_floats  # noqa: E402 (the decode probe's timing and op)

HKV, HQ, D, BS = 8, 32, 128, 16


def cudart():
    """The CUDA runtime PyTorch loaded (its cudaMemsetAsync)."""
    names = glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cuda_runtime", "lib",
                                   "libcudart.so*")) + ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise RuntimeError("no libcudart found")


def graph_of(fn):
    """fn captured once into a CUDA graph; returns its replay."""
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()  # warm-up outside the capture
        torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=s):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    return g.replay


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", required=True)
    ap.add_argument("--shapes", default="b1x4096,b16x4096,b16x32768")
    args = ap.parse_args()
    op, rt = DecodeOp(args.module), cudart()
    rt.cudaMemsetAsync.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
    gen = torch.Generator(device="cuda").manual_seed(0)
    print("| shape | op us | memset + op us | graph: op | graph: memset + op |")
    print("| --- | --- | --- | --- | --- |")
    for shape in args.shapes.split(","):
        b, kv = (int(x) for x in shape.lstrip("b").split("x"))
        nblk = kv // BS
        kc = torch.randn(b * nblk, BS, HKV, D, device="cuda", dtype=torch.bfloat16, generator=gen)
        vc = torch.randn_like(kc)
        table = torch.randperm(b * nblk, device="cuda", generator=gen).to(torch.int32).view(b, nblk).contiguous()
        q = torch.randn(b, 1, HQ, D, device="cuda", dtype=torch.bfloat16, generator=gen)
        o = torch.empty_like(q)
        seq = torch.full((b,), kv, device="cuda", dtype=torch.int32)
        ws = torch.empty(workspace_floats(b, HQ, HKV, D, kv) + 64, device="cuda", dtype=torch.float32)
        tail = ws[-4:]  # 16 bytes no partial uses

        def call():
            # Bound on each call: the op runs on the stream current then (the capture's, in graph_of).
            op.bind(o, q, kc, vc, table, seq, ws, 1.0 / math.sqrt(D))()

        def memset_call():
            err = rt.cudaMemsetAsync(ctypes.c_void_p(tail.data_ptr()), 0, 16,
                                     ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
            if err != 0:
                raise RuntimeError(f"cudaMemsetAsync: error {err}")
            call()

        times = [time_us([call]), time_us([memset_call]), time_us([graph_of(call)]), time_us([graph_of(memset_call)])]
        print(f"| b{b} x {kv} | " + " | ".join(f"{t:.1f}" for t in times) + " |")


if __name__ == "__main__":
    main()
