"""attention_prefill_bench.py: gpu_bench.py's rows for the prefill ops of kernels-community/
attention 1.1 (run with `gpu_bench.py --only prefill`, or as part of the full run): kh's sm90a
and sm80 builds (through kh.load_kernel, called with Op.bind) against PyTorch in the same
process, bf16 on one GPU; every row is validated before it is timed.

  head dims  attention_fwd at d = 64, 80, 96, 128, 192, 256 and q/k 192 with v 128, b*s = 16k
             tokens, s in {4k, 8k}, 16 heads, causal and not, against the fastest SDPA backend
             that takes the shape (flash, cuDNN, memory-efficient, each timed). Target (sm90a,
             d 80, 96, 192, 192/128, s >= 4k): >= 1.0x the best SDPA.
  varlen     attention_varlen_fwd on mixed lengths of 16k tokens, d 128 (causal and not) and d 192,
             256 (causal: these buckets' own causal list), 16 heads: [8k, 1k, 5k, 2k] against
             attention_fwd on 4 x 4k, and [2k, 1k, 4k, 1k, 3k, 1k, 2k, 2k] against 8 x 2k (the same
             total tokens in equal lengths); TFLOP/s count real
             tokens only (4 h d sum(len^2), halved for causal). Target: >= 0.95x attention_fwd's
             TFLOP/s. Also shown: against one attention_fwd call per sequence (what an engine
             does without the varlen op), as a ratio of times. (The 1.1.0 path, one CTA per
             tile, is a switch of the development build only: dev/attention/varlen_probe.py.)
"""
import math

import torch

HEAD_DIMS = ((64, 64), (80, 80), (96, 96), (128, 128), (192, 192), (256, 256), (192, 128))
TARGET_DIMS = ((80, 80), (96, 96), (192, 192), (192, 128))
PREFILL_SEQS = (4096, 8192)
TOKENS = 16384
HEADS = 16
VARLEN_MIXES = (((8192, 1024, 5120, 2048), 4096), ((2048, 1024, 4096, 1024, 3072, 1024, 2048, 2048), 2048))
# (head dim, causal settings) of the varlen rows: d 128 both ways; the wide buckets, whose causal
# calls take a list of their own (pairs of query tiles, kernels-src/attention/cuda/NOTES.md), causal.
VARLEN_DIMS = ((128, (False, True)), (192, (True,)), (256, (True,)))


def sdpa_backends():
    from torch.nn.attention import SDPBackend
    return (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION))


def checked_timing(bound, out, ref, what, reps, failures, timing, rel_error):
    """Runs `bound` once with `out` poisoned, checks out against ref (rel error < 1e-2; a
    failure is recorded under `what`), then times it: (Timing, error), or None."""
    out.fill_(float("nan"))
    bound()
    err = ref(out) if callable(ref) else rel_error(out, ref)
    if not err < 1e-2:
        failures.append(f"{what}: rel error {err:.2e} against the reference")
        return None
    return timing([bound], reps), err


def bench_head_dims(kernels, reps, failures, timing, rel_error, sdpa_call):
    """timing, rel_error, sdpa_call: gpu_bench.py's (Timing, rel_error, sdpa_call)."""
    rows = []
    gen = torch.Generator(device="cuda")
    for (d, dv) in HEAD_DIMS:
        for s in PREFILL_SEQS:
            for causal in (False, True):
                b = TOKENS // s
                gen.manual_seed(d * 7 + dv + s + causal)
                q = torch.randn(b, s, HEADS, d, device="cuda", dtype=torch.bfloat16, generator=gen)
                k = torch.randn(b, s, HEADS, d, device="cuda", dtype=torch.bfloat16, generator=gen)
                v = torch.randn(b, s, HEADS, dv, device="cuda", dtype=torch.bfloat16, generator=gen)
                out = torch.empty(b, s, HEADS, dv, device="cuda", dtype=torch.bfloat16)
                scale = 1.0 / math.sqrt(d)
                flops = 2.0 * b * HEADS * s * s * (d + dv) / (2 if causal else 1)
                name = f"b{b} s{s // 1024}k h{HEADS} d{d}" + (f"/{dv}" if dv != d else "") + \
                    (" causal" if causal else " full")
                base, ref = {}, None
                for label, backend in sdpa_backends():
                    call = sdpa_call(backend, q, k, v, scale, causal)
                    try:
                        o = call().transpose(1, 2)
                    except RuntimeError as e:  # a backend that refuses the shape is reported, not fatal
                        print(f"{name}: SDPA {label} refused: {str(e).splitlines()[0][:100]}")
                        continue
                    if ref is None:
                        ref = o
                    base[label] = timing([call], reps).ms
                if ref is None:
                    failures.append(f"prefill {name}: no SDPA backend took the shape")
                    continue
                best_label = min(base, key=base.get)
                for target in ("sm90a", "sm80"):
                    bound = kernels[target].op("attention_fwd").bind(out, None, q, k, v, scale, causal)
                    checked = checked_timing(bound, out, ref, f"prefill {target} {name} (against SDPA)", reps, failures,
                                             timing, rel_error)
                    if checked is None:
                        continue
                    t, err = checked
                    row = dict(kind="prefill", build=target, name=name, b=b, s=s, h=HEADS, d=d, dv=dv, causal=causal,
                               ms=t.ms, spread=t.spread, tflops=flops / t.ms / 1e9, rel_err=err, best=best_label,
                               best_ms=base[best_label], best_tflops=flops / base[best_label] / 1e9,
                               vs_best=base[best_label] / t.ms)
                    for label, ms in base.items():
                        row[f"{label}_tflops"] = flops / ms / 1e9
                    if target == "sm90a" and (d, dv) in TARGET_DIMS:
                        row["target"] = ">=1.0x best SDPA"
                        row["met"] = row["vs_best"] >= 1.0
                    rows.append(row)
                del q, k, v, out, ref
                torch.cuda.empty_cache()
    return rows


def bench_varlen(kernels, reps, failures, timing, rel_error):
    """timing, rel_error: gpu_bench.py's (Timing, rel_error)."""
    rows = []
    gen = torch.Generator(device="cuda")
    cases = [(d, lens, equal, causal) for d, modes in VARLEN_DIMS for lens, equal in VARLEN_MIXES for causal in modes]
    for d, lens, equal, causal in cases:
        scale = 1.0 / math.sqrt(d)
        gen.manual_seed(sum(lens) + len(lens) + causal)
        total = sum(lens)
        q = torch.randn(total, HEADS, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        k = torch.randn(total, HEADS, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        v = torch.randn(total, HEADS, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        out = torch.empty_like(q)
        cu = torch.tensor([0] + [sum(lens[:i + 1]) for i in range(len(lens))], dtype=torch.int32, device="cuda")
        div = 2 if causal else 1
        flops = sum(4.0 * HEADS * n * n * d for n in lens) / div
        b_eq = total // equal
        flops_eq = 4.0 * b_eq * HEADS * equal * equal * d / div
        name = "lens " + "/".join(f"{n // 1024}k" for n in lens) + f" h{HEADS} d{d}" + \
            (" causal" if causal else " full")
        # Equal lengths: the same buffers as (b_eq, equal, h, d).
        q4, k4, v4 = (t.view(b_eq, equal, HEADS, d) for t in (q, k, v))
        out4 = torch.empty_like(q4)
        for target in ("sm90a", "sm80"):
            fwd = kernels[target].op("attention_fwd")
            var = kernels[target].op("attention_varlen_fwd").bind(out, None, q, k, v, cu, cu, max(lens), max(lens),
                                                                  scale, causal, -1, 0.0)
            starts = [sum(lens[:i]) for i in range(len(lens))]

            def per_sequence(o, fwd=fwd, starts=starts):
                """The worst rel error of o against attention_fwd on each sequence on its own."""
                worst = 0.0
                for s0, n in zip(starts, lens):
                    o1 = torch.empty(1, n, HEADS, d, device="cuda", dtype=torch.bfloat16)
                    fwd(o1, None, q[s0:s0 + n].unsqueeze(0), k[s0:s0 + n].unsqueeze(0),
                        v[s0:s0 + n].unsqueeze(0), scale, causal)
                    worst = max(worst, rel_error(o[s0:s0 + n], o1[0]))
                return worst
            checked = checked_timing(var, out, per_sequence, f"varlen {target} {name} (against attention_fwd per "
                                     "sequence)", reps, failures, timing, rel_error)
            if checked is None:
                continue
            t_var, worst = checked
            t_eq = timing([fwd.bind(out4, None, q4, k4, v4, scale, causal)], reps)
            # One attention_fwd call per sequence (the engine's way without varlen).
            singles = [fwd.bind(out[s0:s0 + n].unsqueeze(0), None, q[s0:s0 + n].unsqueeze(0),
                                k[s0:s0 + n].unsqueeze(0), v[s0:s0 + n].unsqueeze(0), scale, causal)
                       for s0, n in zip(starts, lens)]
            t_sep = timing([lambda: [c() for c in singles]], reps)
            row = dict(kind="varlen", build=target, name=name, lens=list(lens), equal=equal, causal=causal,
                       ms=t_var.ms, spread=t_var.spread, tflops=flops / t_var.ms / 1e9,
                       equal_ms=t_eq.ms, equal_tflops=flops_eq / t_eq.ms / 1e9, separate_ms=t_sep.ms,
                       rel_err=worst)
            row["vs_equal"] = row["tflops"] / row["equal_tflops"]
            row["vs_separate"] = t_sep.ms / t_var.ms
            row["target"] = ">=0.95x attention_fwd TF/s"
            row["met"] = row["vs_equal"] >= 0.95
            rows.append(row)
        del q, k, v, out, out4
        torch.cuda.empty_cache()
    return rows


def print_rows(head_rows, varlen_rows):
    if head_rows:
        print("\n| prefill head dims (bf16) | build | ms | TFLOP/s | flash | cuDNN | efficient | best | vs best "
              "| spread | target | met |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in head_rows:
            met = "-" if "met" not in r else ("met" if r["met"] else "MISSED")
            cells = " | ".join(f"{r[k]:.0f}" if k in r else "-" for k in ("flash_tflops", "cudnn_tflops",
                                                                           "efficient_tflops"))
            print(f"| {r['name']} | {r['build']} | {r['ms']:.3f} | {r['tflops']:.0f} | {cells} | {r['best']} "
                  f"| {r['vs_best']:.2f}x | {100 * r['spread']:.1f}% | {r.get('target', '-')} | {met} |")
    if varlen_rows:
        print("\n| varlen prefill (bf16) | build | ms | TFLOP/s | equal lengths TF/s | vs equal | separate calls ms "
              "| vs separate | spread | target | met |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in varlen_rows:
            print(f"| {r['name']} | {r['build']} | {r['ms']:.3f} | {r['tflops']:.0f} | {r['equal_tflops']:.0f} "
                  f"| {r['vs_equal']:.2f}x | {r['separate_ms']:.3f} | {r['vs_separate']:.2f}x | "
                  f"{100 * r['spread']:.1f}% | {r['target']} | {'met' if r['met'] else 'MISSED'} |")
