"""fp8_read_floor_probe.py: how long any kernel needs just to read an FP8 decode call's bytes, timed
as gpu_bench times the op, beside the op and bf16 SDPA in one process. For issue 42's 16 x 4k row
(cuda/NOTES.md "Where the FP8 gap stands"): the target asks for at most 0.55x SDPA's time and at
least 0.85 of the floor (the bytes over the 512 MiB copy rate); a kernel that does nothing but
read the bytes once, with the same launch, shows how much of that time is left for the op's work.

Readers (Triton; each program sums what it read into one float, so the loads are kept):
  empty        a grid of 128 programs that read nothing: the launch as the timing sees it;
  contiguous   one buffer of the call's K + V bytes, front to back, in one launch;
  head rows    the op's own pattern: a program a (sequence, kv head, run of blocks) reads its
               head's 128-byte rows of K and V, block by block through the block table.
Each reader runs in a few shapes; the fastest is printed.

  python3 fp8_read_floor_probe.py LIB [--shapes 16x4096,16x32768]
    LIB   an attention library with attention_decode_paged_fp8 (release build)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab_libs  # noqa: E402 (puts python/ and tests/bench on the path)
import torch  # noqa: E402
import gpu_bench as gb  # noqa: E402

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
# The bf16 probe's readers; given 32-bit views of the e4m3 caches, a row is d / 4 words.
from paged_read_probe import read_flat, read_head_rows  # noqa: E402


@triton.jit
def read_nothing(out_ptr):
    if tl.program_id(0) < 0:  # never true: a program that loads and stores nothing
        tl.store(out_ptr, 0.0)


def fastest(configs):
    """(us, description) of the fastest (description, call) in configs, timed as gpu_bench times."""
    return min((gb.Timing([call], 30).ms * 1e3, what) for what, call in configs)


def probe(op, b, kv, copy_tbs, gen):
    c = gb.Fp8DecodeCase(b, kv, gen)
    floor_us = c.fp8_bytes / (copy_tbs * 1e9) * 1e3
    kb, vb = c.bf16_caches()
    _, sdpa_ms = c.sdpa(kb, vb, 30)
    del kb, vb
    sdpa_us = sdpa_ms * 1e3
    op_us = gb.Timing(c.calls(op), 30).ms * 1e3
    out = torch.empty(1 << 20, device="cuda", dtype=torch.float32)
    empty_us, _ = fastest([("128 programs", lambda: read_nothing[(128,)](out, num_warps=4))])
    words = c.fp8_bytes // 4
    flat_buf = torch.randint(-(1 << 30), 1 << 30, (words,), device="cuda", dtype=torch.int32, generator=gen)
    flat = []
    for w in (2048, 4096, 8192):
        for warps in (4, 8):
            n = words // w
            if n <= out.numel():
                flat.append((f"{w * 4 // 1024} KiB a program, {warps} warps",
                             lambda n=n, w=w, warps=warps: read_flat[(n,)](flat_buf, out, BLOCK=w, num_warps=warps)))
    flat_us, flat_what = fastest(flat)
    del flat_buf
    kw, vw, table = c.kc.view(torch.int32), c.vc.view(torch.int32), c.tables[0]
    nblk = kv // c.bs
    rows = []
    for run in (16, 64, 256):
        if nblk % run == 0 and (nblk // run) * c.hkv * b <= out.numel():
            for warps in (2, 4):
                rows.append((f"{run} blocks a program, {warps} warps", lambda run=run, warps=warps: read_head_rows[
                    (nblk // run, c.hkv, b)](kw, vw, table, out, nblk, RUN=run, BS=c.bs, HKV_=c.hkv,
                                             D_=c.d // 4, num_warps=warps)))
    rows_us, rows_what = fastest(rows)
    bound = min(0.55 * sdpa_us, floor_us / 0.85)
    print(f"b{b} x {kv // 1024}k: {c.fp8_bytes / 1e6:.0f} MB of e4m3 K + V; floor {floor_us:.1f} us, bf16 SDPA "
          f"{sdpa_us:.1f} us -> the targets allow {0.55 * sdpa_us:.1f} us (0.55x SDPA) and {floor_us / 0.85:.1f} us "
          f"(0.85 of the floor)", flush=True)
    print(f"  {'empty':10s} {empty_us:7.1f} us  (128 programs that read nothing: the launch)", flush=True)
    for name, us, what in (("op", op_us, "attention_decode_paged_fp8"), ("contiguous", flat_us, flat_what),
                           ("head rows", rows_us, rows_what)):
        print(f"  {name:10s} {us:7.1f} us  {c.fp8_bytes / (us * 1e-6) / 1e12:5.2f} TB/s  {floor_us / us:.2f} floor  "
              f"{us / sdpa_us:.2f}x SDPA  ({what})", flush=True)
    print(f"  left for the op's work within both targets, after the fastest pure read: "
          f"{bound - min(flat_us, rows_us):.1f} us", flush=True)
    del c
    torch.cuda.empty_cache()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lib")
    parser.add_argument("--shapes", default="16x4096,16x32768", help="batch x KV keys, comma-separated")
    opts = parser.parse_args()
    _, (op,) = ab_libs.ops_of([opts.lib], "attention_decode_paged_fp8")
    copy_tbs = ab_libs.copy_tbs()
    gen = torch.Generator(device="cuda")
    for shape in opts.shapes.split(","):
        b, kv = (int(x) for x in shape.split("x"))
        probe(op, b, kv, copy_tbs, gen)


if __name__ == "__main__":
    main()
