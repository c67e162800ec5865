#!/usr/bin/env python3
"""decode_probe.py: times attention_decode_paged of one kernel library (called through the kernel
ABI with ctypes, as attention_dev_check.py does) on the decode shapes of gpu_bench.py, for the
comparison runs of cuda/NOTES.md "Decode" (the kernel's KH_ATTENTION_DECODE_* switches are read
from the environment once per process, so run_decode_probe.sh starts one process per setting).

Per shape: median us (events around each call, queued behind a GPU sleep), TB/s of K + V, the
ratio to the copy-bandwidth floor measured here, SDPA on contiguous K/V, and a layout control:
the same bytes as one KV head (MQA-shaped: heads_q 4, heads_kv 1, batch x 8), whose cache
blocks are contiguous runs of block_size x 256 bytes instead of 256-byte rows 2 KiB apart.
--in-order puts the cache blocks of each sequence in order (its K and V contiguous) instead of
shuffled. --mixed F makes a mixed batch: lengths spread evenly from F x KV to KV, shuffled.
Correctness is checked against SDPA on every shape (rel. error < 1e-2) before timing.

  python3 decode_probe.py --module LIB [--label TEXT] [--shapes b1x4096,b16x32768] [--head-dims 64,128]
      [--sdpa] [--in-order] [--mixed 0.0625 [--one-long]]
"""
import argparse
import ctypes
import math
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "bench"))
from gpu_bench import time_calls  # noqa: E402  pylint: disable=wrong-import-position
from attention_dev_check import (KH_VALUE_DOUBLE, KH_VALUE_INT, KH_VALUE_NONE, KH_VALUE_TENSOR,  # noqa: E402
                                 KhCallCtx, KhValue, dl_tensor, negotiate)

L2_BYTES = 50 * 1024 * 1024



class DecodeOp:
    """attention_decode_paged of a kernel library, through kh_kernel_negotiate + invoke."""

    def __init__(self, path):
        self.lib, neg = negotiate(path)
        mod = neg.module.contents
        self.variant = mod.variant.decode()
        self.invoke = None
        for i in range(mod.num_ops):
            if mod.ops[i].name.decode() == "attention_decode_paged":
                self.invoke = mod.ops[i].invoke
        if self.invoke is None:
            raise RuntimeError("no attention_decode_paged in " + path)
        self.err = ctypes.create_string_buffer(1024)

    def bind(self, out, q, kc, vc, table, seq, ws, scale, lse=None, window=-1, softcap=0.0):
        """A no-argument callable that runs the op (the DLTensors built once)."""
        tensors = (out, lse, q, kc, vc, table, seq, ws)
        keep = [dl_tensor(t) if t is not None else None for t in tensors]
        args = (KhValue * 11)()
        for slot, d in enumerate(keep):
            if d is None:
                args[slot].kind = KH_VALUE_NONE
            else:
                args[slot].kind = KH_VALUE_TENSOR
                args[slot].u.tensor = ctypes.pointer(d[0])
        args[8].kind = KH_VALUE_DOUBLE
        args[8].u.d = scale
        args[9].kind = KH_VALUE_INT
        args[9].u.i = window
        args[10].kind = KH_VALUE_DOUBLE
        args[10].u.d = softcap
        ctx = KhCallCtx(ctypes.sizeof(KhCallCtx), 0, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),
                        ctypes.cast(self.err, ctypes.c_char_p), len(self.err))

        def call():
            rc = self.invoke(args, 11, ctypes.byref(ctx))
            if rc != 0:
                raise RuntimeError(f"attention_decode_paged failed ({rc}): {self.err.value.decode()}")
        call.keep = (keep, args, ctx)
        return call

    def __call__(self, out, lse, q, kc, vc, table, seq, ws, scale, window, softcap, stream=None):
        """check_decode.py's op interface (kh.Op's call order)."""
        self.bind(out, q, kc, vc, table, seq, ws, scale, lse, window, softcap)()


class Results:
    """check_decode.py's result sink: counts, and prints each failure."""

    def __init__(self):
        self.passed, self.failed = 0, []

    def add(self, op, target, dtype, cls, name, ok, err=None, tol=None, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed.append(f"{dtype} {cls} {name}: {detail}")


def correctness(op):
    """check_decode.py's cases and a spread of head dims, bf16 and fp16, against float64."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    sys.path.insert(0, os.path.join(root, "python"))
    sys.path.insert(0, os.path.join(root, "tests", "gpu", "attention"))  # the GPU check's cases
    import check_decode  # noqa: E402 (needs the kh package only for its error type)
    res = Results()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    for dtype in (torch.bfloat16, torch.float16):
        cases = list(check_decode.CASES)
        for d in (32, 40, 64, 72, 80, 88, 96, 104, 128, 136, 184, 192, 256):
            cases.append(("head dims", 2, 2, 4, 2, d, 16, [300, 1], -1, 0.0))
            cases.append(("head dims q5 gqa8", 2, 5, 16, 2, d, 32, [900, 7], 100, 0.0))
        cases += list(check_decode.BALANCED_CASES)  # these carry an 11th field: the table's blocks
        cases += list(check_decode.BAD_BLOCK_CASES)  # and these a 12th: the bad table entries
        for case in cases:
            try:
                check_decode.run_case(res, op, "probe", dtype, *case[:10], gen, *case[10:])
            except Exception as e:  # noqa: BLE001 (a failed call is a failed case)
                res.add("attention_decode_paged", "probe", str(dtype), case[0], str(case[1:]), False, detail=str(e))
    check_decode.check_graph(res, op, "probe", gen)
    print(f"correctness: {res.passed} passed, {len(res.failed)} failed")
    for f in res.failed[:20]:
        print("  FAIL " + f)
    return not res.failed


def time_us(calls, reps=40):
    """Median microseconds a call, timed as gpu_bench.py times kh's ops (its time_calls)."""
    return statistics.median(time_calls(calls, reps)) * 1e3


def copy_tbs():
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    us = time_us([lambda: y.copy_(x)], 20)
    return 2 * x.numel() / (us * 1e-6) / 1e12


def workspace_floats(batch, hq, hkv, d, max_kv):
    s = max(1, min(64, -(-max_kv // 128), -(-4096 // (batch * hkv))))
    return batch * hq * s * (d + 1) if s > 1 else 0


def mixed_lengths(b, kv, lowest, gen, one_long=False):
    """b sequence lengths spread evenly from lowest * kv to kv, in a shuffled order (int32, cuda);
    one_long: one sequence of kv, the others lowest * kv (a skewed batch)."""
    if one_long:
        lens = torch.full((b,), max(1, int(lowest * kv)), device="cuda", dtype=torch.int32)
        lens[0] = kv
    else:
        lens = torch.linspace(max(1, int(lowest * kv)), kv, b, device="cuda").round().to(torch.int32)
    return lens[torch.randperm(b, device="cuda", generator=gen)].contiguous()


def print_times(b, kv, call, ws, warps=12):
    """A library built with KH_DECODE_PROBE_TIMES: one call's per-CTA global-timer marks (the
    workspace's first 8 x 8 bytes a CTA: entry, first copy about to issue, key loop done, results
    written, then the balanced prologue's steps), as us from the first CTA's entry: median and
    max over the CTAs, the median steps, and the prologue's steps where the kernel wrote them."""
    ws.zero_()
    torch.cuda.synchronize()
    call()
    torch.cuda.synchronize()
    n = min(ws.numel() // 16, 1024)  # the CTA marks' rows, before the warp marks at 64 KiB
    marks8 = ws[:16 * n].view(torch.int64).view(n, 8)
    marks = marks8[:, :4]
    # Rows of CTAs that wrote all four marks, in order and within a second of each other (the
    # other bytes of the workspace are zeros or a split call's partials).
    ok = (marks > 0).all(dim=1) & (marks[:, 1:] >= marks[:, :-1]).all(dim=1) & (marks[:, 3] - marks[:, 0] < 10**9)
    marks = marks[ok]
    if marks.numel():
        t0 = marks[:, 0].median()
        near = (marks[:, 0] - t0).abs() < 10**9
        marks, pro = marks[near].double(), marks8[ok][near][:, 4:].double()
    if marks.numel() == 0:
        print(f"times b{b}x{kv}: no marks (not a KH_DECODE_PROBE_TIMES build, or a split call)")
        return
    rel = (marks - marks[:, 0].min()) / 1e3
    med, top = rel.median(dim=0).values.tolist(), rel.max(dim=0).values.tolist()
    steps = (marks[:, 1:] - marks[:, :-1]).median(dim=0).values / 1e3
    print(f"times b{b}x{kv} ({marks.shape[0]} CTAs), us from the first entry: entry {med[0]:.2f}/{top[0]:.2f}, "
          f"first copy {med[1]:.2f}/{top[1]:.2f}, loop done {med[2]:.1f}/{top[2]:.1f}, written {med[3]:.1f}/{top[3]:.1f} "
          f"(median/max); median steps {steps[0]:.2f}, {steps[1]:.1f}, {steps[2]:.2f}")
    warp_spread(ws, n, marks[:, 0].min(), warps)
    if (pro > 0).all():  # the balanced kernel's prologue marks (4-7)
        at = ((pro - marks[:, :1]) / 1e3).median(dim=0).values.tolist()
        print(f"  balanced prologue, median us from the CTA's entry: tables {at[0]:.2f}, empty units {at[1]:.2f}, "
              f"walk shared {at[2]:.2f}, tile made {at[3]:.2f}")


def warp_spread(ws, n, t0, warps=12):
    """The warp marks of a KH_DECODE_PROBE_TIMES build (16 x 8 bytes a CTA from 64 KiB into the
    workspace: each warp's key loop end, then the CTA's barrier after them in slot 15): how far a
    CTA's warps end apart, against how far the CTAs do (t0: the first CTA's entry, ns)."""
    at = 8192 * 2  # floats
    n = min(n, (ws.numel() - at) // 32)
    marks = ws[at:at + 32 * n].view(torch.int64).view(n, 16)
    ends, barrier = marks[:, :warps].double(), marks[:, 15].double()
    ok = (ends > 0).all(dim=1) & (barrier > 0) & (ends.max(dim=1).values - ends.min(dim=1).values < 1e8)
    ends, barrier = ends[ok], barrier[ok]
    if ends.numel() == 0:
        return
    last, first = ends.max(dim=1).values, ends.min(dim=1).values
    qs = torch.tensor([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0], dtype=torch.float64, device=ends.device)
    spread = torch.quantile((last - first) / 1e3, qs).tolist()
    ends_at = torch.quantile((last - float(t0)) / 1e3, qs).tolist()
    mean_at = torch.quantile((ends.mean(dim=1) - float(t0)) / 1e3, qs).tolist()
    fmt = lambda xs: " ".join(f"{x:.1f}" for x in xs)  # noqa: E731
    print(f"  warps ({ends.shape[0]} CTAs), quantiles 0/10/25/50/75/90/100%, us: a CTA's first to last warp's "
          f"loop end {fmt(spread)}; last warp to barrier median {((barrier - last) / 1e3).median():.2f}")
    print(f"  CTAs' last warp's loop end from the first entry {fmt(ends_at)}; their warps' mean end {fmt(mean_at)}")


def probe(op, b, kv, hq, hkv, d, bs, floor_tbs, with_sdpa, gen, q_len=1, sdpa_only=False, in_order=False, mixed=None,
          one_long=False, times=False):
    """mixed: None (every sequence kv long), or the shortest length as a fraction of kv (q_len 1)."""
    if mixed is not None and q_len != 1:
        raise ValueError("--mixed takes q_len 1")
    nsets = max(1, min(16, math.ceil(2 * L2_BYTES / (2 * b * kv * hkv * d * 2))))
    nblk = kv // bs
    pool = nsets * b * nblk
    kc = torch.randn(pool, bs, hkv, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    vc = torch.randn(pool, bs, hkv, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    # Cache blocks in a random order (as an engine's allocator leaves them), or in order: each
    # sequence's K and V one contiguous run, the layout SDPA reads.
    order = torch.arange(pool, device="cuda") if in_order else torch.randperm(pool, device="cuda", generator=gen)
    perm = order.to(torch.int32).view(nsets, b, nblk)
    tables = [perm[i].contiguous() for i in range(nsets)]
    seq = torch.full((b,), kv, device="cuda", dtype=torch.int32) if mixed is None else mixed_lengths(b, kv, mixed, gen, one_long)
    kv_bytes = 2 * int(seq.sum().item()) * hkv * d * 2  # the keys the call reads
    qs = [torch.randn(b, q_len, hq, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(nsets)]
    outs = [torch.empty_like(qs[0]) for _ in range(nsets)]
    ws = torch.empty(max(1, q_len * workspace_floats(b, hq, hkv, d, kv)), device="cuda", dtype=torch.float32)
    scale = 1.0 / math.sqrt(d)
    calls = [op.bind(outs[i], qs[i], kc, vc, tables[i], seq, ws, scale) for i in range(nsets)]
    kd = kc[tables[0].long()].reshape(b, kv, hkv, d).transpose(1, 2).contiguous()
    vd = vc[tables[0].long()].reshape(b, kv, hkv, d).transpose(1, 2).contiguous()
    causal = torch.ones(q_len, kv, device="cuda", dtype=torch.bool).tril(kv - q_len) if q_len > 1 else None
    if mixed is not None:  # each row sees its own sequence's keys (SDPA then runs a masked kernel)
        causal = (torch.arange(kv, device="cuda").view(1, kv) < seq.view(b, 1)).view(b, 1, 1, kv)
    ref = F.scaled_dot_product_attention(qs[0].transpose(1, 2), kd, vd, attn_mask=causal, scale=scale,
                                         enable_gqa=True).transpose(1, 2)
    if sdpa_only:  # for a profiler: SDPA alone, a few times
        for _ in range(8):
            F.scaled_dot_product_attention(qs[0].transpose(1, 2), kd, vd, attn_mask=causal, scale=scale, enable_gqa=True)
        torch.cuda.synchronize()
        return 0.0, 0.0, 0.0, None, kv
    outs[0].fill_(float("nan"))
    calls[0]()
    err = ((outs[0].float() - ref.float()).norm() / ref.float().norm()).item()
    if not err < 1e-2:
        raise RuntimeError(f"b{b} kv{kv} hkv{hkv}: rel error {err:.2e} against SDPA")
    us = time_us(calls)
    if times:
        print_times(b, kv, calls[0], ws)
    sdpa_us = None
    if with_sdpa:
        dense = [(qs[0].transpose(1, 2), kd, vd)]
        sdpa_us = time_us([lambda t=t: F.scaled_dot_product_attention(t[0], t[1], t[2], attn_mask=causal, scale=scale,
                                                                      enable_gqa=True)
                           for t in dense])
    floor_us = kv_bytes / (floor_tbs * 1e12) * 1e6
    return us, kv_bytes / (us * 1e-6) / 1e12, floor_us / us, sdpa_us, kv_bytes / (4 * b * hkv * d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True)
    ap.add_argument("--label", default="")
    ap.add_argument("--shapes", default="b1x4096,b1x32768,b16x4096,b16x32768,b64x8192,b128x4096")
    ap.add_argument("--sdpa", action="store_true", help="also time SDPA (enable_gqa) on contiguous K/V")
    ap.add_argument("--mqa-control", action="store_true", help="also time the one-KV-head layout control")
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--check", action="store_true", help="first check_decode.py's cases against float64")
    ap.add_argument("--heads", default="32/8", help="heads_q/heads_kv (default 32/8)")
    ap.add_argument("--q-len", type=int, default=1)
    ap.add_argument("--sdpa-only", action="store_true", help="run SDPA alone on each shape (for a profiler)")
    ap.add_argument("--in-order", action="store_true", help="block tables in order (contiguous K/V per sequence)")
    ap.add_argument("--head-dims", default="128", help="comma-separated head dims (default 128)")
    ap.add_argument("--mixed", type=float, default=None,
                    help="sequence lengths spread evenly from MIXED x KV to KV, shuffled (a mixed batch; TB/s and "
                         "floor count the keys read; time the equal batch of the same keys as bBxMEAN, the mean "
                         "printed in the row's name). SDPA's time is then a masked kernel's: no baseline")
    ap.add_argument("--one-long", action="store_true",
                    help="with --mixed: one sequence KV long, the others MIXED x KV (a skewed batch)")
    ap.add_argument("--times", action="store_true",
                    help="print one call's per-CTA timer marks (a library built with KH_DECODE_PROBE_TIMES)")
    args = ap.parse_args()
    op = DecodeOp(args.module)
    if args.check and not correctness(op):
        sys.exit(1)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    floor = copy_tbs()
    env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("KH_ATTENTION_DECODE"))
    order = "blocks in order" if args.in_order else "blocks shuffled"
    print(f"\n## {args.label} [{op.variant}] {env or '(defaults)'}; copy {floor:.2f} TB/s, block size {args.block_size}, "
          f"{order}")
    print("| shape | us | TB/s | floor/time | SDPA us | vs SDPA |")
    print("| --- | --- | --- | --- | --- | --- |")
    for shape in args.shapes.split(","):
        b, kv = (int(x) for x in shape[1:].split("x"))
        hq, hkv = (int(x) for x in args.heads.split("/"))
        cases = [(f"GQA {hq}/{hkv} q_len {args.q_len}", b, hq, hkv)]
        if args.mqa_control:
            cases.append(("1 KV head, batch x8", b * 8, hq // hkv, 1))
        for (name, bb, hq, hkv), d in ((c, int(d)) for c in cases for d in args.head_dims.split(",")):
            name += f" d{d}" if args.head_dims != "128" else ""
            us, tbs, ratio, sdpa_us, mean = probe(op, bb, kv, hq, hkv, d, args.block_size, floor, args.sdpa, gen,
                                                  args.q_len, args.sdpa_only, args.in_order, args.mixed, args.one_long,
                                                  args.times)
            if args.mixed is not None:
                spread = "one of" if args.one_long else "-"
                name += f", lengths {max(1, int(args.mixed * kv))} {spread} {kv} (mean {mean:.0f})"
            s = f"{sdpa_us:.1f} | {sdpa_us / us:.2f}x" if sdpa_us else "- | -"
            print(f"| {shape} {name} | {us:.1f} | {tbs:.2f} | {ratio:.2f} | {s} |", flush=True)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
