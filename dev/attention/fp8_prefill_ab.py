"""fp8_prefill_ab.py: the FP8 prefill (attention_varlen_fwd_fp8 with e4m3 q, k and v) of one or more
CUDA attention libraries on the same inputs in one process: b x s = 16k tokens, 2048 / d heads, at
d 128 and 256 (s 8k, full and causal), TFLOP/s of each, and each library's output against the
first's. For A/B builds of one tree (a probe macro in CMAKE_CUDA_FLAGS, or two trees); on the GPU
machine, from the repo root, with KH_LIBRARY set (run_fp8_probe.sh shows how):
  python3 dev/attention/fp8_prefill_ab.py LIB...   (each LIB in a folder naming it)
KH_AB_SHAPES: other shapes, "D:S:GROUP:f|c[:SOFTCAP] ..." (head dim, sequence length, heads_q /
heads_kv, full or causal, and a soft-cap: the kernel's general mode; default "128:8192:1:f 128:8192:1:c
256:8192:1:f 256:8192:1:c"): b x s = 16k tokens and 2048 / d q heads each.
"""
import os
import sys

import ab_libs
import torch  # noqa: E402 - after ab_libs' paths
import gpu_bench as gb  # noqa: E402

names, ops = ab_libs.ops_of(sys.argv[1:], "attention_varlen_fwd_fp8")


def kernel_split(call, reps=5):
    """The GPU time of each kernel a call launches (the pre-pass's and the prefill's), median-free
    means over `reps` calls from the profiler's trace: "name us, ...". """
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            call()
        torch.cuda.synchronize()
    times = {}
    for e in prof.events():
        if e.device_type.name == "CUDA":
            key = "prepass" if "vt_" in e.name else "prefill" if "attention_fwd" in e.name else e.name[:20]
            times[key] = times.get(key, 0.0) + e.device_time / reps
    return ", ".join(f"{k} {v:.1f} us" for k, v in sorted(times.items()))
print(torch.cuda.get_device_name())
gen = torch.Generator(device="cuda")
SHAPES = os.environ.get("KH_AB_SHAPES", "128:8192:1:f 128:8192:1:c 256:8192:1:f 256:8192:1:c").split()
for shape in SHAPES:
    d, s, group, kind, *cap = shape.split(":")
    d, s, group, causal = int(d), int(s), int(group), kind == "c"
    softcap = float(cap[0]) if cap else 0.0
    b, h = 16384 // s, 2048 // d
    hkv = h // group
    gen.manual_seed(d)
    # e4m3 bytes of N(0, 1) values (no NaN bytes), unit descales.
    u8 = [torch.randn(b * s, hh, d, device="cuda", generator=gen).to(torch.float8_e4m3fn).view(torch.uint8)
          for hh in (h, hkv, hkv)]
    one = torch.ones(1, device="cuda")
    cu = torch.arange(0, b + 1, device="cuda", dtype=torch.int32) * s
    flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
    line = f"d{d} s{s // 1024}k g{group} {'causal' if causal else 'full'}{f' cap{softcap:g}' if softcap else ''}:"
    ref = None
    for name, op in zip(names, ops):
        out = torch.empty(b * s, h, d, device="cuda", dtype=torch.bfloat16)
        args = [out, None, u8[0], u8[1], u8[2], one, one, one, cu, cu, s, s, d ** -0.5, causal, -1, softcap]
        variants = [(name, args)]
        try:  # a library whose op takes a workspace (V transposed by a pre-pass): timed with it too
            size = op.workspace_size(*args, None)
            if size > 0:  # 0: the library does not use one for this shape
                variants.append((name + "+ws", args + [torch.empty(size, device="cuda", dtype=torch.uint8)]))
        except Exception:  # noqa: BLE001 - an older schema: no workspace argument
            pass
        for label, a in variants:
            call = op.bind(*a)
            call()
            torch.cuda.synchronize()
            err = 0.0 if ref is None else gb.rel_error(out, ref)
            ref = out.clone() if ref is None else ref
            t = gb.Timing([call], 10)
            line += f"  {label} {t.ms:.3f} ms {flops / t.ms / 1e9:.0f} TF/s (vs first {err:.1e})"
            if label.endswith("+ws"):
                try:
                    line += " [" + kernel_split(call) + "]"
                except Exception as e:  # noqa: BLE001 - the split is extra: keep the table
                    line += f" [no split: {type(e).__name__}: {e}]"
    print(line, flush=True)
