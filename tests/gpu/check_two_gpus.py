#!/usr/bin/env python3
"""check_two_gpus.py: one package loaded for each of two GPUs in one process, each with the
build its arch gets (kh_load_options.device_type / device_id), and an rms_norm call on each
device's own tensors and stream checked against a float64 reference.

    python3 tests/gpu/check_two_gpus.py --hub file:///... --cache DIR

Runs where two CUDA GPUs and PyTorch are; prints SKIP and exits 77 elsewhere (tests/gpu/run.sh
runs it after check_through_kh.py; the H200 machine of 2026-12 has one GPU, so there it skips).
The binding (python/kh) has no device argument yet: the options struct here is kh.h's,
fields appended after `lockfile`, passed to kh_load_kernel through the binding's library.
"""
import argparse
import ctypes
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not installed")
    sys.exit(77)

import kh  # noqa: E402
from kh import _abi  # noqa: E402

kDLCUDA = 2
SPEC = "kernels-community/rms-norm@1"


class LoadOptionsWithDevice(ctypes.Structure):
    """kh_load_options as kh.h has it now: the binding's fields, then device_type, device_id."""
    _fields_ = list(_abi.KhLoadOptions._fields_) + [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


def load_for_device(hub, cache, device):
    lib = kh._library()  # pylint: disable=protected-access
    opts = LoadOptionsWithDevice()
    opts.struct_size = ctypes.sizeof(LoadOptionsWithDevice)
    opts.hub = hub.encode()
    opts.cache_dir = cache.encode()
    opts.device_type = kDLCUDA
    opts.device_id = device
    handle = ctypes.c_void_p()
    status = lib.kh_load_kernel(SPEC.encode(), ctypes.cast(ctypes.pointer(opts), ctypes.POINTER(_abi.KhLoadOptions)),
                                ctypes.byref(handle))
    if status != kh.KH_OK:
        raise kh.Error(status, lib.kh_last_error().decode())
    return kh.Kernel(handle.value)


def expected_arch(major, minor):
    """The arch of the build kh's matrix gives a compute capability (docs/abi.md's ranking)."""
    if (major, minor) == (9, 0):
        return "sm90a"
    if major == 8:
        return "sm80"
    if major == 10:
        return "sm100f"
    if major == 12:
        return "sm120f"
    return None  # through some build's PTX: any GPU build will do


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--hub", required=True)
    ap.add_argument("--cache", required=True)
    args = ap.parse_args()
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        print(f"SKIP: {torch.cuda.device_count() if torch.cuda.is_available() else 0} CUDA GPU(s); "
              "this check needs two")
        return 77
    failures = 0
    kernels = []
    for device in (0, 1):
        major, minor = torch.cuda.get_device_capability(device)
        name = torch.cuda.get_device_name(device)
        k = load_for_device(args.hub, args.cache, device)
        kernels.append(k)
        want = expected_arch(major, minor)
        ok_variant = k.variant.startswith("cuda") and (want is None or f"-{want}-" in k.variant)
        # The call: this device's tensors on this device's current stream.
        with torch.cuda.device(device):
            x = torch.randn(64, 4096, device=f"cuda:{device}", dtype=torch.bfloat16)
            w = torch.randn(4096, device=f"cuda:{device}", dtype=torch.bfloat16)
            out = torch.empty_like(x)
            k.op("rms_norm")(out, x, w, 1e-6, stream=torch.cuda.current_stream(device).cuda_stream)
            torch.cuda.synchronize(device)
            xd = x.double()
            ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
            err = (out.double() - ref).abs().max().item()
        tol = 2.0 ** -7 * max(1.0, ref.abs().max().item())  # bf16 output rounding
        ok = ok_variant and err <= tol
        failures += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FAIL'} cuda:{device} {name} ({major}.{minor}): {k.variant}"
              f"{'' if ok_variant else f' (expected the {want} build)'}; rms_norm bf16 max err {err:.3g} (tol {tol:.3g})")
    same_arch = torch.cuda.get_device_capability(0) == torch.cuda.get_device_capability(1)
    if not same_arch and kernels[0].path == kernels[1].path:
        print("FAIL: two GPUs of different archs got the same build")
        failures += 1
    for k in kernels:
        k.close()
    print(f"two GPUs: {'ok' if failures == 0 else f'{failures} failure(s)'}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
