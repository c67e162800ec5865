#!/usr/bin/env python3
"""attention_dev_check.py: correctness sweep and speed table for the CUDA attention forward.

Loads a built kernel library (--module LIB) with ctypes and calls it through the kernel
ABI, the way the kh loader does: kh_kernel_negotiate, then the attention_fwd op's invoke
with DLTensors and the current PyTorch stream.
Every case poisons out/lse with NaN, runs, and compares with a float64 reference computed
from the same (rounded) inputs. The kernel's max error must be <= 2x the max error of
PyTorch's SDPA at the same precision against that reference, plus a small absolute eps.
Then (--bench) prints a speed table against SDPA's flash backend (CUDA events, medians).
Needs PyTorch with CUDA. Run by run_attention_dev.sh on the GPU machine.
"""
import argparse
import ctypes
import math
import os
import statistics
import sys

import torch
import torch.nn.functional as F

# The float64 reference, SDPA at the same precision and the inputs: the GPU check's own
# (tests/gpu/attention/attention_reference.py), so that both hold a library to one rule.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "gpu", "attention"))
from attention_reference import make_inputs, reference, sdpa_same_precision  # noqa: E402

KH_VALUE_NONE, KH_VALUE_TENSOR, KH_VALUE_INT, KH_VALUE_DOUBLE, KH_VALUE_BOOL = 0, 1, 2, 3, 4


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class KhValueU(ctypes.Union):
    _fields_ = [("tensor", ctypes.POINTER(DLTensor)), ("i", ctypes.c_int64), ("d", ctypes.c_double),
                ("b", ctypes.c_int32), ("s", ctypes.c_char_p)]


class KhValue(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint32), ("reserved", ctypes.c_uint32), ("u", KhValueU)]


class KhCallCtx(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved", ctypes.c_uint32), ("stream", ctypes.c_void_p),
                ("error_buf", ctypes.c_char_p), ("error_buf_size", ctypes.c_size_t)]


INVOKE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(KhValue), ctypes.c_uint32, ctypes.POINTER(KhCallCtx))


class KhOpDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved", ctypes.c_uint32), ("name", ctypes.c_char_p),
                ("schema", ctypes.c_char_p), ("invoke", INVOKE), ("arg_constraints", ctypes.c_void_p)]


class KhModuleDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("abi_version", ctypes.c_uint32), ("name", ctypes.c_char_p),
                ("version", ctypes.c_char_p), ("variant", ctypes.c_char_p), ("device_type", ctypes.c_uint32),
                ("num_ops", ctypes.c_uint32), ("ops", ctypes.POINTER(KhOpDesc))]


class KhNegotiation(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("loader_min_abi", ctypes.c_uint32),
                ("loader_max_abi", ctypes.c_uint32), ("kernel_abi", ctypes.c_uint32),
                ("module", ctypes.POINTER(KhModuleDesc))]


def negotiate(path):
    """(library, negotiation) of a kernel library after kh_kernel_negotiate at ABI 1.x;
    negotiation.module.contents is its module descriptor."""
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    neg = KhNegotiation(ctypes.sizeof(KhNegotiation), 1 << 16, (1 << 16) | 0xFFFF, 0, None)
    rc = lib.kh_kernel_negotiate(ctypes.byref(neg))
    if rc != 0:
        raise RuntimeError(f"kh_kernel_negotiate returned {rc}")
    return lib, neg


DL_TYPES = {torch.bfloat16: (4, 16), torch.float16: (2, 16), torch.float32: (2, 32), torch.int32: (0, 32)}


def dl_tensor(t):
    """A DLTensor borrowing torch tensor t (kept alive by the returned tuple: the DLTensor and
    the shape and stride arrays it points to)."""
    shape = (ctypes.c_int64 * t.dim())(*t.shape)
    strides = (ctypes.c_int64 * t.dim())(*t.stride())
    code, bits = DL_TYPES[t.dtype]
    dl = DLTensor(ctypes.c_void_p(t.data_ptr()), DLDevice(2, t.device.index or 0), t.dim(),
                  DLDataType(code, bits, 1), shape, strides, 0)
    return dl, shape, strides


class ModuleAttention:
    """Calls attention_fwd through the kernel ABI, as the loader would."""

    def __init__(self, path):
        self.lib, neg = negotiate(path)
        mod = neg.module.contents
        print(f"module {mod.name.decode()} {mod.version.decode()} variant {mod.variant.decode()} "
              f"device_type {mod.device_type} abi {neg.kernel_abi >> 16}.{neg.kernel_abi & 0xffff}")
        self.invoke = None
        for i in range(mod.num_ops):
            op = mod.ops[i]
            if op.name.decode() == "attention_fwd":
                print(f"op schema: {op.schema.decode()}")
                self.invoke = op.invoke
        if self.invoke is None:
            raise RuntimeError("module has no attention_fwd op")
        self.err = ctypes.create_string_buffer(1024)

    def __call__(self, out, lse, q, k, v, scale, causal, stream=None):
        keep = [dl_tensor(t) for t in (out, q, k, v)]
        lse_dl = dl_tensor(lse) if lse is not None else None
        args = (KhValue * 7)()

        def tensor(i, d):
            args[i].kind = KH_VALUE_TENSOR
            args[i].u.tensor = ctypes.pointer(d[0])

        tensor(0, keep[0])
        if lse_dl is not None:
            tensor(1, lse_dl)
        else:
            args[1].kind = KH_VALUE_NONE
        tensor(2, keep[1]); tensor(3, keep[2]); tensor(4, keep[3])
        args[5].kind = KH_VALUE_DOUBLE; args[5].u.d = scale
        args[6].kind = KH_VALUE_BOOL; args[6].u.b = 1 if causal else 0
        s = torch.cuda.current_stream().cuda_stream if stream is None else stream
        ctx = KhCallCtx(ctypes.sizeof(KhCallCtx), 0, ctypes.c_void_p(s),
                        ctypes.cast(self.err, ctypes.c_char_p), len(self.err))
        rc = self.invoke(args, 7, ctypes.byref(ctx))
        if rc != 0:
            return rc, self.err.value.decode(errors="replace")
        return 0, ""


def check_case(attn, b, sq, sk, hq, hkv, d, dtype, causal, packed, gen, rows):
    q, k, v, out = make_inputs(b, sq, sk, hq, hkv, d, dtype, packed, gen)
    scale = 1.0 / math.sqrt(d)
    out.fill_(float("nan"))
    lse = torch.full((b, hq, sq), float("nan"), device="cuda", dtype=torch.float32)
    rc, msg = attn(out, lse, q, k, v, scale, causal)
    torch.cuda.synchronize()
    name = (f"d={d:<3} {str(dtype)[6:]:<8} b={b} sq={sq:<4} sk={sk:<4} hq={hq} hkv={hkv} "
            f"{'causal' if causal else 'full  '} {'packed' if packed else ''}")
    if rc != 0:
        rows.append((name, "REJECTED", msg))
        return False
    ref_o, ref_lse = reference(q, k, v, scale, causal)
    torch_o = sdpa_same_precision(q, k, v, scale, causal)
    o = out.double()
    nan_out = bool(torch.isnan(o).any())
    err = (o - ref_o).abs().max().item() if o.numel() else 0.0
    torch_err = (torch_o - ref_o).abs().max().item() if o.numel() else 0.0
    tol = 2.0 * torch_err + 1e-5
    inf_ref = torch.isinf(ref_lse)
    lse_nan = bool(torch.isnan(lse).any())
    lse_inf_ok = bool((torch.isinf(lse) == inf_ref).all()) and bool((lse[inf_ref] < 0).all())
    finite = ~inf_ref
    lse_err = (lse.double()[finite] - ref_lse[finite]).abs().max().item() if finite.any() else 0.0
    lse_tol = 1e-3
    ok = (not nan_out) and err <= tol and (not lse_nan) and lse_inf_ok and lse_err <= lse_tol
    rows.append((name, "ok" if ok else "FAIL",
                 f"err {err:.2e} tol {tol:.2e} (sdpa {torch_err:.2e}) lse_err {lse_err:.1e}"
                 f"{' NaN-out' if nan_out else ''}{' NaN-lse' if lse_nan else ''}"
                 f"{'' if lse_inf_ok else ' lse-inf-mismatch'}"))
    return ok


def correctness(attn, head_dims, dtypes, quick=False):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    rows = []
    all_ok = True
    for d in head_dims:
        for dtype in dtypes:
            for causal in (False, True):
                if quick:  # a few small shapes that reach every masking and bounds path
                    for (b, sq, sk, hq, hkv, packed) in [(1, 77, 200, 4, 2, False), (1, 200, 77, 2, 1, False),
                                                         (1, 130, 130, 2, 2, True)]:
                        all_ok &= check_case(attn, b, sq, sk, hq, hkv, d, dtype, causal, packed, gen, rows)
                    continue
                cases = [(2, s, s, 4, 4, False) for s in (1, 17, 128, 300, 1024)]
                cases += [(2, 17, 300, 4, 4, False), (2, 128, 1024, 4, 4, False),   # sq < sk
                          (2, 300, 17, 4, 4, False), (2, 1024, 128, 4, 4, False),   # sq > sk
                          (2, 300, 300, 8, 2, False),                              # GQA
                          (2, 257, 257, 8, 1, False),                              # MQA
                          (2, 300, 300, 4, 4, True), (1, 200, 200, 8, 2, True)]     # packed qkv
                for (b, sq, sk, hq, hkv, packed) in cases:
                    all_ok &= check_case(attn, b, sq, sk, hq, hkv, d, dtype, causal, packed, gen, rows)
    width = max((len(r[0]) for r in rows), default=0)
    for name, status, info in rows:
        print(f"{name:<{width}}  {status:<8} {info}")
    return all_ok, rows


def median_ms(fn, iters=20, warmup=5):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def bench(attn, configs, label):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    print(f"\nspeed of {label} (median of 20, CUDA events; TFLOP/s = 4*b*h*sq*sk*d [/2 causal] / time)")
    print(f"{'config':<38} {'kh ms':>7} {'kh TF/s':>8} {'flash TF/s':>10} {'kh/flash':>8} {'cudnn TF/s':>10}")
    for (b, s, h, d, dtype, causal) in configs:
        gen = torch.Generator(device="cuda"); gen.manual_seed(7)
        q, k, v, out = make_inputs(b, s, s, h, h, d, dtype, False, gen)
        scale = 1.0 / math.sqrt(d)
        lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
        rc, msg = attn(out, lse, q, k, v, scale, causal)  # validate before timing
        if rc != 0:
            print(f"bench config rejected: {msg}")
            continue
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale).transpose(1, 2)
            err = (out.float() - ref.float()).abs().max().item()
            t_kh = median_ms(lambda: attn(out, lse, q, k, v, scale, causal))
            t_fl = median_ms(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale))
        try:
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                t_cu = median_ms(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale))
        except RuntimeError:
            t_cu = float("nan")
        flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
        tf = lambda ms: flops / ms / 1e9
        name = f"b={b} s={s} h={h} d={d} {str(dtype)[6:]} {'causal' if causal else 'full'}"
        print(f"{name:<38} {t_kh:7.3f} {tf(t_kh):8.1f} {tf(t_fl):10.1f} {t_fl / t_kh:8.2f} {tf(t_cu):10.1f}"
              f"   max|kh-flash| {err:.1e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True, help="kernel library exporting kh_kernel_negotiate")
    ap.add_argument("--head-dims", default="64,128,256")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--quick", action="store_true", help="a few small shapes (for compute-sanitizer runs)")
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--label", default="", help="name of the library in the speed table")
    ap.add_argument("--expect-reject", default="", help="head dims the library must reject (e.g. 96)")
    args = ap.parse_args()
    attn = ModuleAttention(args.module)
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    head_dims = [int(x) for x in args.head_dims.split(",") if x]
    dtypes = [{"bf16": torch.bfloat16, "fp16": torch.float16}[x] for x in args.dtypes.split(",") if x]
    ok, _ = correctness(attn, head_dims, dtypes, quick=args.quick)
    for d in [int(x) for x in args.expect_reject.split(",") if x]:
        gen = torch.Generator(device="cuda"); gen.manual_seed(1)
        q, k, v, out = make_inputs(1, 16, 16, 2, 2, d, torch.bfloat16, False, gen)
        rc, msg = attn(out, None, q, k, v, 1.0, False)
        print(f"d={d}: {'rejected' if rc != 0 else 'ACCEPTED (expected a rejection)'} rc={rc} {msg}")
        ok &= rc != 0
    print("\nCORRECTNESS:", "PASS" if ok else "FAIL")
    if args.bench:
        label = args.label or args.module
        bench(attn, [(4, 4096, 16, 128, torch.bfloat16, False), (4, 4096, 16, 128, torch.bfloat16, True),
                     (16, 1024, 16, 128, torch.bfloat16, False), (16, 1024, 16, 128, torch.bfloat16, True),
                     (4, 4096, 16, 64, torch.bfloat16, False), (4, 4096, 16, 64, torch.bfloat16, True),
                     (4, 4096, 16, 128, torch.float16, True)], label)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
