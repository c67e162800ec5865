"""A/B of paged_kv_cache_write between CUDA attention libraries in one process, on the bench's shapes
(gpu_bench.FP8_WRITE_SHAPES and 32768 tokens), with the copy bandwidth of the same run; checks the
bytes of each library against PyTorch's quantize. On the GPU machine, from the repo root, with
KH_LIBRARY set (dev/attention/run_fp8_probe.sh shows how):
  python3 dev/attention/cache_write_ab.py LIB_A LIB_B   (each LIB in a folder naming it)
"""
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "bench"))
import torch  # noqa: E402
import kh  # noqa: E402
import gpu_bench as gb  # noqa: E402
libs = sys.argv[1:]
ops = [kh.load_library(l).op("paged_kv_cache_write") for l in libs]
names = [os.path.basename(os.path.dirname(l)) for l in libs]
n = 1 << 28
xs = [torch.empty(n // 2, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
copy_tbs = 2 * n / gb.Timing([lambda: xs[1].copy_(xs[0])], 20).ms / 1e9
del xs
print(f"copy {copy_tbs:.2f} TB/s  {torch.cuda.get_device_name()}")
gen = torch.Generator(device="cuda")
for tokens, heads, dim in gb.FP8_WRITE_SHAPES + ((32768, 8, 128),):
    for cache in ("e4m3", "bf16"):
        in_bytes = 2 * tokens * heads * dim * 2
        out_bytes = 2 * tokens * heads * dim * (1 if cache == "e4m3" else 2)
        nsets = max(1, min(16, math.ceil(2 * gb.L2_BYTES / (in_bytes + out_bytes))))
        gen.manual_seed(tokens + heads)
        keys = [torch.randn(tokens, heads, dim, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(nsets)]
        vals = [torch.randn(tokens, heads, dim, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(nsets)]
        bs = 16
        nblocks = -(-tokens // bs) + 4
        cdt = torch.uint8 if cache == "e4m3" else torch.bfloat16
        kcs = [torch.zeros(nblocks, bs, heads, dim, device="cuda", dtype=cdt) for _ in range(nsets)]
        vcs = [torch.zeros_like(kcs[0]) for _ in range(nsets)]
        slots = torch.randperm(nblocks * bs, device="cuda", generator=gen)[:tokens].to(torch.int64)
        ks = torch.full((heads,), 0.02, device="cuda")
        vs = torch.full((heads,), 0.03, device="cuda")
        scales = (ks, vs) if cache == "e4m3" else (None, None)
        line = f"t{tokens} -> {cache}:"
        for name, op in zip(names, ops):
            calls = [op.bind(kcs[i], vcs[i], keys[i], vals[i], slots, *scales) for i in range(nsets)]
            calls[0]()
            torch.cuda.synchronize()
            got = kcs[0].view(-1, heads, dim)[slots]
            want = gb.fp8_quantize(keys[0], ks) if cache == "e4m3" else keys[0]
            same = torch.equal(got, want)
            t = gb.Timing(calls, 30)
            tbs = (in_bytes + out_bytes) / t.ms / 1e9
            line += f"  {name} {t.ms * 1e3:.1f} us ({tbs / copy_tbs:.2f} copy{'' if same else ' WRONG BYTES'})"
        print(line, flush=True)
        del keys, vals, kcs, vcs
        torch.cuda.empty_cache()
