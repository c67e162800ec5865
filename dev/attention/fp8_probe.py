"""fp8_probe.py: one case of check_fp8.py's decode grid (or a cache write / varlen check) against a
kernel library file, in a process of its own, so that a device fault stays in that case (a probe
for dev/attention/run_fp8_probe.sh; check_fp8.py is the acceptance check).

  python3 fp8_probe.py LIB decode INDEX {bf16,f16}   # check_fp8.DECODE_CASES[INDEX]
  python3 fp8_probe.py LIB decode-all        # every DECODE_CASES case x bf16/fp16, then the graph check
  python3 fp8_probe.py LIB write | varlen | graph
  python3 fp8_probe.py LIB prefill [INDEX]   # check_fp8.PREFILL_CASES (all, or one), sm90a builds
  python3 fp8_probe.py LIB prefill-bench     # fp8_prefill_bench.py's table (no hub needed)
  python3 fp8_probe.py LIB prefill-once [D]  # FP8 and bf16 prefill, d D (128) s8k: launches for a profiler
  python3 fp8_probe.py LIB prefill-times     # a KH_DEV_FP8_PROBE_TIMES build: the steady loop's clocks by
                                             # segment and CTA 0's timeline of both warpgroups, after one
                                             # call each of d128 / d256 b2 s8k (a light build,
                                             # + KH_DEV_FP8_PROBE_LIGHT: the timeline alone)
  python3 fp8_probe.py LIB times             # a KH_DECODE_PROBE_TIMES build: per-CTA timer marks of
                                             # the unsplit decode shapes (decode_probe.print_times)
Prints one line per result; exit status 1 when one failed.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "gpu", "attention"))  # check_fp8, the GPU check
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "bench"))  # gpu_bench's timer, fp8_prefill_bench

import torch  # noqa: E402

import kh  # noqa: E402
import check_fp8 as c8  # noqa: E402


class Results:
    def __init__(self):
        self.failed = 0

    def add(self, op, target, dtype, cls, case, ok, err=None, tol=None, detail=""):
        self.failed += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FAIL'} {op} {target} {dtype} [{cls}] {case}: err {err} tol {tol} {detail}",
              flush=True)


def main():
    lib, what = sys.argv[1], sys.argv[2]
    k = kh.load_library(lib)
    res = Results()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    target = os.path.basename(os.path.dirname(lib)) or "gpu"
    if what == "decode":
        case = c8.DECODE_CASES[int(sys.argv[3])]
        dtype = torch.bfloat16 if sys.argv[4] == "bf16" else torch.float16
        c8.run_decode_case(res, k.op("attention_decode_paged_fp8"), target, dtype, case, gen)
    elif what == "decode-all":
        op = k.op("attention_decode_paged_fp8")
        for case in c8.DECODE_CASES:
            for dtype in (torch.bfloat16, torch.float16):
                c8.run_decode_case(res, op, target, dtype, case, gen)
        c8.check_decode_fp8_graph(res, op, target, gen)
    elif what == "dims":
        for d in range(32, 257, 16):
            c8.run_decode_case(res, k.op("attention_decode_paged_fp8"), target, torch.bfloat16,
                               ("head dims", 2, 2, 4, 2, d, 16, [300, 1], -1, 0.0, "head", "normal"), gen)
    elif what == "write":
        c8.check_cache_write(res, k.op("paged_kv_cache_write"), target, gen, k.op("attention_decode_paged_fp8"))
    elif what == "varlen":
        c8.check_varlen_fp8(res, k.op("attention_varlen_fwd_fp8"), target, gen, c8.expect_error)
    elif what == "prefill":
        cases = [c8.PREFILL_CASES[int(sys.argv[3])]] if len(sys.argv) > 3 else None
        c8.check_fp8_prefill(res, k.op("attention_varlen_fwd_fp8"), target, gen, cases)
    elif what == "prefill-bench":
        import gpu_bench  # noqa: E402 - its Timing and rel_error
        import fp8_prefill_bench as fb  # noqa: E402
        failures = []
        rows = fb.bench_fp8_prefill(k.op("attention_varlen_fwd_fp8"), k.op("attention_fwd"), 10, failures,
                                    gpu_bench.Timing, gpu_bench.rel_error)
        fb.print_fp8_prefill(rows)
        for f in failures:
            res.add("fp8 prefill bench", target, "-", "bench", f, False)
    elif what == "prefill-once":  # for a profiler: FP8 then bf16 prefill, 3 times each (s8k b2 full, h d = 2048)
        d = int(sys.argv[3]) if len(sys.argv) > 3 else 128
        b, s, h = 2, 8192, 2048 // d
        u8 = [torch.randint(0, 120, (b * s, h, d), device="cuda", dtype=torch.uint8) for _ in range(3)]
        one = torch.ones(1, device="cuda")
        cu = torch.arange(0, b + 1, device="cuda", dtype=torch.int32) * s
        out = torch.empty(b * s, h, d, device="cuda", dtype=torch.bfloat16)
        qb, kb, vb = (x.view(torch.float8_e4m3fn).to(torch.bfloat16).view(b, s, h, d) for x in u8)
        fp8, bf16 = k.op("attention_varlen_fwd_fp8"), k.op("attention_fwd")
        for _ in range(3):
            fp8(out, None, u8[0], u8[1], u8[2], one, one, one, cu, cu, s, s, d ** -0.5, False, -1, 0.0)
        for _ in range(3):
            bf16(out.view(b, s, h, d), None, qb, kb, vb, d ** -0.5, False)
    elif what == "prefill-times":  # a KH_DEV_FP8_PROBE_TIMES build: its print after one call of each shape
        op = k.op("attention_varlen_fwd_fp8")
        for d in (128, 256):
            for causal in (False, True):
                b, s, h = 2, 8192, 2048 // d
                u8 = [torch.randint(0, 120, (b * s, h, d), device="cuda", dtype=torch.uint8) for _ in range(3)]
                one = torch.ones(1, device="cuda")
                cu = torch.arange(0, b + 1, device="cuda", dtype=torch.int32) * s
                out = torch.empty(b * s, h, d, device="cuda", dtype=torch.bfloat16)
                args = [out, None, u8[0], u8[1], u8[2], one, one, one, cu, cu, s, s, d ** -0.5, causal, -1, 0.0]
                ws = torch.empty(max(op.workspace_size(*args, None), 1), device="cuda", dtype=torch.uint8)
                for label, a in (("no workspace", args), ("workspace", args + [ws])):
                    op(*a)  # warm-up (its print too)
                    torch.cuda.synchronize()
                    print(f"== d{d} b{b} s{s} {'causal' if causal else 'full'}, {label}: one call", flush=True)
                    op(*a)
                    torch.cuda.synchronize()
    elif what == "times":  # where an unsplit call's time goes (the wide CTA's one-wave shapes)
        import gpu_bench as gb  # noqa: E402
        import decode_probe  # noqa: E402
        op = k.op("attention_decode_paged_fp8")
        for b, kv in ((16, 4096), (16, 32768)):
            c = gb.Fp8DecodeCase(b, kv, gen)
            calls = c.calls(op)
            us = gb.Timing(calls, 20).ms * 1e3
            print(f"b{b} x {kv // 1024}k: {us:.1f} us")
            decode_probe.print_times(b, kv, calls[0], c.ws, warps=15)  # slot 15: the barrier
            del c
    elif what == "graph":
        c8.check_decode_fp8_graph(res, k.op("attention_decode_paged_fp8"), target, gen)
    torch.cuda.synchronize()
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
