"""sustained_prefill_probe.py: the FP8 and bf16 prefill held under load for a few seconds each, in
half-second batches, beside nvidia-smi's SM clock and power samples of the same seconds.

Why: the bench (fp8_prefill_bench.py) times 10 calls a round after a pause, so its TF/s depend on
how much of the board's power budget the card has left then. On an H100 SXM (700 W) both the FP8
and the bf16 prefill on random e4m3 values run at the power cap within a second, and the SM clock
drops to 1450-1760 MHz (cuda/NOTES.md "The prefill at the power cap"). This shows, per shape, the
first batch, the sustained median and the clock and power beside them.

  python3 sustained_prefill_probe.py LIB [SETS] [--seconds N]
    LIB   an sm90a attention library (release build)
    SETS  comma-separated d:seqlen:causal(0|1):data(randn|zeros):kind(fp8|bf16); default the d256
          s16k full rows of both kinds and the FP8 row on zeros
Prints one line a batch and a Markdown table at the end. Needs nvidia-smi on PATH.
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "bench"))

import torch  # noqa: E402

import kh  # noqa: E402
import fp8_prefill_bench as fb  # noqa: E402

DEFAULT_SETS = "256:16384:0:randn:fp8,256:16384:0:randn:bf16,256:16384:0:zeros:fp8"


class Sampler:
    """nvidia-smi's SM clock (MHz), power (W) and temperature (C) every 100 ms, stamped with this
    process's clock as each line arrives (no parsing of nvidia-smi's own timestamps)."""

    def __init__(self):
        self.samples = []  # (time.time(), clock, power, temperature)
        self.proc = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu", "--format=csv,noheader,nounits",
             "-lms", "100"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            fields = [f.strip() for f in line.split(",")]
            try:
                self.samples.append((time.time(), int(float(fields[0])), float(fields[1]), int(float(fields[2]))))
            except (ValueError, IndexError):
                continue  # "[N/A]" and the like

    def between(self, t0, t1):
        return [s for s in self.samples if t0 <= s[0] <= t1]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=5)


def make_call(fp8_op, bf16_op, d, s, causal, data, kind, gen):
    """The bound call and its FLOPs: fb's shapes (16k tokens, 2048 / d heads) and its values."""
    b, h = fb.TOKENS // s, 2048 // d
    gen.manual_seed(d * 7 + s)
    scales = [torch.rand(h, device="cuda", generator=gen) * 0.05 + 0.01 for _ in range(3)]
    if data == "zeros":
        q8, k8, v8 = (torch.zeros(b * s, h, d, device="cuda", dtype=torch.uint8) for _ in range(3))
    else:
        q8, k8, v8 = (fb._quantize(torch.randn(b * s, h, d, device="cuda", generator=gen) * sc.view(-1, 1) * 40,
                                   sc).view(torch.uint8) for sc in scales)
    scale = 1.0 / math.sqrt(d)
    flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
    if kind == "bf16":
        qb, kb, vb = ((x.view(fb.E4M3).float() * sc.view(-1, 1)).to(torch.bfloat16).view(b, s, h, d)
                      for x, sc in zip((q8, k8, v8), scales))
        out = torch.empty(b, s, h, d, device="cuda", dtype=torch.bfloat16)
        return bf16_op.bind(out, None, qb, kb, vb, scale, causal), flops
    cu = torch.arange(0, b + 1, device="cuda", dtype=torch.int32) * s
    out = torch.empty(b * s, h, d, device="cuda", dtype=torch.bfloat16)
    args = [out, None, q8, k8, v8, scales[0], scales[1], scales[2], cu, cu, s, s, scale, causal, -1, 0.0]
    ws_bytes = fp8_op.workspace_size(*args, None)  # the workspace the op asks for, as the bench passes it
    ws = torch.empty(ws_bytes, device="cuda", dtype=torch.uint8) if ws_bytes else None
    return fp8_op.bind(*args, ws), flops


def batch_median_ms(call, seconds=0.4, most=200):
    """Per-call event times of back-to-back calls for about `seconds`; their median."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(most)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(most)]
    t0, n = time.time(), 0
    while n < most and time.time() - t0 < seconds:
        starts[n].record()
        call()
        ends[n].record()
        n += 1
    torch.cuda.synchronize()
    return statistics.median(starts[i].elapsed_time(ends[i]) for i in range(n))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lib")
    parser.add_argument("sets", nargs="?", default=DEFAULT_SETS)
    parser.add_argument("--seconds", type=float, default=4.0, help="how long each shape is held (default 4)")
    opts = parser.parse_args()
    lib = kh.load_library(opts.lib)
    fp8_op, bf16_op = lib.op("attention_varlen_fwd_fp8"), lib.op("attention_fwd")
    sets = [x.split(":") for x in opts.sets.split(",") if x]
    gen = torch.Generator(device="cuda")
    sampler = Sampler()
    table = []
    print(torch.cuda.get_device_name(), flush=True)
    try:
        for d, s, causal, data, kind in sets:
            name = f"{kind} d{d} s{int(s) // 1024}k {'causal' if causal == '1' else 'full'} {data}"
            call, flops = make_call(fp8_op, bf16_op, int(d), int(s), causal == "1", data, kind, gen)
            for _ in range(3):
                call()
            torch.cuda.synchronize()
            t_begin, tflops = time.time(), []
            while time.time() - t_begin < opts.seconds:
                tflops.append(flops / batch_median_ms(call) / 1e9)
                print(f"{time.time() - t_begin:5.2f} s  {name}: {tflops[-1]:.0f} TF/s", flush=True)
            smi = sampler.between(t_begin, time.time())
            clocks, watts = [x[1] for x in smi] or [0], [x[2] for x in smi] or [0.0]
            temps = [x[3] for x in smi] or [0]
            table.append(f"| {name} | {tflops[0]:.0f} | {statistics.median(tflops):.0f} ({min(tflops):.0f}-"
                         f"{max(tflops):.0f}) | {statistics.median(clocks):.0f} ({min(clocks)}-{max(clocks)}) | "
                         f"{statistics.median(watts):.0f} | {min(temps)}-{max(temps)} |")
            del call
            torch.cuda.empty_cache()
            time.sleep(1.0)
    finally:
        sampler.stop()
    print("\n| shape | first batch TF/s | median TF/s (range) | SM clock MHz, median (range) | power W, median "
          "| temperature C |\n| --- | --- | --- | --- | --- | --- |")
    print("\n".join(table))


if __name__ == "__main__":
    main()
