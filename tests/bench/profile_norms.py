#!/usr/bin/env python3
"""profile_norms.py: one call of each bf16 norm op per shape, through kh, for a profiler.

Run under Nsight Compute to read why a norm kernel stops short of the copy bandwidth
(memory throughput, issue-slot use, what warps wait on), e.g. on the GPU machine after
tests/gpu/run.sh has published the packages to its hub:

  ncu --clock-control none --kernel-name regex:row_norm --section SpeedOfLight \\
      --section Occupancy --section WarpStateStats --section SchedulerStats \\
      python3 tests/bench/profile_norms.py --hub file:///tmp/kh-gpu-run/hub \\
      --cache /tmp/kh-gpu-run/cache

Every op runs once per shape (after one warm-up call that a profiler filter can skip with
--launch-skip), on the build this machine selects. 0 with SKIP where there is no CUDA
device or PyTorch.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not installed")
    sys.exit(0)

import kh  # noqa: E402

ORG = "kernels-community"
SHAPES = ((16384, 8192), (4096, 16384), (32768, 4096))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hub", default=os.environ.get("KH_HUB"), help="hub URL (default $KH_HUB)")
    ap.add_argument("--cache", default=os.environ.get("KH_CACHE"), help="cache folder (default $KH_CACHE)")
    ap.add_argument("--ops", default="rms_norm,layer_norm", help="comma-separated ops (plain ops only)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 0
    pkg_of = {"rms_norm": "rms-norm", "layer_norm": "layer-norm"}
    kernels = {}
    for op in args.ops.split(","):
        if op not in pkg_of:
            ap.error(f"unknown op {op!r}: choose from {', '.join(pkg_of)}")
        pkg = pkg_of[op]
        if pkg not in kernels:
            kernels[pkg] = kh.load_kernel(f"{ORG}/{pkg}@1", hub=args.hub, cache_dir=args.cache)
            print(f"loaded {kernels[pkg].name} {kernels[pkg].variant}")
    gen = torch.Generator(device="cuda").manual_seed(0)
    for rows, hidden in SHAPES:
        x = torch.randn(rows, hidden, device="cuda", dtype=torch.bfloat16, generator=gen) + 0.5
        out = torch.empty_like(x)
        w = torch.randn(hidden, device="cuda", dtype=torch.bfloat16, generator=gen) * 0.5 + 1
        b = torch.randn(hidden, device="cuda", dtype=torch.bfloat16, generator=gen) * 0.1
        for op in args.ops.split(","):
            kop = kernels[pkg_of[op]].op(op)
            call = kop.bind(out, x, w, 1e-6) if op == "rms_norm" else kop.bind(out, x, w, b, 1e-5)
            call()  # warm-up
            call()
            torch.cuda.synchronize()
            print(f"{op} {rows}x{hidden}: called")
    return 0


if __name__ == "__main__":
    sys.exit(main())
