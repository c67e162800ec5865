#!/usr/bin/env python3
"""paged_read_probe.py: how fast the bytes of a paged decode call can be read at all, for
cuda/NOTES.md "Where the decode gap stands". The batch >= 16 targets ask the paged kernel to be as
fast as SDPA, which reads contiguous K/V; this probe times kernels that do nothing but read
(Triton, no softmax, no output but one float a program) over three layouts of the same bytes, in
one process, beside the decode op and SDPA:

  contiguous   the K and V caches read front to back (the layout SDPA reads);
  whole blocks each sequence's cache blocks read through its shuffled block table, a block's
               block_size x heads_kv x d elements at a time (contiguous runs of 32 KiB at d128);
  head rows    as the decode kernel reads them: a program a (sequence, kv head, run of blocks),
               block_size rows of d elements, heads_kv x d apart, a block at a time.

Each reader runs in a few shapes (programs per block run, warps); the best is printed (--all: every
one). If the head rows reader, the best a plain kernel does on the paged layout, reads no faster
than the decode op, the paged layout (not the op's work) is what stands between the op and SDPA.
Its runs of 2048 keys a program (128 blocks: about 16 programs an SM, all resident at once, so the
SMs' shares are fixed) against 128 keys (many waves, handed to whichever SM is free) show what a
fixed share an SM costs a pure read.

  python3 paged_read_probe.py [--module LIB] [--shapes b16x32768,b64x8192] [--block-size 16] [--all]
"""
import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_probe import DecodeOp, time_us, workspace_floats  # noqa: E402 (the decode probe's timing and op)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

HKV, HQ, D = 8, 32, 128


@triton.jit
def read_flat(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, eviction_policy="evict_first")
    tl.store(out_ptr + pid, tl.sum(v.to(tl.float32), axis=0))


@triton.jit
def read_whole_blocks(k_ptr, v_ptr, table_ptr, out_ptr, RUN: tl.constexpr, BLOCK_ELEMS: tl.constexpr):
    # Program p reads table entries p * RUN .. p * RUN + RUN - 1 (the tables of all sequences, one
    # after the other), each a whole cache block of K and of V.
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK_ELEMS], dtype=tl.float32)
    offs = tl.arange(0, BLOCK_ELEMS)
    for i in tl.range(RUN):
        blk = tl.load(table_ptr + pid * RUN + i).to(tl.int64) * BLOCK_ELEMS
        acc += tl.load(k_ptr + blk + offs, eviction_policy="evict_first").to(tl.float32)
        acc += tl.load(v_ptr + blk + offs, eviction_policy="evict_first").to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def read_head_rows(k_ptr, v_ptr, table_ptr, out_ptr, blocks_per_seq, RUN: tl.constexpr, BS: tl.constexpr,
                   HKV_: tl.constexpr, D_: tl.constexpr):
    # Program (run, head, seq) reads RUN of the sequence's blocks, each BS rows of head `head`.
    run, head, seq = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rows = tl.arange(0, BS)[:, None] * (HKV_ * D_) + head * D_ + tl.arange(0, D_)[None, :]
    acc = tl.zeros([BS, D_], dtype=tl.float32)
    first = seq * blocks_per_seq + run * RUN
    for i in tl.range(RUN):
        blk = tl.load(table_ptr + first + i).to(tl.int64) * (BS * HKV_ * D_)
        acc += tl.load(k_ptr + blk + rows, eviction_policy="evict_first").to(tl.float32)
        acc += tl.load(v_ptr + blk + rows, eviction_policy="evict_first").to(tl.float32)
    tl.store(out_ptr + (seq * tl.num_programs(1) + head) * tl.num_programs(0) + run, tl.sum(acc))


SHOW_ALL = False  # --all: every configuration's time, not only the best


def best(label, configs, nbytes):
    """Times each (description, callable) of configs; returns the fastest time in us."""
    results = [(time_us([call]), what) for what, call in configs]
    us, what = min(results)
    print(f"  {label:12s} {us:8.1f} us  {nbytes / (us * 1e-6) / 1e12:5.2f} TB/s  (best of {len(results)}: {what})")
    if SHOW_ALL:
        print("    " + "; ".join(f"{w}: {t:.1f}" for t, w in results))
    return us


def probe_shape(b, kv, bs, op, gen):
    nblk = kv // bs
    pool = b * nblk
    kc = torch.randn(pool, bs, HKV, D, device="cuda", dtype=torch.bfloat16, generator=gen)
    vc = torch.randn_like(kc)
    table = torch.randperm(pool, device="cuda", generator=gen).to(torch.int32).view(b, nblk).contiguous()
    nbytes = 2 * kc.numel() * kc.element_size()
    print(f"b{b} x {kv}, block size {bs}: {nbytes / 1e9:.2f} GB of K + V")
    out = torch.empty(pool * HKV * 2, device="cuda", dtype=torch.float32)
    flat = []
    for block in (4096, 8192, 16384):
        for warps in (4, 8):
            n = kc.numel() // block
            flat.append((f"{block} elements, {warps} warps", lambda n=n, block=block, warps=warps: (
                read_flat[(n,)](kc, out, BLOCK=block, num_warps=warps),
                read_flat[(n,)](vc, out, BLOCK=block, num_warps=warps))))
    contiguous = best("contiguous", flat, nbytes)
    whole = []  # a whole block is one tile: only where it is at most 16384 elements (block size 16)
    for run in ((1, 2, 4) if bs * HKV * D <= 16384 else ()):
        for warps in (4, 8):
            whole.append((f"{run} blocks a program, {warps} warps", lambda run=run, warps=warps: read_whole_blocks[
                (pool // run,)](kc, vc, table, out, RUN=run, BLOCK_ELEMS=bs * HKV * D, num_warps=warps)))
    if whole:
        best("whole blocks", whole, nbytes)
    rows = []
    for run in (8, 32, 128):
        if nblk % run:
            continue
        for warps in (2, 4):
            rows.append((f"{run} blocks a program, {warps} warps", lambda run=run, warps=warps: read_head_rows[
                (nblk // run, HKV, b)](kc, vc, table, out, nblk, RUN=run, BS=bs, HKV_=HKV, D_=D, num_warps=warps)))
    head_rows = best("head rows", rows, nbytes)
    if op is not None:
        q = torch.randn(b, 1, HQ, D, device="cuda", dtype=torch.bfloat16, generator=gen)
        o = torch.empty_like(q)
        seq = torch.full((b,), kv, device="cuda", dtype=torch.int32)
        ws = torch.empty(max(1, workspace_floats(b, HQ, HKV, D, kv)), device="cuda", dtype=torch.float32)
        us = time_us([op.bind(o, q, kc, vc, table, seq, ws, 1.0 / math.sqrt(D))])
        print(f"  {'decode op':12s} {us:8.1f} us  {nbytes / (us * 1e-6) / 1e12:5.2f} TB/s  "
              f"(head rows / op {head_rows / us:.3f})")
    kd = kc[table.long()].reshape(b, kv, HKV, D).transpose(1, 2).contiguous()
    vd = vc[table.long()].reshape(b, kv, HKV, D).transpose(1, 2).contiguous()
    del kc, vc
    qd = torch.randn(b, HQ, 1, D, device="cuda", dtype=torch.bfloat16, generator=gen)
    us = time_us([lambda: F.scaled_dot_product_attention(qd, kd, vd, enable_gqa=True)])
    print(f"  {'SDPA':12s} {us:8.1f} us  {nbytes / (us * 1e-6) / 1e12:5.2f} TB/s  "
          f"(contiguous read / SDPA {contiguous / us:.3f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", default=None, help="a kernel library whose attention_decode_paged is timed too")
    ap.add_argument("--shapes", default="b16x32768,b64x8192,b128x4096,b16x4096")
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--all", action="store_true", help="print every configuration's time")
    args = ap.parse_args()
    global SHOW_ALL  # pylint: disable=global-statement
    SHOW_ALL = args.all
    op = DecodeOp(args.module) if args.module else None
    gen = torch.Generator(device="cuda").manual_seed(0)
    for shape in args.shapes.split(","):
        b, kv = (int(x) for x in shape.lstrip("b").split("x"))
        probe_shape(b, kv, args.block_size, op, gen)


if __name__ == "__main__":
    main()
