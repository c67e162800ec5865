#!/usr/bin/env python3
"""bench_python_call.py: the host time of one Python call of a kh op, against the baselines the
issue names (issue 41), measured in the same run. Prints a table of medians; nothing is asserted.

  python3 bench_python_call.py --hub URL --root ROOT.json --cache DIR [--out DIR] [--no-gpu]

CPU (NumPy, always): rms_norm with 4 arguments on a float32 (4, 64) array, unbound (op(...)) and
bound (op.bind(...)()), through the compiled extension and through the ctypes fallback (a child
process with KH_CALL_PATH=ctypes), against np.multiply(a, b, out=c) on the same shape.
GPU (where PyTorch has a CUDA device): rms_norm (4 arguments, bf16) and attention_decode_paged
(11 arguments: bf16, GQA 32/8, head dim 128, one token over 4 blocks of 16 keys) unbound, bound,
through kh.torch (torch.ops.<ns>.<op>, the mutating op and its functional form), against
F.rms_norm and F.scaled_dot_product_attention on the decode shapes (1 query, 64 keys). GPU work
per call is kept below the host time, and each sample of 200 calls is timed before the
synchronisation that ends it, so the numbers are host time, not GPU time.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import kh


def per_call_us(fn, calls=200, samples=25, sync=None):
    """Median over samples of the host time of one call, in microseconds."""
    for _ in range(calls):  # warm-up
        fn()
    if sync:
        sync()
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
        if sync:
            sync()
    return statistics.median(times)


# CPU builds to try where the default selection picks a GPU build (the hub's CPU variant keys).
CPU_VARIANTS = ("cpu-x86_64_v3-abi1-x86_64-linux", "cpu-x86_64-abi1-x86_64-linux")


def load_cpu(args, spec):
    """spec's CPU build: the default selection on a machine without a GPU, else a CPU variant."""
    opts = {"hub": args.hub, "cache_dir": args.cache, "trusted_root": args.root}
    k = kh.load_kernel(spec, **opts)
    for variant in CPU_VARIANTS:
        if k.device_type == 1:
            break
        try:
            k = kh.load_kernel(spec, variant=variant, **opts)
        except kh.Error:
            pass
    return k


def measure(rows, name, fn, **kwargs):
    """rows[name] = per_call_us(fn); NaN (and the error printed) where the call fails."""
    try:
        rows[name] = per_call_us(fn, **kwargs)
    except Exception as e:  # pylint: disable=broad-except
        print(f"({name}: {type(e).__name__}: {e})", file=sys.stderr)
        rows[name] = float("nan")


def cpu_rows(args):
    import numpy as np  # pylint: disable=import-outside-toplevel
    k = load_cpu(args, "kernels-community/rms-norm@1")
    op = k.op("rms_norm")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    w = np.ones(64, np.float32)
    out = np.empty_like(x)
    a, c = np.empty_like(x), np.empty_like(x)
    bound = op.bind(out, x, w, 1e-6)
    rows = {
        "unbound": per_call_us(lambda: op(out, x, w, 1e-6), calls=2000),
        "bound": per_call_us(bound, calls=2000),
        "ufunc": per_call_us(lambda: np.multiply(x, a, out=c), calls=2000),
    }
    return kh.CALL_PATH, rows


def gpu_rows(args):
    import torch  # pylint: disable=import-outside-toplevel
    import torch.nn.functional as F  # pylint: disable=import-outside-toplevel
    import kh.torch  # pylint: disable=import-outside-toplevel,redefined-outer-name
    opts = {"hub": args.hub, "cache_dir": args.cache, "trusted_root": args.root}
    dev = torch.device("cuda", 0)
    sync = torch.cuda.synchronize
    rows = {"call path": kh.CALL_PATH}
    norm = kh.torch.load("kernels-community/rms-norm@1", device=dev, **opts)
    attn = kh.torch.load("kernels-community/attention@1", device=dev, **opts)
    rows["variants"] = f"{norm.kernel.variant}, {attn.kernel.variant}"
    x = torch.randn(4, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.ones(4096, device=dev, dtype=torch.bfloat16)
    out = torch.empty_like(x)
    op = norm.kernel.op("rms_norm")
    b = op.bind(out, x, w, 1e-6)
    measure(rows, "rms_norm unbound", lambda: op(out, x, w, 1e-6), sync=sync)
    measure(rows, "rms_norm bound", b, sync=sync)
    measure(rows, "rms_norm torch.ops", lambda: norm.ops.rms_norm(out, x, w, 1e-6), sync=sync)
    measure(rows, "rms_norm functional", lambda: norm.rms_norm(x, w, 1e-6), sync=sync)
    measure(rows, "F.rms_norm", lambda: F.rms_norm(x, (4096,), w, 1e-6), sync=sync)

    batch, heads_q, heads_kv, head_dim, block, nblocks = 1, 32, 8, 128, 16, 4
    q = torch.randn(batch, 1, heads_q, head_dim, device=dev, dtype=torch.bfloat16)
    kc = torch.randn(nblocks, block, heads_kv, head_dim, device=dev, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    table = torch.arange(nblocks, device=dev, dtype=torch.int32).reshape(1, nblocks)
    lens = torch.full((batch,), nblocks * block, device=dev, dtype=torch.int32)
    o = torch.empty_like(q)
    lse = torch.empty(batch, heads_q, 1, device=dev, dtype=torch.float32)
    ws = torch.empty(1 << 20, device=dev, dtype=torch.float32)
    dec = attn.kernel.op("attention_decode_paged")
    call = (o, lse, q, kc, vc, table, lens, ws, head_dim ** -0.5, -1, 0.0)
    bd = dec.bind(*call)
    measure(rows, "decode unbound", lambda: dec(*call), sync=sync)
    measure(rows, "decode bound", bd, sync=sync)
    measure(rows, "decode torch.ops", lambda: attn.ops.attention_decode_paged(*call), sync=sync)
    measure(rows, "decode functional",
        lambda: attn.attention_decode_paged(q, kc, vc, table, lens, head_dim ** -0.5), sync=sync)
    qs = q.transpose(1, 2)  # (batch, heads, 1, d)
    ks = kc.reshape(1, nblocks * block, heads_kv, head_dim).transpose(1, 2).contiguous()
    vs = vc.reshape(1, nblocks * block, heads_kv, head_dim).transpose(1, 2).contiguous()
    measure(rows, "SDPA", lambda: F.scaled_dot_product_attention(qs, ks, vs, enable_gqa=True), sync=sync)
    rows["device"] = torch.cuda.get_device_name(0)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--hub", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--cache", required=True)
    p.add_argument("--out")
    p.add_argument("--no-gpu", action="store_true")
    p.add_argument("--json-rows", choices=("cpu", "gpu"), help=argparse.SUPPRESS)  # the ctypes child's mode
    args = p.parse_args()
    if args.json_rows:
        print(json.dumps(cpu_rows(args)[1] if args.json_rows == "cpu" else gpu_rows(args)))
        return 0

    def ctypes_child(which):
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--hub", args.hub, "--root", args.root,
                                "--cache", args.cache, "--json-rows", which],
                               env={**os.environ, "KH_CALL_PATH": "ctypes"}, capture_output=True, text=True, check=False)
        if child.returncode != 0:
            print(f"(the ctypes child failed: {child.stderr[-500:]})")
            return {}
        return json.loads(child.stdout.strip().splitlines()[-1])

    path, cpu = cpu_rows(args)
    ctypes_rows = ctypes_child("cpu")
    ufunc = cpu["ufunc"]
    print(f"\nHost time per call, median of 25 samples (CPU: {os.uname().machine}, "
          f"Python {sys.version.split()[0]}; kh.CALL_PATH {path})")
    print(f"{'call':58s} {'us':>8s} {'x ufunc':>8s}")
    table = [("rms_norm, NumPy (4, 64) f32, 4 args: unbound op(...), extension", cpu["unbound"]),
             ("rms_norm, NumPy: bound op.bind(...)(), extension", cpu["bound"])]
    if ctypes_rows:
        table += [("rms_norm, NumPy: unbound, ctypes fallback", ctypes_rows["unbound"]),
                  ("rms_norm, NumPy: bound, ctypes fallback", ctypes_rows["bound"])]
    table.append(("np.multiply(a, b, out=c), (4, 64) f32 (the baseline)", ufunc))
    for name, us in table:
        print(f"{name:58s} {us:8.2f} {us / ufunc:8.2f}")
    report = {"cpu": {"call_path": path, "extension": cpu, "ctypes": ctypes_rows}}
    if not args.no_gpu:
        try:
            import torch  # pylint: disable=import-outside-toplevel
            has_gpu = torch.cuda.is_available()
        except ImportError:
            has_gpu = False
        if has_gpu:
            g = gpu_rows(args)
            gc = ctypes_child("gpu")
            sdpa, rms = g["SDPA"], g["F.rms_norm"]
            print(f"\nGPU host time per call, median of 25 samples of 200 calls ({g['device']}; {g['variants']})")
            print(f"{'call':40s} {'extension us':>13s} {'x base':>7s} {'ctypes us':>10s} {'x base':>7s}")
            for name, base in (("rms_norm unbound", rms), ("rms_norm bound", rms), ("rms_norm torch.ops", rms),
                               ("rms_norm functional", rms), ("F.rms_norm", rms), ("decode unbound", sdpa),
                               ("decode bound", sdpa), ("decode torch.ops", sdpa), ("decode functional", sdpa),
                               ("SDPA", sdpa)):
                c = gc.get(name)
                print(f"{name:40s} {g[name]:13.2f} {g[name] / base:7.2f} " +
                      (f"{c:10.2f} {c / base:7.2f}" if c is not None and name not in ("F.rms_norm", "SDPA") else ""))
            print("(base: F.rms_norm for the rms_norm rows, SDPA for the decode rows; decode = "
                  "attention_decode_paged, 11 arguments)")
            report["gpu"] = {"extension": g, "ctypes": gc}
        else:
            print("\n(GPU rows skipped: no PyTorch with a CUDA device here)")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "bench_python_call.json"), "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
