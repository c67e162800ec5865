"""fp8_decode_ab.py: attention_decode_paged_fp8 of one or more CUDA attention libraries on
gpu_bench.FP8_DECODE_SHAPES (GQA 32/8 d128, e4m3 caches with per-head scales, block size 16), in
one process on the same caches, against the copy floor of the same run and bf16 SDPA on the same
values (as gpu_bench.bench_fp8 times them). Each library's output is compared with the first's.
On the GPU machine, from the repo root, with KH_LIBRARY set (run_fp8_probe.sh shows how):
  python3 dev/attention/fp8_decode_ab.py LIB...   (each LIB in a folder naming it, e.g. cuda-sm90a/)
A development build's switches (KH_ATTENTION_DECODE_WIDE=0|1) apply to the whole process.
"""
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "bench"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import kh  # noqa: E402
import gpu_bench as gb  # noqa: E402

libs = sys.argv[1:]
ops = [kh.load_library(l).op("attention_decode_paged_fp8") for l in libs]
names = [os.path.basename(os.path.dirname(l)) for l in libs]
n = 1 << 28
xs = [torch.empty(n // 2, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
copy_ms = gb.Timing([lambda: xs[1].copy_(xs[0])], 20).ms
copy_tbs = 2 * n / copy_ms / 1e9
print(f"copy {copy_tbs:.2f} TB/s  {torch.cuda.get_device_name()}")
hq, hkv, d, bs = 32, 8, 128, 16
gen = torch.Generator(device="cuda")
for b, kv in gb.FP8_DECODE_SHAPES:
    fp8_bytes = 2 * b * kv * hkv * d
    nsets = max(1, min(16, math.ceil(2 * gb.L2_BYTES / fp8_bytes)))
    gen.manual_seed(b * 13 + kv)
    nblk = kv // bs
    pool = nsets * b * nblk
    ks = torch.rand(hkv, device="cuda", generator=gen) * 0.05 + 0.01
    vs = torch.rand(hkv, device="cuda", generator=gen) * 0.05 + 0.01
    kc = gb.fp8_quantize(torch.randn(pool, bs, hkv, d, device="cuda", generator=gen) * ks.view(-1, 1) * 50, ks)
    vc = gb.fp8_quantize(torch.randn(pool, bs, hkv, d, device="cuda", generator=gen) * vs.view(-1, 1) * 50, vs)
    perm = torch.randperm(pool, device="cuda", generator=gen).to(torch.int32).view(nsets, b, nblk)
    tables = [perm[i].contiguous() for i in range(nsets)]
    seq = torch.full((b,), kv, device="cuda", dtype=torch.int32)
    qs = [torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(nsets)]
    outs = [torch.empty_like(qs[0]) for _ in range(nsets)]
    ws = torch.empty(max(1, gb.decode_workspace_floats(b, 1, hq, hkv, d, kv)), device="cuda", dtype=torch.float32)
    floor_us = fp8_bytes / (copy_tbs * 1e9) * 1e3
    ref = None
    kb = (kc.view(torch.float8_e4m3fn).float() * ks.view(-1, 1)).to(torch.bfloat16)
    vb = (vc.view(torch.float8_e4m3fn).float() * vs.view(-1, 1)).to(torch.bfloat16)
    kd = kb[tables[0].long()].reshape(b, kv, hkv, d).transpose(1, 2).contiguous()
    vd = vb[tables[0].long()].reshape(b, kv, hkv, d).transpose(1, 2).contiguous()
    del kb, vb
    q0 = qs[0].transpose(1, 2)
    sdpa_us = gb.Timing([lambda: F.scaled_dot_product_attention(q0, kd, vd, scale=1 / math.sqrt(d), enable_gqa=True)], 30).ms * 1e3
    del kd, vd
    line = f"b{b} x {kv // 1024}k floor {floor_us:.1f} us, bf16 SDPA {sdpa_us:.1f} us:"
    for name, op in zip(names, ops):
        calls = [op.bind(outs[i], None, qs[i], kc, vc, ks, vs, tables[i], seq, ws, 1 / math.sqrt(d), -1, 0.0) for i in range(nsets)]
        calls[0]()
        torch.cuda.synchronize()
        o = outs[0].float().clone()
        err = 0.0 if ref is None else ((o - ref).abs().max() / ref.abs().max()).item()
        ref = o if ref is None else ref
        t = gb.Timing(calls, 30)
        line += f"  {name} {t.ms * 1e3:.1f} us ({floor_us / (t.ms * 1e3):.2f} floor, {t.ms * 1e3 / sdpa_us:.2f}x SDPA, diff {err:.1e})"
    print(line, flush=True)
    del kc, vc, perm, tables, qs, outs, ws
    torch.cuda.empty_cache()
