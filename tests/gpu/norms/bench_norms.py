"""bench_norms.py: memory bandwidth of the CUDA norms against a device copy and PyTorch.

Usage: python3 bench_norms.py --rms LIB.so --layer LIB.so [--reps N]
For each bf16 shape: validates our output against PyTorch once, then times (CUDA events
around each call, calls queued behind a GPU sleep so host overhead stays out, buffers
rotated over sets larger than L2 together, median of --reps) a device-to-device copy of x,
our op and PyTorch's. Bandwidth counts the bytes an op must move: x read + out written
(fused: + residual read + residual_out written); weight and bias are negligible.
Prints a Markdown table with the ratios to the copy and to PyTorch.
"""
import argparse
import statistics
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("SKIP: PyTorch is not installed")
    sys.exit(0)

from kh_ctypes import KhLibrary

SHAPES = [(32768, 4096), (16384, 8192), (65536, 1024), (4096, 16384)]
NBUF = 3  # buffer sets rotated between calls: each set is >= 128 MB, the L2 is 50-60 MB


def time_calls(fn, reps):
    """Median milliseconds of fn(i) over reps calls, each between its own pair of events."""
    for i in range(3):
        fn(i)
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    torch.cuda._sleep(20_000_000)  # ~10 ms: the host queues every call before the GPU starts
    for i in range(reps):
        starts[i].record()
        fn(i)
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rms", required=True)
    ap.add_argument("--layer", required=True)
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 0
    rms, layer = KhLibrary(a.rms), KhLibrary(a.layer)
    dev = torch.cuda.get_device_properties(0)
    print(f"device: {dev.name}, {dev.multi_processor_count} SMs; libraries: {rms.variant}, {layer.variant}")
    dt = torch.bfloat16
    rows_out = []
    for rows, hidden in SHAPES:
        n = rows * hidden
        g = torch.Generator(device="cuda")
        g.manual_seed(rows + hidden)
        xs = [torch.randn(rows, hidden, device="cuda", dtype=dt, generator=g) + 0.5 for _ in range(NBUF)]
        rs = [torch.randn(rows, hidden, device="cuda", dtype=dt, generator=g) for _ in range(NBUF)]
        outs = [torch.empty_like(xs[0]) for _ in range(NBUF)]
        routs = [torch.empty_like(xs[0]) for _ in range(NBUF)]
        w = torch.randn(hidden, device="cuda", dtype=dt, generator=g) * 0.5 + 1
        b = torch.randn(hidden, device="cuda", dtype=dt, generator=g) * 0.1
        eps = 1e-6

        calls = {
            "rms_norm": [rms.prepare("rms_norm", outs[i], xs[i], w, eps) for i in range(NBUF)],
            "layer_norm": [layer.prepare("layer_norm", outs[i], xs[i], w, b, eps) for i in range(NBUF)],
            "fused_add_rms_norm": [rms.prepare("fused_add_rms_norm", outs[i], routs[i], xs[i], rs[i], w, eps)
                                   for i in range(NBUF)],
            "fused_add_layer_norm": [layer.prepare("fused_add_layer_norm", outs[i], routs[i], xs[i], rs[i], w, b,
                                                   eps) for i in range(NBUF)],
        }
        torch_fns = {
            "rms_norm": lambda i: F.rms_norm(xs[i % NBUF], (hidden,), w, eps),
            "layer_norm": lambda i: F.layer_norm(xs[i % NBUF], (hidden,), w, b, eps),
            "fused_add_rms_norm": lambda i: F.rms_norm(xs[i % NBUF] + rs[i % NBUF], (hidden,), w, eps),
            "fused_add_layer_norm": lambda i: F.layer_norm(xs[i % NBUF] + rs[i % NBUF], (hidden,), w, b, eps),
        }
        # validate before timing
        for op, cs in calls.items():
            status, err = cs[0]()
            if status != 0:
                print(f"FAIL {op} {rows}x{hidden}: status {status}: {err}")
                return 1
            want = torch_fns[op](0).float()
            got = outs[0].float()
            rel = ((got - want).norm() / want.norm()).item()
            if not rel < 1e-2:
                print(f"FAIL {op} {rows}x{hidden}: rel error {rel:.3e} vs PyTorch")
                return 1

        src = xs
        dsts = outs
        t_copy = time_calls(lambda i: dsts[i % NBUF].copy_(src[i % NBUF]), a.reps)
        copy_tbs = 2 * n * 2 / t_copy / 1e9
        for op in calls:
            nbytes = (4 if op.startswith("fused") else 2) * n * 2
            cs = calls[op]
            t_ours = [time_calls(lambda i: cs[i % NBUF](), a.reps) for _ in range(2)]
            t_torch = time_calls(torch_fns[op], a.reps)
            ours = min(t_ours)
            rows_out.append((op, f"{rows}x{hidden}", ours * 1e3, nbytes / ours / 1e9, copy_tbs,
                             nbytes / ours / 1e9 / copy_tbs, t_torch / ours, nbytes / t_torch / 1e9,
                             abs(t_ours[0] - t_ours[1]) / ours))
        del xs, rs, outs, routs, calls
        torch.cuda.empty_cache()

    print("\n| op (bf16) | shape | ours us | ours TB/s | copy TB/s | ours/copy | speedup vs torch | torch TB/s | spread |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in sorted(rows_out, key=lambda r: (r[0], r[1])):
        print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.3f} | {r[6]:.2f}x | {r[7]:.2f} "
              f"| {100 * r[8]:.1f}% |")
    print("\ntorch for fused_* is eager x + residual then the norm (two kernels).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
