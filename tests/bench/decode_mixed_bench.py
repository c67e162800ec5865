"""decode_mixed_bench.py: gpu_bench.py's mixed-length decode rows (attention_decode_paged, sm90a
build, bf16, GQA 32/8, d128, block size 16, cache blocks shuffled, tables of the row's KV keys a
sequence). Each batch of differing lengths is timed against the batch of the same keys in equal
lengths (the baseline, timed in the same run with the same table width), and against the copy
floor of the keys it reads. On the H200 these calls take the length-balanced grid
(kernels-src/attention/cuda/attention_decode_balanced.cuh), where a mixed batch should cost
about what its keys cost in equal lengths; the issue names no target for them, so none is
judged. Checked against SDPA with each sequence's keys masked (rel. error < 1e-2) before timing.
"""
import math

import torch
import torch.nn.functional as F

HQ, HKV, D, BS = 32, 8, 128, 16
# (name, batch, table keys a sequence, "spread" (lengths evenly from low x KV to KV) or "one"
# (one sequence of KV keys, the others low x KV), low)
MIXES = (
    ("b16 lengths 2k-32k", 16, 32768, "spread", 1 / 16),
    ("b16 one of 32k among 1k", 16, 32768, "one", 1 / 32),
    ("b64 lengths 1k-16k", 64, 16384, "spread", 1 / 16),
)


def mixed_lengths(b, kv, kind, low, gen):
    """int32 lengths on the GPU, in a shuffled order."""
    short = max(1, int(low * kv))
    if kind == "one":
        lens = torch.full((b,), short, device="cuda", dtype=torch.int32)
        lens[0] = kv
    else:
        lens = torch.linspace(short, kv, b, device="cuda").round().to(torch.int32)
    return lens[torch.randperm(b, device="cuda", generator=gen)].contiguous()


def time_lengths(op, b, kv, lens, gen, reps, timing, rel_error, workspace_floats, l2_bytes):
    """(Timing of the call over rotated cache sets, rel. error of the first set against SDPA)."""
    nblk = kv // BS
    nsets = max(1, min(16, math.ceil(2 * l2_bytes / (2 * int(lens.sum().item()) * HKV * D * 2))))
    pool = nsets * b * nblk
    kc = torch.randn(pool, BS, HKV, D, device="cuda", dtype=torch.bfloat16, generator=gen)
    vc = torch.randn(pool, BS, HKV, D, device="cuda", dtype=torch.bfloat16, generator=gen)
    perm = torch.randperm(pool, device="cuda", generator=gen).to(torch.int32).view(nsets, b, nblk)
    tables = [perm[i].contiguous() for i in range(nsets)]
    qs = [torch.randn(b, 1, HQ, D, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(nsets)]
    outs = [torch.empty_like(qs[0]) for _ in range(nsets)]
    ws = torch.empty(max(1, workspace_floats(b, 1, HQ, HKV, D, kv)), device="cuda", dtype=torch.float32)
    scale = 1.0 / math.sqrt(D)
    calls = [op.bind(outs[i], None, qs[i], kc, vc, tables[i], lens, ws, scale, -1, 0.0) for i in range(nsets)]
    kd = kc[tables[0].long()].reshape(b, kv, HKV, D).transpose(1, 2).contiguous()
    vd = vc[tables[0].long()].reshape(b, kv, HKV, D).transpose(1, 2).contiguous()
    mask = (torch.arange(kv, device="cuda").view(1, kv) < lens.view(b, 1)).view(b, 1, 1, kv)
    ref = F.scaled_dot_product_attention(qs[0].transpose(1, 2), kd, vd, attn_mask=mask, scale=scale,
                                         enable_gqa=True).transpose(1, 2)
    del kd, vd, mask
    outs[0].fill_(float("nan"))
    calls[0]()
    err = rel_error(outs[0], ref)
    t = timing(calls, reps) if err < 1e-2 else None
    del kc, vc, perm, tables, qs, outs, ws, ref
    torch.cuda.empty_cache()
    return t, err


def bench_mixed(kernels, reps, copy_tbs, failures, timing, rel_error, workspace_floats, l2_bytes):
    rows = []
    op = kernels["sm90a"].op("attention_decode_paged")
    gen = torch.Generator(device="cuda")
    for name, b, kv, kind, low in MIXES:
        gen.manual_seed(b + kv + len(kind))
        lens = mixed_lengths(b, kv, kind, low, gen)
        keys = int(lens.sum().item())
        mean = -(-keys // b)
        equal = torch.full((b,), mean, device="cuda", dtype=torch.int32)
        t, err = time_lengths(op, b, kv, lens, gen, reps, timing, rel_error, workspace_floats, l2_bytes)
        te, err_e = time_lengths(op, b, kv, equal, gen, reps, timing, rel_error, workspace_floats, l2_bytes)
        if t is None or te is None:
            failures.append(f"decode mixed {name}: rel error {err:.2e} (equal lengths {err_e:.2e}) against SDPA")
            continue
        kv_bytes = 2 * keys * HKV * D * 2
        floor_ms = kv_bytes / (copy_tbs * 1e9)
        rows.append(dict(kind="decode_mixed", build="sm90a", name=name, batch=b, kv=kv, mean_len=keys / b,
                         us=t.ms * 1e3, spread=t.spread, equal_us=te.ms * 1e3, equal_spread=te.spread,
                         vs_equal=t.ms / te.ms, floor_us=floor_ms * 1e3, floor_ratio=floor_ms / t.ms,
                         tbs=kv_bytes / t.ms / 1e9, rel_err_vs_sdpa=err))
    return rows


def print_mixed(rows):
    print("\n| decode bf16 GQA 32/8 d128, mixed lengths | build | mean length | us | equal lengths us "
          "| time / equal | floor us | floor/time | TB/s | spread |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['name']} | {r['build']} | {r['mean_len']:.0f} | {r['us']:.1f} | {r['equal_us']:.1f} "
              f"| {r['vs_equal']:.2f}x | {r['floor_us']:.1f} | {r['floor_ratio']:.2f} | {r['tbs']:.2f} "
              f"| {100 * max(r['spread'], r['equal_spread']):.1f}% |")
