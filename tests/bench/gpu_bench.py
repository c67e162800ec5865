#!/usr/bin/env python3
"""gpu_bench.py: kh's kernels against PyTorch on one GPU, in one process, on the same inputs.

Each package is loaded with kh.load_kernel() (python/kh over libkh: hub -> cache -> verified
-> dlopen), as users load it, by variant key: attention in its sm90a and sm80 builds (the
sm80 build runs on Hopper through its compute_80 PTX), the norms in the build this machine
selects. Every op is called through kh_op_call (Op.bind: arguments converted once, the
loader's checks still run per call).

For every row: validate first (outputs poisoned with NaN; relative error against PyTorch's
result on the same inputs), then time. Timing: CUDA events around each call, the calls
queued behind a GPU sleep so the host stays ahead, warm-up first, buffer sets rotated where
one set would fit in L2, the median over --reps calls in each of two rounds (the spread
between rounds is printed, as the noise floor of the comparison).

  attention  bf16, b*s = 16k tokens, s in {1k, 4k, 8k, 16k}, d in {64, 128}, h = 2048 / d,
             causal and not; plus GQA (32 q heads, 8 kv heads, d 128, s 8k). Baselines:
             SDPA's flash and cuDNN backends on (b, h, s, d) views of the same tensors.
             TFLOP/s = 4 b h s^2 d / time, halved for causal.
  norms      bf16 (32768x4096), (16384x8192), (65536x1024), (4096x16384): rms_norm,
             fused_add_rms_norm, layer_norm, fused_add_layer_norm. Baselines: a device copy
             of the same shape (x -> out) and F.rms_norm / F.layer_norm (for the fused ops,
             eager x + residual first). TB/s: each input read once, each output written once.
  decode     attention_decode_paged (1.1), bf16, GQA 32/8, d 128, one new token per sequence,
             batch x KV length in {1x4k, 1x32k, 16x4k, 16x32k, 64x8k, 128x4k}, paged with block
             size 16 (blocks shuffled over the pool) and, on sm90a, 256; and 64 x 8k at head dims
             64, 80, 96, 192, 256 (sm90a, block size 16). Baselines: PyTorch SDPA
             (enable_gqa) on a contiguous copy of the gathered K and V, and the HBM floor: K + V
             bytes over the copy bandwidth measured in this run; "1-pass us" is a device copy
             moving the same bytes (read + write), timed as the calls are: one kernel's cost
             at that size, launch included. Cache sets rotated so that small rows are not
             served from L2. Then batches of mixed lengths against the equal batch of the same
             keys (decode_mixed_bench.py, which says the shapes; no target).
  pointwise  activation (silu/gelu/gelu_tanh/fatrelu_and_mul at 8192 x 2 x 14336 and 32768 x 2 x
             4096) and rotary (8192 tokens, 32/8 heads, d 128, NeoX and GPT-J): bench_pointwise.py
             says what is measured against which same-run baselines (a copy, PyTorch eager).
  prefill    attention_fwd at head dims 64-256 and 192/128 against the best SDPA backend, and
             attention_varlen_fwd on mixed lengths against attention_fwd on equal ones
             (attention_prefill_bench.py, which says the shapes and targets).
  fp8        attention 1.2: attention_decode_paged_fp8 (e4m3 caches, per-head scales), GQA 32/8 d128,
             batch x KV in {16x4k, 16x32k, 64x8k, 128x4k}, block size 16, sm90a and sm80 builds,
             against the floor of its FP8 bytes, PyTorch bf16 SDPA and kh's bf16
             attention_decode_paged on the same values (targets: >= 0.85 of the FP8 floor and <=
             0.55x the SDPA time); paged_kv_cache_write (bf16 keys/values of 65536, 16384 and 256
             tokens, 8 heads, d128, into e4m3 and bf16 caches at shuffled slots) against the copy
             bandwidth for its bytes (target >= 0.85 at >= 16384 tokens); the FP8 prefill
             (attention_varlen_fwd_fp8 with e4m3 q, k, v) against kh's bf16 attention_fwd at d 128
             and 256, s 8k and 16k (fp8_prefill_bench.py, which says the shapes and targets).
  ceilings   a 1 GiB device copy and a bf16 8192^3 matmul (the floors in the NOTES files).

Prints one table with each row's target and whether it was met, and writes the figures to
--out/gpu_bench.json. Exit status 1 when a validation fails (a missed target is reported,
not an error); 0 with SKIP where no CUDA device or PyTorch is present.

  python3 tests/bench/gpu_bench.py --hub file:///path/hub --cache /path/cache [--out DIR]
      [--only attention,norms,decode,prefill,pointwise,fp8] [--reps N] [--quick]
(KH_LIBRARY names libkh.so; tests/gpu/run.sh sets everything up and runs this with --bench.)
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("SKIP: PyTorch is not installed")
    sys.exit(0)

import kh  # noqa: E402
import bench_pointwise  # noqa: E402

ORG = "kernels-community"
TOKENS = 16384
ATTN_SEQS = (1024, 4096, 8192, 16384)
ATTN_DIMS = (128, 64)
NORM_SHAPES = ((32768, 4096), (16384, 8192), (65536, 1024), (4096, 16384))
L2_BYTES = 60 << 20  # H100/H200: 50-60 MB; a buffer set at least this large is not served from L2

# Targets (issue 6): a row's ratio must reach `want` for it to count as met.
NORM_TARGETS = {  # op -> (min ratio to copy, min ratio to torch)
    "rms_norm": (0.90, 1.15),
    "fused_add_rms_norm": (0.90, 1.15),
    "layer_norm": (0.88, 1.40),
}
ATTN_STRETCH_TFLOPS = 680.0  # sm90a, d 128, s 8k, non-causal
DECODE_SHAPES = ((1, 4096), (1, 32768), (16, 4096), (16, 32768), (64, 8192), (128, 4096))  # batch x KV
DECODE_HQ, DECODE_HKV, DECODE_D = 32, 8, 128
DECODE_HEAD_DIM_SHAPE, DECODE_HEAD_DIMS = (64, 8192), (64, 80, 96, 192, 256)  # the other fast head dims, sm90a


# --- timing ---------------------------------------------------------------------------

def time_calls(calls, reps, warmup=3):
    """Per-call milliseconds of calls[i % len(calls)]() for i < reps, each between its own pair
    of CUDA events, queued behind a ~10 ms GPU sleep so host overhead stays out."""
    for i in range(warmup):
        calls[i % len(calls)]()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    torch.cuda._sleep(20_000_000)
    for i in range(reps):
        starts[i].record()
        calls[i % len(calls)]()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


class Timing:
    """Medians of two rounds of time_calls; .ms is the median over both, .spread the relative
    difference of the two rounds' medians."""

    def __init__(self, calls, reps):
        rounds = [time_calls(calls, reps) for _ in range(2)]
        self.ms = statistics.median(rounds[0] + rounds[1])
        m0, m1 = (statistics.median(r) for r in rounds)
        self.spread = abs(m0 - m1) / self.ms


def rel_error(got, want):
    """||got - want|| / ||want|| in float32; inf when got holds a NaN (an unwritten element)."""
    g, w = got.float(), want.float()
    if not torch.isfinite(g).all():
        return float("inf")
    return ((g - w).norm() / w.norm()).item()


# --- loading --------------------------------------------------------------------------

def load(pkg, target, args, variants):
    """kh.load_kernel() of pkg's `target` build (a variant key from the hub's index), or of the
    build this machine selects when the hub is not a file:// hub we can read."""
    key = variants.get(pkg, {}).get(target)
    k = kh.load_kernel(f"{ORG}/{pkg}@1", hub=args.hub, cache_dir=args.cache, variant=key)
    print(f"loaded {k.name} {k.version} {k.variant}")
    return k


# --- ceilings -------------------------------------------------------------------------

def ceilings(reps):
    n = 1 << 29  # 1 GiB of bf16 per side: far beyond L2
    src = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy = Timing([lambda: dst.copy_(src)], reps)
    del src, dst
    m = 8192
    a = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)
    mm = Timing([lambda: a @ b], reps)
    del a, b
    torch.cuda.empty_cache()
    return dict(copy_tbs=2 * 2 * n / copy.ms / 1e9, matmul_tflops=2 * m ** 3 / mm.ms / 1e9)


# --- attention ------------------------------------------------------------------------

def attention_configs(quick):
    cfgs = []
    for d in ATTN_DIMS:
        for s in ATTN_SEQS[:2] if quick else ATTN_SEQS:
            for causal in (False, True):
                cfgs.append(dict(b=TOKENS // s, s=s, hq=2048 // d, hkv=2048 // d, d=d, causal=causal))
    for causal in (False, True):
        cfgs.append(dict(b=TOKENS // 8192, s=8192, hq=32, hkv=8, d=128, causal=causal))
    return cfgs


def sdpa_call(backend, q, k, v, scale, causal):
    """A zero-argument call of SDPA restricted to `backend` on (b, h, s, d) views of q, k, v."""
    from torch.nn.attention import sdpa_kernel
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    gqa = kt.shape[1] != qt.shape[1]

    def call():
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale, enable_gqa=gqa)
    return call


def bench_attention(kernels, reps, quick, failures):
    from torch.nn.attention import SDPBackend
    rows = []
    gen = torch.Generator(device="cuda")
    for cfg in attention_configs(quick):
        b, s, hq, hkv, d, causal = cfg["b"], cfg["s"], cfg["hq"], cfg["hkv"], cfg["d"], cfg["causal"]
        gen.manual_seed(s * 131 + d + causal)
        q = torch.randn(b, s, hq, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        k = torch.randn(b, s, hkv, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        v = torch.randn(b, s, hkv, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        out = torch.empty_like(q)
        scale = 1.0 / math.sqrt(d)
        flops = 4.0 * b * hq * s * s * d / (2 if causal else 1)
        name = f"b{b} s{s // 1024}k h{hq}" + (f"/{hkv}" if hkv != hq else "") + f" d{d} " + \
            ("causal" if causal else "full")
        base = {}
        for label, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            call = sdpa_call(backend, q, k, v, scale, causal)
            try:
                ref = call().transpose(1, 2)
            except RuntimeError as e:  # a backend that refuses the shape is reported, not fatal
                print(f"{name}: SDPA {label} refused: {str(e).splitlines()[0]}")
                continue
            base[label] = (call, ref)
        if "flash" not in base:
            failures.append(f"attention {name}: no SDPA flash reference")
            continue
        ref = base["flash"][1]
        t_base = {label: Timing([c], reps) for label, (c, _) in base.items()}
        for target in ("sm90a", "sm80"):
            bound = kernels[target].op("attention_fwd").bind(out, None, q, k, v, scale, causal)
            out.fill_(float("nan"))
            bound()
            err = rel_error(out, ref)
            if not err < 1e-2:
                failures.append(f"attention {target} {name}: rel error {err:.2e} against SDPA flash")
                continue
            t = Timing([bound], reps)
            row = dict(kind="attention", build=target, name=name, **cfg, ms=t.ms, spread=t.spread,
                       tflops=flops / t.ms / 1e9, rel_err_vs_flash=err)
            for label, tb in t_base.items():
                row[f"{label}_ms"] = tb.ms
                row[f"{label}_tflops"] = flops / tb.ms / 1e9
                row[f"vs_{label}"] = tb.ms / t.ms
            if "cudnn" in base:
                row["cudnn_rel_err_vs_flash"] = rel_error(base["cudnn"][1], ref)
            # Targets: sm90a >= cuDNN at s >= 4k; sm80 >= flash; the stretch at d128 s8k full.
            if target == "sm90a" and s >= 4096 and "vs_cudnn" in row:
                row["target"] = "1.0x cudnn"
                row["met"] = row["vs_cudnn"] >= 1.0
            elif target == "sm80":
                row["target"] = "1.0x flash"
                row["met"] = row["vs_flash"] >= 1.0
            if target == "sm90a" and d == 128 and s == 8192 and hq == hkv and not causal:
                row["stretch"] = f">={ATTN_STRETCH_TFLOPS:.0f} TF/s"
                row["stretch_met"] = row["tflops"] >= ATTN_STRETCH_TFLOPS
            rows.append(row)
        del q, k, v, out, base, ref
        torch.cuda.empty_cache()
    return rows


def print_attention(rows):
    print("\n| attention (bf16) | build | ms | TFLOP/s | flash TF/s | cuDNN TF/s | vs flash | vs cuDNN "
          "| spread | target | met |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        met = "-" if "met" not in r else ("met" if r["met"] else "MISSED")
        target = r.get("target", "-")
        if "stretch" in r:
            target += f"; stretch {r['stretch']}"
            met += "; " + ("met" if r["stretch_met"] else "MISSED")
        print(f"| {r['name']} | {r['build']} | {r['ms']:.3f} "
              f"| {r['tflops']:.0f} | {r.get('flash_tflops', float('nan')):.0f} "
              f"| {r.get('cudnn_tflops', float('nan')):.0f} | {r.get('vs_flash', float('nan')):.2f}x "
              f"| {r.get('vs_cudnn', float('nan')):.2f}x | {100 * r['spread']:.1f}% | {target} | {met} |")


# --- decode (attention_decode_paged) -----------------------------------------------------

def decode_workspace_floats(batch, q_len, hq, hkv, d, max_kv):
    """The op's workspace rule (docs/ops-attention-decode.md)."""
    s = max(1, min(64, -(-max_kv // 128), -(-4096 // (batch * hkv))))
    return batch * q_len * hq * s * (d + 1) if s > 1 else 0


def one_pass_ms(nbytes, nsets, reps):
    """Event-timed milliseconds of one device copy that reads and writes nbytes in all (buffer
    pairs rotated over nsets so that a pass is not served from L2): what one kernel moving a
    decode call's bytes costs at that size, its launch included. At small sizes this is well
    above nbytes / copy bandwidth, the floor the long shapes use."""
    n = max(1, nbytes // 4)  # bf16 elements a side
    srcs = [torch.ones(n, device="cuda", dtype=torch.bfloat16) for _ in range(nsets)]
    dsts = [torch.empty_like(x) for x in srcs]
    ms = Timing([(lambda i=i: dsts[i].copy_(srcs[i])) for i in range(nsets)], reps).ms
    del srcs, dsts
    return ms


def bench_decode(kernels, reps, copy_tbs, failures):
    rows = []
    hq, hkv = DECODE_HQ, DECODE_HKV
    gen = torch.Generator(device="cuda")
    cases = [(b, kv, DECODE_D) for b, kv in DECODE_SHAPES] + [(*DECODE_HEAD_DIM_SHAPE, d) for d in DECODE_HEAD_DIMS]
    for b, kv, d in cases:
        scale = 1.0 / math.sqrt(d)
        kv_bytes = 2 * b * kv * hkv * d * 2  # K + V, bf16
        nsets = max(1, min(16, math.ceil(2 * L2_BYTES / kv_bytes)))
        floor_ms = kv_bytes / (copy_tbs * 1e9)
        pass_ms = one_pass_ms(kv_bytes, nsets, reps)
        sdpa_ms = None
        bs16_ms = {}
        for bs in (16, 256) if d == DECODE_D else (16,):
            gen.manual_seed(b * 7 + kv + bs + (d if d != DECODE_D else 0))
            nblk = kv // bs
            pool = nsets * b * nblk
            kc = torch.randn(pool, bs, hkv, d, device="cuda", dtype=torch.bfloat16, generator=gen)
            vc = torch.randn(pool, bs, hkv, d, device="cuda", dtype=torch.bfloat16, generator=gen)
            perm = torch.randperm(pool, device="cuda", generator=gen).to(torch.int32).view(nsets, b, nblk)
            tables = [perm[i].contiguous() for i in range(nsets)]
            seq = torch.full((b,), kv, device="cuda", dtype=torch.int32)
            qs = [torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(nsets)]
            outs = [torch.empty_like(qs[0]) for _ in range(nsets)]
            ws = torch.empty(max(1, decode_workspace_floats(b, 1, hq, hkv, d, nblk * bs)), device="cuda",
                             dtype=torch.float32)
            # SDPA on contiguous (b, hkv, kv, d) copies of the gathered cache: the reference of
            # this cache, and (once per shape) the baseline time.
            dense = []
            for i in range(nsets if sdpa_ms is None else 1):
                kd = kc[tables[i].long()].reshape(b, kv, hkv, d).transpose(1, 2).contiguous()
                vd = vc[tables[i].long()].reshape(b, kv, hkv, d).transpose(1, 2).contiguous()
                dense.append((qs[i].transpose(1, 2), kd, vd))
            sdpa = [(lambda t=t: F.scaled_dot_product_attention(t[0], t[1], t[2], scale=scale, enable_gqa=True))
                    for t in dense]
            ref = sdpa[0]().transpose(1, 2)
            if sdpa_ms is None:
                sdpa_ms = Timing(sdpa, reps).ms
            del dense, sdpa
            for target in ("sm90a", "sm80") if bs == 16 and d == DECODE_D else ("sm90a",):
                op = kernels[target].op("attention_decode_paged")
                calls = [op.bind(outs[i], None, qs[i], kc, vc, tables[i], seq, ws, scale, -1, 0.0) for i in range(nsets)]
                outs[0].fill_(float("nan"))
                calls[0]()
                err = rel_error(outs[0], ref)
                name = f"b{b} kv{kv // 1024}k bs{bs}" + (f" d{d}" if d != DECODE_D else "")
                if not err < 1e-2:
                    failures.append(f"decode {target} {name}: rel error {err:.2e} against SDPA")
                    continue
                t = Timing(calls, reps)
                row = dict(kind="decode", build=target, name=name, batch=b, kv=kv, head_dim=d, block_size=bs, us=t.ms * 1e3,
                           spread=t.spread, sdpa_us=sdpa_ms * 1e3, vs_sdpa=sdpa_ms / t.ms, floor_us=floor_ms * 1e3,
                           floor_ratio=floor_ms / t.ms, pass_us=pass_ms * 1e3, tbs=kv_bytes / t.ms / 1e9,
                           rel_err_vs_sdpa=err,
                           cache_sets=nsets)
                if d != DECODE_D:
                    # "Full speed" for the other fast head dims, read as the long-shape
                    # floor target of head dim 128.
                    row["target"] = ">=0.85 floor"
                    row["met"] = row["floor_ratio"] >= 0.85
                elif target == "sm90a" and bs == 16:
                    bs16_ms[target] = t.ms
                    if b >= 16:
                        row["target"] = ">=0.85 floor, >=1.0x SDPA"
                        row["met"] = row["floor_ratio"] >= 0.85 and row["vs_sdpa"] >= 1.0
                    elif kv >= 32768:
                        row["target"] = ">=0.6 floor"
                        row["met"] = row["floor_ratio"] >= 0.6
                    else:
                        row["target"] = "<=0.5x SDPA time"
                        row["met"] = row["vs_sdpa"] >= 2.0
                elif target == "sm80" and b >= 16:
                    row["target"] = ">=0.7 floor"
                    row["met"] = row["floor_ratio"] >= 0.7
                elif bs == 256 and "sm90a" in bs16_ms:
                    row["bs16_vs_bs256"] = bs16_ms["sm90a"] / t.ms
                    row["target"] = "bs16 within 10% of bs256"
                    row["met"] = row["bs16_vs_bs256"] <= 1.10
                rows.append(row)
            del kc, vc, perm, tables, qs, outs, ws, ref
            torch.cuda.empty_cache()
    return rows


def print_decode(rows):
    print("\n| decode bf16 GQA 32/8 (d128 unless named) | build | us | SDPA us | vs SDPA | floor us | floor/time "
          "| 1-pass us | TB/s | spread | target | met |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        met = "-" if "met" not in r else ("met" if r["met"] else "MISSED")
        extra = f" (bs16/bs256 {r['bs16_vs_bs256']:.2f})" if "bs16_vs_bs256" in r else ""
        print(f"| {r['name']} | {r['build']} | {r['us']:.1f} | {r['sdpa_us']:.1f} | {r['vs_sdpa']:.2f}x "
              f"| {r['floor_us']:.1f} | {r['floor_ratio']:.2f} | {r['pass_us']:.1f} | {r['tbs']:.2f} | {100 * r['spread']:.1f}% "
              f"| {r.get('target', '-')}{extra} | {met} |")


# --- FP8 (attention 1.2) ---------------------------------------------------------------

FP8_DECODE_SHAPES = ((16, 4096), (16, 32768), (64, 8192), (128, 4096))  # batch x KV, GQA 32/8 d128
FP8_WRITE_SHAPES = ((65536, 8, 128), (16384, 8, 128), (256, 8, 128))  # tokens x heads_kv x head_dim


def fp8_quantize(x, scale):
    """PyTorch's e4m3 bytes of x / scale (per KV head on dim -2), as the op's uint8 view."""
    return (x.float() / scale.view(-1, 1)).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)


class Fp8DecodeCase:
    """An attention_decode_paged_fp8 call of batch x kv keys (GQA DECODE_HQ / DECODE_HKV, d DECODE_D,
    block size 16): e4m3 caches with per-KV-head scales far from 1, in sets of tables, queries and
    outputs larger than L2 together (nsets), a workspace by the op's rule. bench_fp8 and
    dev/attention/fp8_decode_ab.py time it."""

    def __init__(self, b, kv, gen):
        hq, hkv, d, bs = DECODE_HQ, DECODE_HKV, DECODE_D, 16
        self.b, self.kv, self.hkv, self.d, self.bs = b, kv, hkv, d, bs
        self.scale = 1.0 / math.sqrt(d)
        self.fp8_bytes = 2 * b * kv * hkv * d  # K + V, one byte an element
        self.nsets = nsets = max(1, min(16, math.ceil(2 * L2_BYTES / self.fp8_bytes)))
        gen.manual_seed(b * 13 + kv)
        nblk = kv // bs
        pool = nsets * b * nblk
        self.ks = ks = torch.rand(hkv, device="cuda", generator=gen) * 0.05 + 0.01  # per KV head, far from 1
        self.vs = vs = torch.rand(hkv, device="cuda", generator=gen) * 0.05 + 0.01
        self.kc = fp8_quantize(torch.randn(pool, bs, hkv, d, device="cuda", generator=gen) * ks.view(-1, 1) * 50, ks)
        self.vc = fp8_quantize(torch.randn(pool, bs, hkv, d, device="cuda", generator=gen) * vs.view(-1, 1) * 50, vs)
        perm = torch.randperm(pool, device="cuda", generator=gen).to(torch.int32).view(nsets, b, nblk)
        self.tables = [perm[i].contiguous() for i in range(nsets)]
        self.seq = torch.full((b,), kv, device="cuda", dtype=torch.int32)
        self.qs = [torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(nsets)]
        self.outs = [torch.empty_like(self.qs[0]) for _ in range(nsets)]
        self.ws = torch.empty(max(1, decode_workspace_floats(b, 1, hq, hkv, d, nblk * bs)), device="cuda",
                              dtype=torch.float32)

    def calls(self, op):
        """The FP8 op bound to each set."""
        return [op.bind(self.outs[i], None, self.qs[i], self.kc, self.vc, self.ks, self.vs, self.tables[i], self.seq,
                        self.ws, self.scale, -1, 0.0) for i in range(self.nsets)]

    def bf16_caches(self):
        """The same values in bf16 (exact: e4m3 x scale rounded once to bf16), for kh's bf16 decode."""
        kb = (self.kc.view(torch.float8_e4m3fn).float() * self.ks.view(-1, 1)).to(torch.bfloat16)
        vb = (self.vc.view(torch.float8_e4m3fn).float() * self.vs.view(-1, 1)).to(torch.bfloat16)
        return kb, vb

    def sdpa(self, kb, vb, reps):
        """bf16 SDPA of set 0 on contiguous copies of kb / vb: (its output, as out's layout; its ms)."""
        b, kv, hkv, d = self.b, self.kv, self.hkv, self.d
        kd = kb[self.tables[0].long()].reshape(b, kv, hkv, d).transpose(1, 2).contiguous()
        vd = vb[self.tables[0].long()].reshape(b, kv, hkv, d).transpose(1, 2).contiguous()
        q0 = self.qs[0].transpose(1, 2)
        ref = F.scaled_dot_product_attention(q0, kd, vd, scale=self.scale, enable_gqa=True).transpose(1, 2)
        ms = Timing([lambda: F.scaled_dot_product_attention(q0, kd, vd, scale=self.scale, enable_gqa=True)], reps).ms
        return ref, ms


class CacheWriteCase:
    """A paged_kv_cache_write call of tokens x heads x dim bf16 keys and values into a bf16 or e4m3
    cache (block size 16, slots a random permutation), in sets larger than L2 together. bench_fp8
    and dev/attention/cache_write_ab.py time it; bytes: read + written."""

    def __init__(self, tokens, heads, dim, cache, gen):
        self.heads, self.dim, self.fp8 = heads, dim, cache == "e4m3"
        in_bytes = 2 * tokens * heads * dim * 2
        self.bytes = in_bytes + 2 * tokens * heads * dim * (1 if self.fp8 else 2)
        self.nsets = nsets = max(1, min(16, math.ceil(2 * L2_BYTES / self.bytes)))
        gen.manual_seed(tokens + heads)
        self.keys = [torch.randn(tokens, heads, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
                     for _ in range(nsets)]
        self.vals = [torch.randn(tokens, heads, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
                     for _ in range(nsets)]
        bs = 16
        nblocks = -(-tokens // bs) + 4
        cdt = torch.uint8 if self.fp8 else torch.bfloat16
        self.kcs = [torch.zeros(nblocks, bs, heads, dim, device="cuda", dtype=cdt) for _ in range(nsets)]
        self.vcs = [torch.zeros_like(self.kcs[0]) for _ in range(nsets)]
        self.slots = torch.randperm(nblocks * bs, device="cuda", generator=gen)[:tokens].to(torch.int64)
        self.ks = torch.full((heads,), 0.02, device="cuda")
        self.vs = torch.full((heads,), 0.03, device="cuda")

    def calls(self, op):
        """op bound to each set; the first call made, so that bytes_right() sees its result."""
        scales = (self.ks, self.vs) if self.fp8 else (None, None)
        calls = [op.bind(self.kcs[i], self.vcs[i], self.keys[i], self.vals[i], self.slots, *scales)
                 for i in range(self.nsets)]
        calls[0]()
        torch.cuda.synchronize()
        return calls

    def bytes_right(self):
        """Whether set 0's key cache holds PyTorch's quantize of its keys (or the keys) at the slots."""
        got = self.kcs[0].view(-1, self.heads, self.dim)[self.slots]
        want = fp8_quantize(self.keys[0], self.ks) if self.fp8 else self.keys[0]
        return torch.equal(got, want)


def bench_fp8(kernels, reps, copy_tbs, failures):
    """attention_decode_paged_fp8 against the floor of its FP8 bytes, bf16 SDPA and kh's bf16
    decode on the same shapes (the caches hold the same values: bf16 copies of the dequantized
    FP8 ones); paged_kv_cache_write against the copy bandwidth for its bytes."""
    rows = []
    gen = torch.Generator(device="cuda")
    for b, kv in FP8_DECODE_SHAPES:
        c = Fp8DecodeCase(b, kv, gen)
        nsets, fp8_bytes = c.nsets, c.fp8_bytes
        floor_ms = fp8_bytes / (copy_tbs * 1e9)
        kb, vb = c.bf16_caches()
        ref, sdpa_ms = c.sdpa(kb, vb, reps)
        bf16_op = kernels["sm90a"].op("attention_decode_paged")
        bf16_calls = [bf16_op.bind(c.outs[i], None, c.qs[i], kb, vb, c.tables[i], c.seq, c.ws, c.scale, -1, 0.0)
                      for i in range(nsets)]
        bf16_ms = Timing(bf16_calls, reps).ms
        bf16_bytes = 2 * fp8_bytes
        name = f"b{b} kv{kv // 1024}k bs{c.bs}"
        for target in ("sm90a", "sm80"):
            calls = c.calls(kernels[target].op("attention_decode_paged_fp8"))
            c.outs[0].fill_(float("nan"))
            calls[0]()
            err = rel_error(c.outs[0], ref)
            if not err < 2e-2:
                failures.append(f"fp8 decode {target} {name}: rel error {err:.2e} against SDPA on the dequantized cache")
                continue
            t = Timing(calls, reps)
            row = dict(kind="fp8 decode", build=target, name=name, batch=b, kv=kv, us=t.ms * 1e3, spread=t.spread,
                       sdpa_us=sdpa_ms * 1e3, time_vs_sdpa=t.ms / sdpa_ms, kh_bf16_us=bf16_ms * 1e3,
                       time_vs_kh_bf16=t.ms / bf16_ms, floor_us=floor_ms * 1e3, floor_ratio=floor_ms / t.ms,
                       bf16_floor_ratio=bf16_bytes / (copy_tbs * 1e9) / bf16_ms, tbs=fp8_bytes / t.ms / 1e9,
                       rel_err_vs_sdpa=err, cache_sets=nsets)
            if target == "sm90a":
                row["target"] = ">=0.85 FP8 floor, <=0.55x bf16 SDPA time"
                row["met"] = row["floor_ratio"] >= 0.85 and row["time_vs_sdpa"] <= 0.55
            rows.append(row)
        del c, kb, vb, ref, bf16_calls
        torch.cuda.empty_cache()
    for tokens, heads, dim in FP8_WRITE_SHAPES:
        for cache in ("e4m3", "bf16"):
            w = CacheWriteCase(tokens, heads, dim, cache, gen)
            calls = w.calls(kernels["sm90a"].op("paged_kv_cache_write"))
            name = f"t{tokens} h{heads} d{dim} -> {cache}"
            if not w.bytes_right():
                failures.append(f"cache write {name}: bytes differ from PyTorch's")
                continue
            t = Timing(calls, reps)
            tbs = w.bytes / t.ms / 1e9
            # A copy of the same bytes (rotated over as many sets) pays the same ramp and launch as the
            # write; copy_tbs is the rate of a 1 GiB copy, which a 16384-token write's 50 MB cannot reach.
            same_ms = one_pass_ms(w.bytes, w.nsets, reps)
            rows.append(dict(kind="cache write", build="sm90a", name=name, us=t.ms * 1e3, spread=t.spread,
                             tbs=tbs, copy_ratio=tbs / copy_tbs, same_copy_us=same_ms * 1e3,
                             same_copy_ratio=same_ms / t.ms, target=">=0.85 copy bandwidth",
                             met=tbs / copy_tbs >= 0.85 if tokens >= 16384 else None))
            if rows[-1]["met"] is None:
                del rows[-1]["met"], rows[-1]["target"]  # a decode step's size: launch-bound, no target
            del w, calls
            torch.cuda.empty_cache()
    return rows


def print_fp8(rows, copy_tbs):
    print("\n| FP8 decode, GQA 32/8 d128, e4m3 KV | build | us | bf16 SDPA us | time vs SDPA | kh bf16 us "
          "| time vs kh bf16 | FP8 floor us | floor/time | kh bf16 floor/time | TB/s | spread | target | met |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if r["kind"] != "fp8 decode":
            continue
        met = "-" if "met" not in r else ("met" if r["met"] else "MISSED")
        print(f"| {r['name']} | {r['build']} | {r['us']:.1f} | {r['sdpa_us']:.1f} | {r['time_vs_sdpa']:.2f}x "
              f"| {r['kh_bf16_us']:.1f} | {r['time_vs_kh_bf16']:.2f}x | {r['floor_us']:.1f} | {r['floor_ratio']:.2f} "
              f"| {r['bf16_floor_ratio']:.2f} | {r['tbs']:.2f} | {100 * r['spread']:.1f}% | {r.get('target', '-')} | {met} |")
    print(f"\n| paged_kv_cache_write (bf16 in) | build | us | TB/s (read + write) | of copy {copy_tbs:.2f} TB/s "
          "| same-size copy us | of same-size copy | spread | target | met |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if r["kind"] != "cache write":
            continue
        met = "-" if "met" not in r else ("met" if r["met"] else "MISSED")
        print(f"| {r['name']} | {r['build']} | {r['us']:.1f} | {r['tbs']:.2f} | {r['copy_ratio']:.2f} "
              f"| {r['same_copy_us']:.1f} | {r['same_copy_ratio']:.2f} "
              f"| {100 * r['spread']:.1f}% | {r.get('target', '-')} | {met} |")


# --- norms ----------------------------------------------------------------------------

NORM_OPS = ("rms_norm", "fused_add_rms_norm", "layer_norm", "fused_add_layer_norm")


def norm_calls(op, kernel, o, ro, x, r, w, b, eps, hidden):
    """(our bound call, PyTorch's call) of `op` on one buffer set."""
    kop = kernel.op(op)
    if op == "rms_norm":
        return kop.bind(o, x, w, eps), lambda: F.rms_norm(x, (hidden,), w, eps)
    if op == "fused_add_rms_norm":
        return kop.bind(o, ro, x, r, w, eps), lambda: F.rms_norm(x + r, (hidden,), w, eps)
    if op == "layer_norm":
        return kop.bind(o, x, w, b, eps), lambda: F.layer_norm(x, (hidden,), w, b, eps)
    return kop.bind(o, ro, x, r, w, b, eps), lambda: F.layer_norm(x + r, (hidden,), w, b, eps)


def bench_norms(kernels, reps, failures):
    rows = []
    eps = 1e-6
    gen = torch.Generator(device="cuda")
    for rows_n, hidden in NORM_SHAPES:
        n = rows_n * hidden
        nbuf = max(2, math.ceil(2 * L2_BYTES / (2 * n * 2)))  # every set's x + out beyond L2, twice over
        gen.manual_seed(rows_n + hidden)
        xs = [torch.randn(rows_n, hidden, device="cuda", dtype=torch.bfloat16, generator=gen) + 0.5
              for _ in range(nbuf)]
        rs = [torch.randn(rows_n, hidden, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(nbuf)]
        outs = [torch.empty_like(xs[0]) for _ in range(nbuf)]
        routs = [torch.empty_like(xs[0]) for _ in range(nbuf)]
        w = torch.randn(hidden, device="cuda", dtype=torch.bfloat16, generator=gen) * 0.5 + 1
        bias = torch.randn(hidden, device="cuda", dtype=torch.bfloat16, generator=gen) * 0.1
        shape = f"{rows_n}x{hidden}"
        copy = Timing([(lambda i=i: outs[i].copy_(xs[i])) for i in range(nbuf)], reps)
        copy_tbs = 2 * n * 2 / copy.ms / 1e9
        for op in NORM_OPS:
            kernel = kernels["layer-norm" if "layer" in op else "rms-norm"]
            pairs = [norm_calls(op, kernel, outs[i], routs[i], xs[i], rs[i], w, bias, eps, hidden)
                     for i in range(nbuf)]
            ours, theirs = [p[0] for p in pairs], [p[1] for p in pairs]
            outs[0].fill_(float("nan"))
            ours[0]()
            want = theirs[0]()
            err = rel_error(outs[0], want)
            if op.startswith("fused"):
                err = max(err, rel_error(routs[0], xs[0] + rs[0]))
            if not err < 1e-2:
                failures.append(f"{op} {shape}: rel error {err:.2e} against PyTorch")
                continue
            del want
            t_ours = Timing(ours, reps)
            t_torch = Timing(theirs, reps)
            nbytes = (4 if op.startswith("fused") else 2) * n * 2
            tbs = nbytes / t_ours.ms / 1e9
            row = dict(kind="norm", op=op, shape=shape, rows=rows_n, hidden=hidden, us=t_ours.ms * 1e3,
                       spread=t_ours.spread, tbs=tbs, copy_tbs=copy_tbs, vs_copy=tbs / copy_tbs,
                       torch_us=t_torch.ms * 1e3, torch_tbs=nbytes / t_torch.ms / 1e9,
                       vs_torch=t_torch.ms / t_ours.ms, rel_err_vs_torch=err, buffer_sets=nbuf)
            if op in NORM_TARGETS:
                want_copy, want_torch = NORM_TARGETS[op]
                row["target"] = f">={want_copy:.2f}x copy, >={want_torch:.2f}x torch"
                row["met_copy"] = row["vs_copy"] >= want_copy
                row["met_torch"] = row["vs_torch"] >= want_torch
                row["met"] = row["met_copy"] and row["met_torch"]
            rows.append(row)
        del xs, rs, outs, routs
        torch.cuda.empty_cache()
    return rows


def print_norms(rows):
    print("\n| op (bf16) | shape | us | TB/s | copy TB/s | vs copy | torch TB/s | vs torch | spread | target | met |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "met" not in r:
            met = "-"
        elif r["met"]:
            met = "met"
        else:
            met = "MISSED " + ", ".join(w for w, ok in (("copy", r["met_copy"]), ("torch", r["met_torch"])) if not ok)
        print(f"| {r['op']} | {r['shape']} | {r['us']:.1f} | {r['tbs']:.2f} | {r['copy_tbs']:.2f} "
              f"| {r['vs_copy']:.3f} | {r['torch_tbs']:.2f} | {r['vs_torch']:.2f}x | {100 * r['spread']:.1f}% "
              f"| {r.get('target', '-')} | {met} |")


# --- main -----------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hub", default=os.environ.get("KH_HUB"), help="hub URL (default $KH_HUB)")
    ap.add_argument("--cache", default=os.environ.get("KH_CACHE"), help="cache folder (default $KH_CACHE)")
    ap.add_argument("--out", help="folder for gpu_bench.json")
    ap.add_argument("--only", type=lambda v: set(v.split(",")), default=None,
                    help="comma-separated parts: attention, norms, decode, prefill, pointwise, fp8 (default: all)")
    ap.add_argument("--reps", type=int, default=30, help="timed calls per round (two rounds)")
    ap.add_argument("--quick", action="store_true", help="attention at s 1k and 4k only")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 0
    t0 = time.time()
    variants = {}
    if args.hub and args.hub.startswith("file://"):
        from check_through_kh import hub_variants  # the hub's variant keys by target name
        variants = {pkg: hub_variants(args.hub, pkg) for pkg in ("attention", "rms-norm", "layer-norm", "activation",
                                                                 "rotary")}
    version, _ = kh.library_version()
    dev = torch.cuda.get_device_properties(0)
    print(f"kh {version}; {dev.name}, {dev.multi_processor_count} SMs; torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}")
    failures = []
    result = dict(device=dev.name, torch=torch.__version__, cudnn=torch.backends.cudnn.version(), kh=version,
                  variants=variants, reps=args.reps)
    result["ceilings"] = ceilings(args.reps)
    print(f"ceilings: copy {result['ceilings']['copy_tbs']:.2f} TB/s (read + write), "
          f"bf16 matmul 8192^3 {result['ceilings']['matmul_tflops']:.0f} TFLOP/s")
    attn_rows, norm_rows, decode_rows, prefill_rows, varlen_rows, mixed_rows = [], [], [], [], [], []
    if args.only is None or "norms" in args.only:
        kernels = {pkg: load(pkg, "sm90a", args, variants) for pkg in ("rms-norm", "layer-norm")}
        norm_rows = bench_norms(kernels, args.reps, failures)
    if args.only is None or "attention" in args.only:
        kernels = {t: load("attention", t, args, variants) for t in ("sm90a", "sm80")}
        attn_rows = bench_attention(kernels, max(10, args.reps * 2 // 3), args.quick, failures)
    if args.only is None or "decode" in args.only:
        kernels = {t: load("attention", t, args, variants) for t in ("sm90a", "sm80")}
        decode_rows = bench_decode(kernels, max(20, args.reps), result["ceilings"]["copy_tbs"], failures)
        import decode_mixed_bench as mixed  # batches of mixed lengths against equal ones
        try:
            mixed_rows = mixed.bench_mixed(kernels, max(20, args.reps), result["ceilings"]["copy_tbs"], failures,
                                           Timing, rel_error, decode_workspace_floats, L2_BYTES)
        except Exception as e:  # noqa: BLE001 (a failed row, not a lost run: written before its first GPU run)
            failures.append(f"decode mixed: {type(e).__name__}: {e}")
    fp8_rows = []
    if args.only is None or "fp8" in args.only:
        kernels = {t: load("attention", t, args, variants) for t in ("sm90a", "sm80")}
        fp8_rows = bench_fp8(kernels, max(20, args.reps), result["ceilings"]["copy_tbs"], failures)
        import fp8_prefill_bench  # FP8 prefill (e4m3 q/k/v, FP8 wgmma) against kh's bf16 attention_fwd
        fp8_rows += fp8_prefill_bench.bench_fp8_prefill(kernels["sm90a"].op("attention_varlen_fwd_fp8"),
                                                        kernels["sm90a"].op("attention_fwd"), max(10, args.reps // 2),
                                                        failures, Timing, rel_error)
    if args.only is None or "prefill" in args.only:
        import attention_prefill_bench as prefill  # 1.1's head dims and varlen rows
        kernels = {t: load("attention", t, args, variants) for t in ("sm90a", "sm80")}
        prefill_reps = max(10, args.reps * 2 // 3)
        prefill_rows = prefill.bench_head_dims(kernels, prefill_reps, failures, Timing, rel_error, sdpa_call)
        varlen_rows = prefill.bench_varlen(kernels, prefill_reps, failures, Timing, rel_error)
    pointwise_rows = []
    if args.only is None or "pointwise" in args.only:
        kernels = {t: load("activation", t, args, variants) for t in ("sm90a", "sm80")}
        pointwise_rows = bench_pointwise.bench_activation(kernels, args.reps, failures, Timing, rel_error)
        kernels = {t: load("rotary", t, args, variants) for t in ("sm90a", "sm80")}
        pointwise_rows += bench_pointwise.bench_rotary(kernels, args.reps, failures, Timing, rel_error, L2_BYTES)
    result.update(attention=attn_rows, norms=norm_rows, decode=decode_rows, decode_mixed=mixed_rows,
                  prefill=prefill_rows, varlen=varlen_rows, pointwise=pointwise_rows, fp8=fp8_rows, failures=failures)
    rows = attn_rows + norm_rows + decode_rows + prefill_rows + varlen_rows + pointwise_rows + fp8_rows
    judged = [r for r in rows if "met" in r] + [dict(met=r["stretch_met"]) for r in rows if "stretch" in r]
    result["targets_met"] = sum(r["met"] for r in judged)
    result["targets_judged"] = len(judged)

    print(f"\nceilings: copy {result['ceilings']['copy_tbs']:.2f} TB/s, bf16 matmul "
          f"{result['ceilings']['matmul_tflops']:.0f} TFLOP/s")
    if attn_rows:
        print_attention(attn_rows)
    if norm_rows:
        print_norms(norm_rows)
    if decode_rows:
        print_decode(decode_rows)
    if mixed_rows:
        import decode_mixed_bench as mixed
        mixed.print_mixed(mixed_rows)
    if prefill_rows or varlen_rows:
        import attention_prefill_bench as prefill
        prefill.print_rows(prefill_rows, varlen_rows)
    if pointwise_rows:
        bench_pointwise.print_pointwise(pointwise_rows)
    if fp8_rows:
        print_fp8(fp8_rows, result["ceilings"]["copy_tbs"])
        import fp8_prefill_bench
        fp8_prefill_bench.print_fp8_prefill([r for r in fp8_rows if r["kind"] == "fp8 prefill"])
    print(f"\ntargets met: {result['targets_met']} of {result['targets_judged']}; "
          f"validation failures: {len(failures)}; {time.time() - t0:.0f} s")
    for f in failures:
        print("FAIL", f)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "gpu_bench.json"), "w") as f:
            json.dump(result, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
