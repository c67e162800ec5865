"""fp8_decode_ab.py: attention_decode_paged_fp8 of one or more CUDA attention libraries on
gpu_bench.FP8_DECODE_SHAPES (gpu_bench.Fp8DecodeCase: GQA 32/8 d128, e4m3 caches with per-head
scales, block size 16), in one process on the same caches, against the copy floor of the same run
and bf16 SDPA on the same values, as gpu_bench.bench_fp8 times them. Each library's output is
compared with the first's. On the GPU machine, from the repo root, with KH_LIBRARY set
(run_fp8_probe.sh shows how):
  python3 dev/attention/fp8_decode_ab.py LIB...   (each LIB in a folder naming it, e.g. cuda-sm90a/)
A development build's switches (KH_ATTENTION_DECODE_WIDE=0|1, KH_ATTENTION_DECODE_TMA=0) apply to
the whole process when set around it. KH_AB_LIB_ENV="NAME:VAR=VALUE,VAR=VALUE;NAME:..." sets them
for one library only: the launcher reads each switch once, at the library's first call, so the
variables are set just before it and unset after (copies of one development build in folders of
their own are then several variants in one process). KH_AB_DECODE_SHAPES="16x4096 64x8192 ..."
replaces the bench's shapes.
"""
import os
import sys

import ab_libs
import torch  # noqa: E402 - after ab_libs' paths
import gpu_bench as gb  # noqa: E402


def lib_env(spec):
    """{library name: {variable: value}} from KH_AB_LIB_ENV's text."""
    out = {}
    for part in filter(None, spec.split(";")):
        name, _, assigns = part.partition(":")
        out[name.strip()] = dict(a.split("=", 1) for a in assigns.split(",") if "=" in a)
    return out


names, ops = ab_libs.ops_of(sys.argv[1:], "attention_decode_paged_fp8")
envs = lib_env(os.environ.get("KH_AB_LIB_ENV", ""))
shapes = [tuple(int(x) for x in s.split("x")) for s in os.environ.get("KH_AB_DECODE_SHAPES", "").split()]
copy_tbs = ab_libs.copy_tbs()
gen = torch.Generator(device="cuda")
first_call = set(names)
for b, kv in shapes or gb.FP8_DECODE_SHAPES:
    c = gb.Fp8DecodeCase(b, kv, gen)
    floor_us = c.fp8_bytes / (copy_tbs * 1e9) * 1e3
    kb, vb = c.bf16_caches()
    _, sdpa_ms = c.sdpa(kb, vb, 30)
    del kb, vb
    line = f"b{b} x {kv // 1024}k floor {floor_us:.1f} us, bf16 SDPA {sdpa_ms * 1e3:.1f} us:"
    ref = None
    for name, op in zip(names, ops):
        calls = c.calls(op)
        env = envs.get(name, {}) if name in first_call else {}
        first_call.discard(name)
        os.environ.update(env)
        calls[0]()
        torch.cuda.synchronize()
        for var in env:
            del os.environ[var]
        o = c.outs[0].float().clone()
        err = 0.0 if ref is None else ((o - ref).abs().max() / ref.abs().max()).item()
        ref = o if ref is None else ref
        us = gb.Timing(calls, 30).ms * 1e3
        line += f"  {name} {us:.1f} us ({floor_us / us:.2f} floor, {us / (sdpa_ms * 1e3):.2f}x SDPA, diff {err:.1e})"
    print(line, flush=True)
    del c
    torch.cuda.empty_cache()
