"""cache_write_ab.py: paged_kv_cache_write of one or more CUDA attention libraries in one process, on
gpu_bench.FP8_WRITE_SHAPES and 32768 tokens (gpu_bench.CacheWriteCase), against the copy bandwidth
of the same run (a 512 MiB copy) and against one copy moving the call's bytes (its launch and ramp
included: gpu_bench.one_pass_ms); each library's bytes checked against PyTorch's quantize. On the
GPU machine, from the repo root, with KH_LIBRARY set (run_fp8_probe.sh shows how):
  python3 dev/attention/cache_write_ab.py LIB...   (each LIB in a folder naming it)
"""
import sys

import ab_libs
import torch  # noqa: E402 - after ab_libs' paths
import gpu_bench as gb  # noqa: E402

names, ops = ab_libs.ops_of(sys.argv[1:], "paged_kv_cache_write")
copy_tbs = ab_libs.copy_tbs()
gen = torch.Generator(device="cuda")
for tokens, heads, dim in gb.FP8_WRITE_SHAPES + ((32768, 8, 128),):
    for cache in ("e4m3", "bf16"):
        w = gb.CacheWriteCase(tokens, heads, dim, cache, gen)
        same_us = gb.one_pass_ms(w.bytes, w.nsets, 30) * 1e3
        line = f"t{tokens} -> {cache} (same-size copy {same_us:.1f} us):"
        for name, op in zip(names, ops):
            calls = w.calls(op)
            right = w.bytes_right()
            us = gb.Timing(calls, 30).ms * 1e3
            tbs = w.bytes / us / 1e6
            line += (f"  {name} {us:.1f} us ({tbs / copy_tbs:.2f} copy, {same_us / us:.2f} same-size copy"
                     f"{'' if right else ' WRONG BYTES'})")
        print(line, flush=True)
        del w
        torch.cuda.empty_cache()
