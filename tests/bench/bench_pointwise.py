"""bench_pointwise.py: the activation and rotary rows of gpu_bench.py (bf16; the sm90a build is
judged, the sm80 build, through its compute_80 PTX, is shown beside it). Imported by gpu_bench.py,
which passes its timing (Timing: medians of two rounds of CUDA-event-timed calls queued behind a
GPU sleep) and rel_error; every row validates against a float32 PyTorch computation before it
times.

  activation  silu/gelu/gelu_tanh/fatrelu_and_mul, x (tokens, 2 d) -> out (tokens, d), tokens x d
              in {8192 x 14336, 32768 x 4096}. Bytes: x read once, out written once (3 tokens d
              x 2 B). Baselines, same run: a device copy of x into a buffer of x's shape (read +
              write counted: the copy bandwidth at this size) and the PyTorch eager expression,
              e.g. F.silu(x[..., :d]) * x[..., d:]. Targets (issue 13): >= 0.90x copy, >= 1.5x eager.
  rotary      rotary_embedding, 8192 tokens, 32 query / 8 key heads, head 128 = rotary_dim,
              cache (32768, 128) in bf16 (and one row with an fp32 cache), int64 positions,
              NeoX and GPT-J. Bytes: query and key read and written once, each token's cache row
              and position read once. Baselines: a copy of a (tokens, 40, 128) buffer (read +
              write, so the same bytes as query and key) and a straightforward PyTorch eager
              rotation (gather the cache rows, split, four products, write back: vLLM's
              forward_native). Buffer sets (query, key, positions) rotate so that no call is
              served from L2. Targets: >= 0.85x copy, >= 2x eager.
"""
import math

import torch
import torch.nn.functional as F

ACT_SHAPES = ((8192, 14336), (32768, 4096))  # tokens x d
ACT_OPS = ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul", "fatrelu_and_mul")
ACT_TARGET = (0.90, 1.5)  # (x copy, x eager)
FATRELU_THRESHOLD = 0.1
ROT_TOKENS, ROT_HQ, ROT_HKV, ROT_D, ROT_MAX_POSITION = 8192, 32, 8, 128, 32768
ROT_TARGET = (0.85, 2.0)


def act_eager(op, x, d):
    """PyTorch's eager expression of op on x (two kernels: the activation, then the product)."""
    a, g = x[..., :d], x[..., d:]
    if op == "silu_and_mul":
        return lambda: F.silu(a) * g
    if op == "gelu_and_mul":
        return lambda: F.gelu(a) * g
    if op == "gelu_tanh_and_mul":
        return lambda: F.gelu(a, approximate="tanh") * g
    return lambda: F.threshold(a, FATRELU_THRESHOLD, 0.0) * g


def act_reference(op, x, d):
    """The op in float32 (validation)."""
    a, g = x[..., :d].float(), x[..., d:].float()
    if op == "silu_and_mul":
        return F.silu(a) * g
    if op == "gelu_and_mul":
        return F.gelu(a) * g
    if op == "gelu_tanh_and_mul":
        return F.gelu(a, approximate="tanh") * g
    return torch.where(a > FATRELU_THRESHOLD, a, torch.zeros_like(a)) * g


def judge(row, target):
    """Marks row with its target, whether each ratio reaches it, and the verdict printed."""
    want_copy, want_eager = target
    row["target"] = f">={want_copy:.2f}x copy, >={want_eager:.1f}x eager"
    row["met_copy"] = row["vs_copy"] >= want_copy
    row["met_eager"] = row["vs_eager"] >= want_eager
    row["met"] = row["met_copy"] and row["met_eager"]
    missed = [what for what, ok in (("copy", row["met_copy"]), ("eager", row["met_eager"])) if not ok]
    row["verdict"] = "met" if row["met"] else "MISSED " + ", ".join(missed)


def bench_activation(kernels, reps, failures, timing, rel_error):
    rows = []
    gen = torch.Generator(device="cuda")
    for tokens, d in ACT_SHAPES:
        gen.manual_seed(tokens + d)
        x = torch.randn(tokens, 2 * d, device="cuda", dtype=torch.bfloat16, generator=gen)
        out = torch.empty(tokens, d, device="cuda", dtype=torch.bfloat16)
        shape = f"{tokens}x2x{d}"
        copy_dst = torch.empty_like(x)
        copy = timing([lambda: copy_dst.copy_(x)], reps)
        copy_tbs = 2 * x.numel() * 2 / copy.ms / 1e9
        del copy_dst
        nbytes = (x.numel() + out.numel()) * 2
        for op in ACT_OPS:
            want = act_reference(op, x, d)
            eager = act_eager(op, x, d)
            eager_ms = None
            for target in ("sm90a", "sm80"):
                args = (out, x, FATRELU_THRESHOLD) if op == "fatrelu_and_mul" else (out, x)
                bound = kernels[target].op(op).bind(*args)
                out.fill_(float("nan"))
                bound()
                err = rel_error(out, want)
                if not err < 1e-2:
                    failures.append(f"{op} {target} {shape}: rel error {err:.2e} against float32")
                    continue
                t = timing([bound], reps)
                if eager_ms is None:
                    eager_ms = timing([eager], reps).ms
                tbs = nbytes / t.ms / 1e9
                row = dict(kind="activation", build=target, op=op, shape=shape, tokens=tokens, d=d, us=t.ms * 1e3,
                           spread=t.spread, tbs=tbs, copy_tbs=copy_tbs, vs_copy=tbs / copy_tbs,
                           eager_us=eager_ms * 1e3, vs_eager=eager_ms / t.ms, rel_err=err)
                if target == "sm90a":
                    judge(row, ACT_TARGET)
                rows.append(row)
            del want
        del x, out
        torch.cuda.empty_cache()
    return rows


def rope_cache(dtype, rotary_dim=ROT_D, max_position=ROT_MAX_POSITION):
    half = rotary_dim // 2
    freq = 10000.0 ** (-2.0 * torch.arange(half, dtype=torch.float64, device="cuda") / rotary_dim)
    angle = torch.arange(max_position, dtype=torch.float64, device="cuda").unsqueeze(1) * freq
    return torch.cat((angle.cos(), angle.sin()), dim=1).to(dtype)


def rope_eager(q, k, positions, cache, neox):
    """A straightforward PyTorch rotation of q and k in place, in their dtype."""
    r = cache.shape[1]
    cos, sin = cache[positions].to(q.dtype).chunk(2, dim=-1)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    for x in (q, k):
        xr = x[..., :r]
        if neox:
            x1, x2 = xr.chunk(2, dim=-1)
            xr.copy_(torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1))
        else:
            x1, x2 = xr[..., 0::2], xr[..., 1::2]
            xr.copy_(torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).flatten(-2))


def bench_rotary(kernels, reps, failures, timing, rel_error, l2_bytes):
    rows = []
    gen = torch.Generator(device="cuda")
    gen.manual_seed(ROT_TOKENS)
    t, hq, hkv, d = ROT_TOKENS, ROT_HQ, ROT_HKV, ROT_D
    qk_bytes = t * (hq + hkv) * d * 2
    nsets = max(2, math.ceil(2 * l2_bytes / qk_bytes))
    qs = [torch.randn(t, hq, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(nsets)]
    ks = [torch.randn(t, hkv, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(nsets)]
    ps = [torch.randint(0, ROT_MAX_POSITION, (t,), device="cuda", generator=gen) for _ in range(nsets)]
    src = [torch.randn(t, hq + hkv, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(nsets)]
    dst = [torch.empty_like(s) for s in src]
    copy = timing([(lambda i=i: dst[i].copy_(src[i])) for i in range(nsets)], reps)
    copy_tbs = 2 * qk_bytes / copy.ms / 1e9
    del src, dst
    for cache_dtype, layouts in ((torch.bfloat16, (True, False)), (torch.float32, (True,))):
        cache = rope_cache(cache_dtype)
        nbytes = 2 * qk_bytes + t * (d * cache.element_size() + 8)
        for neox in layouts:
            name = f"t{t} h{hq}/{hkv} d{d} {'neox' if neox else 'gptj'} cache {'bf16' if cache_dtype == torch.bfloat16 else 'f32'}"
            eager_ms = timing([(lambda i=i: rope_eager(qs[i], ks[i], ps[i], cache, neox)) for i in range(nsets)], reps).ms
            for target in ("sm90a", "sm80"):
                op = kernels[target].op("rotary_embedding")
                q0, k0 = qs[0].clone(), ks[0].clone()
                op(q0, k0, ps[0], cache, neox)
                ref_q, ref_k = qs[0].float(), ks[0].float()  # the same rotation in float32
                rope_eager(ref_q, ref_k, ps[0], cache.float(), neox)
                err = max(rel_error(q0, ref_q), rel_error(k0, ref_k))
                if not err < 1e-2:
                    failures.append(f"rotary_embedding {target} {name}: rel error {err:.2e} against float32")
                    continue
                calls = [op.bind(qs[i], ks[i], ps[i], cache, neox) for i in range(nsets)]
                tm = timing(calls, reps)
                tbs = nbytes / tm.ms / 1e9
                row = dict(kind="rotary", build=target, op="rotary_embedding", shape=name, us=tm.ms * 1e3,
                           spread=tm.spread, tbs=tbs, copy_tbs=copy_tbs, vs_copy=tbs / copy_tbs,
                           eager_us=eager_ms * 1e3, vs_eager=eager_ms / tm.ms, rel_err=err, buffer_sets=nsets)
                if target == "sm90a" and cache_dtype == torch.bfloat16:
                    judge(row, ROT_TARGET)
                rows.append(row)
    del qs, ks, ps
    torch.cuda.empty_cache()
    return rows


def print_pointwise(rows):
    head = ("op (bf16)", "shape", "build", "us", "TB/s", "copy TB/s", "vs copy", "eager us", "vs eager", "spread",
            "target", "met")
    print("\n| " + " | ".join(head) + " |\n|" + " --- |" * len(head))
    for r in rows:
        cells = (r["op"], r["shape"], r["build"], f"{r['us']:.1f}", f"{r['tbs']:.2f}", f"{r['copy_tbs']:.2f}",
                 f"{r['vs_copy']:.3f}", f"{r['eager_us']:.1f}", f"{r['vs_eager']:.2f}x", f"{100 * r['spread']:.1f}%",
                 r.get("target", "-"), r.get("verdict", "-"))
        print("| " + " | ".join(cells) + " |")
