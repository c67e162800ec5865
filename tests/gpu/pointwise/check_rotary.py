"""check_rotary.py: kernels-community/rotary on the GPU, called from check_through_kh.py with the
builds it loaded through kh.load_kernel() (sm90a, sm80 and the CPU oracle).

Per target x dtype (fp32/fp16/bf16) x cache dtype (fp32, the dtype) x layout (NeoX, GPT-J) x
shape class: query and key are views into sentinel-filled buffers (a packed qkv buffer in one
class), the cache a real RoPE table (max_position 4096, base 10000) rounded to its dtype,
positions random (repeats, both ends of the table) as int64 or int32, then per rotated element
  |got - ref64| <= ulp(dtype) |ref64| + 2^-22 (|a c| + |b s|) + quantum   (pointwise_support.py)
ref64 the float64 rotation of the stored values written here, 2^-22 (|a c| + |b s|) the fp32
error of a rotation whose two products may cancel; the rest of every head (rotary_dim <
head_size), the gaps and the buffers' tails bit-identical; key absent: only query changes.
Positions outside [0, max_position) leave their token's rows bit-identical (the GPU builds skip
them; the CPU build refuses the call, checked in tests/kernels). Also: the GPU builds against
the CPU build; CUDA graph capture then replay, bit-identical to the eager call, and a replay
after positions and query changed in place; bad calls refused with the argument named and
nothing written.
"""
import torch

import kh
from pointwise_support import DT_NAMES, INV, capture, expect_refused, outside_intact, padded, within

MAX_POSITION = 4096
DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# (class, [(tokens, heads_q, heads_kv, head_size, rotary_dim, pad, packed qkv, int64 positions,
#           positions stride)]); heads_kv 0: key absent.
CLASSES = [
    ("gqa 32/8 d128", [(257, 32, 8, 128, 128, 0, False, True, 1)]),
    ("packed qkv", [(100, 8, 2, 128, 128, 0, True, False, 1)]),
    ("partial rotary", [(65, 4, 4, 128, 64, 0, False, True, 1), (33, 6, 2, 80, 32, 0, False, False, 2)]),
    ("odd head (element path)", [(31, 3, 1, 65, 10, 0, False, True, 1)]),
    ("strided tokens/heads", [(40, 8, 2, 64, 64, 8, False, True, 3), (40, 8, 2, 64, 64, 3, False, False, 1)]),
    ("key absent", [(50, 8, 0, 128, 128, 0, False, True, 1)]),
    ("mqa", [(50, 16, 1, 256, 256, 0, False, True, 1)]),
    ("1 token", [(1, 32, 8, 128, 128, 0, False, True, 1)]),
    ("0 tokens", [(0, 32, 8, 128, 128, 0, False, True, 1)]),
]


def make_cache(rotary_dim, dtype, max_position=MAX_POSITION):
    half = rotary_dim // 2
    freq = 10000.0 ** (-2.0 * torch.arange(half, dtype=torch.float64, device="cuda") / rotary_dim)
    angle = torch.arange(max_position, dtype=torch.float64, device="cuda").unsqueeze(1) * freq
    return torch.cat((angle.cos(), angle.sin()), dim=1).to(dtype)


def make_heads(tokens, heads_q, heads_kv, head_size, pad, packed, dtype, gen):
    """(q, k or None, base): q and k as views into one sentinel-filled buffer (packed: q, k and v
    of a (tokens, (hq + 2 hkv) head_size) qkv buffer) or each into its own."""
    def rand(shape):
        return (torch.rand(shape, device="cuda", generator=gen, dtype=torch.float64) * 4 - 2).to(dtype)
    if packed:
        qkv, base = padded((tokens, (heads_q + 2 * heads_kv) * head_size), dtype, 0)
        qkv.copy_(rand(qkv.shape))
        q = qkv[:, : heads_q * head_size].view(tokens, heads_q, head_size)
        k = qkv[:, heads_q * head_size:(heads_q + heads_kv) * head_size].view(tokens, heads_kv, head_size)
        return q, k, [(base, [q, k])]
    q, q_base = padded((tokens, heads_q, head_size), dtype, pad)
    q.copy_(rand(q.shape))
    if not heads_kv:
        return q, None, [(q_base, [q])]
    k, k_base = padded((tokens, heads_kv, head_size), dtype, pad)
    k.copy_(rand(k.shape))
    return q, k, [(q_base, [q]), (k_base, [k])]


def make_positions(tokens, i64, stride, gen):
    pos = torch.randint(0, MAX_POSITION, (tokens,), device="cuda", generator=gen)
    if tokens > 3:
        pos[1], pos[2], pos[3] = pos[0], 0, MAX_POSITION - 1  # a repeat, both ends of the table
    buf = torch.full((max(1, tokens) * stride,), -7, dtype=torch.int64 if i64 else torch.int32, device="cuda")
    view = buf[::stride][:tokens]
    view.copy_(pos)
    return view


def reference(x, positions, cache, neox):
    """float64 rotation of x (tokens, heads, head_size) and the cancellation scale |a c| + |b s|."""
    r = cache.shape[1]
    half = r // 2
    cs = cache[positions.long()].double()
    c, s = cs[:, None, :half], cs[:, None, half:]
    xd = x.double()
    out = xd.clone()
    scale = torch.zeros_like(xd)
    ia = slice(0, half) if neox else slice(0, r, 2)
    ib = slice(half, r) if neox else slice(1, r, 2)
    a, b = xd[..., ia], xd[..., ib]
    out[..., ia], out[..., ib] = a * c - b * s, b * c + a * s
    scale[..., ia] = scale[..., ib] = (a * c).abs() + (b * s).abs()
    return out, scale


def rotated_ok(got, before, positions, cache, neox, dtype, valid=None):
    """(err, ratio, problems): rotated elements within tolerance, all others bit-identical."""
    r = cache.shape[1]
    ref, scale = reference(before, positions.clamp(0, cache.shape[0] - 1), cache, neox)
    if valid is None:
        valid = torch.ones(positions.shape, dtype=torch.bool, device=positions.device)
    ref = torch.where(valid[:, None, None], ref, before.double())  # tokens with a bad position: as they were
    scale = torch.where(valid[:, None, None], scale, torch.zeros_like(scale))
    err, ratio, problems = within(got[..., :r], ref[..., :r], dtype, 2.0 ** -22 * scale[..., :r])
    if not torch.equal(got[..., r:], before[..., r:]):
        problems.append("elements past rotary_dim changed")
    if not torch.equal(got[torch.logical_not(valid)], before[torch.logical_not(valid)]):
        problems.append("a token with a position outside the cache changed")
    return err, ratio, problems


def run_case(res, op, target, dtype, cache_dtype, neox, cls, case, gen):
    tokens, hq, hkv, head, rot, pad, packed, i64, pstride = case
    name = (f"t{tokens} h{hq}/{hkv} d{head} rot{rot}{' pad' + str(pad) if pad else ''}{' qkv' if packed else ''} "
            f"pos {'i64' if i64 else 'i32'}{'/' + str(pstride) if pstride > 1 else ''}")
    label = f"{DT_NAMES[dtype]} cache {DT_NAMES[cache_dtype]}"
    opname = "rotary_embedding " + ("neox" if neox else "gptj")
    try:
        q, k, bases = make_heads(tokens, hq, hkv, head, pad, packed, dtype, gen)
        positions = make_positions(tokens, i64, pstride, gen)
        cache = make_cache(rot, cache_dtype)
        q0, k0 = q.clone(), (k.clone() if k is not None else None)
        before = [base.clone() for base, _ in bases]
        op(q, k, positions, cache, neox)
        torch.cuda.synchronize()
        err, ratio, problems = rotated_ok(q, q0, positions, cache, neox, dtype)
        if k is not None:
            e2, r2, p2 = rotated_ok(k, k0, positions, cache, neox, dtype)
            err, ratio, problems = max(err, e2), max(ratio, r2), problems + ["key: " + p for p in p2]
        for (base, views), clone in zip(bases, before):
            if not outside_intact(base, views, clone):
                problems.append("wrote outside query/key (gaps, v, or past the end)")
        res.add(opname, target, label, cls, name, not problems, err, err / ratio if ratio > 0 else None,
                "; ".join(problems))
    except kh.Error as e:
        res.add(opname, target, label, cls, name, False, detail=str(e))


def check_rotary(res, kernels, gen, quick, targets):
    for target in targets:
        op = kernels[("rotary", target)].op("rotary_embedding")
        for dtype in DTYPES:
            for cache_dtype in (torch.float32,) if dtype == torch.float32 else (torch.float32, dtype):
                for neox in (True, False):
                    for cls, cases in CLASSES:
                        for case in cases[:1] if quick else cases:
                            run_case(res, op, target, dtype, cache_dtype, neox, cls, case, gen)
        check_bad_positions(res, op, target, gen)
        check_oracle(res, kernels, target, gen)
        check_graph(res, op, target, gen)
        check_bad_args(res, op, target)


def check_bad_positions(res, op, target, gen):
    """Positions outside [0, max_position): their tokens are left exactly as they were."""
    for i64 in (True, False):
        name = f"positions {'i64' if i64 else 'i32'} with -1, max_position, 2^31 - 1"
        q, k, _ = make_heads(64, 8, 2, 128, 0, False, torch.bfloat16, gen)
        positions = make_positions(64, i64, 1, gen)
        positions[5], positions[6], positions[7] = -1, MAX_POSITION, 2 ** 31 - 1
        if i64:
            positions[8] = 2 ** 40
        valid = (positions >= 0) & (positions < MAX_POSITION)
        cache = make_cache(128, torch.bfloat16)
        q0, k0 = q.clone(), k.clone()
        try:
            op(q, k, positions, cache, True)
            torch.cuda.synchronize()
        except kh.Error as e:
            res.add("rotary_embedding neox", target, "bf16", "bad positions", name, False, detail=str(e))
            continue
        err, ratio, problems = rotated_ok(q, q0, positions, cache, True, torch.bfloat16, valid)
        e2, r2, p2 = rotated_ok(k, k0, positions, cache, True, torch.bfloat16, valid)
        res.add("rotary_embedding neox", target, "bf16", "bad positions", name, not (problems or p2), max(err, e2),
                None, "; ".join(problems + ["key: " + p for p in p2]) or "bad tokens untouched, others rotated")


def check_oracle(res, kernels, target, gen):
    """The GPU build against the CPU build (correctly rounded from double) on the same inputs."""
    cpu = kernels[("rotary", "cpu")].op("rotary_embedding")
    rot = 96
    for dtype in DTYPES:
        for neox in (True, False):
            name = f"t77 h8/2 d128 rot{rot} {'neox' if neox else 'gptj'}"
            q, k, _ = make_heads(77, 8, 2, 128, 0, False, dtype, gen)
            positions = make_positions(77, True, 1, gen)
            cache = make_cache(rot, torch.float32)
            before = [q.clone(), k.clone()]
            qc, kc = q.cpu(), k.cpu()
            try:
                cpu(qc, kc, positions.cpu(), cache.cpu(), neox)
                kernels[("rotary", target)].op("rotary_embedding")(q, k, positions, cache, neox)
                torch.cuda.synchronize()
            except kh.Error as e:
                res.add("rotary_embedding", f"{target} vs cpu", DT_NAMES[dtype], "oracle", name, False, detail=str(e))
                continue
            problems, err = [], 0.0
            for what, gpu_out, cpu_out, x0 in (("query", q, qc, before[0]), ("key", k, kc, before[1])):
                ref, scale = reference(x0, positions, cache, neox)
                ref, scale = ref[..., :rot].cpu(), scale[..., :rot].cpu()
                _, _, p_cpu = within(cpu_out[..., :rot], ref, dtype, torch.zeros_like(ref))  # one rounding of ref
                e, _, p_gpu = within(gpu_out.cpu()[..., :rot], cpu_out[..., :rot].double(), dtype, 2.0 ** -22 * scale)
                err = max(err, e)
                problems += [f"{what} cpu: {p}" for p in p_cpu] + [f"{what}: {p}" for p in p_gpu]
            res.add("rotary_embedding", f"{target} vs cpu", DT_NAMES[dtype], "oracle", name, not problems, err, None,
                    "; ".join(problems))


def check_graph(res, op, target, gen):
    """One call captured in a CUDA graph: capture runs nothing, a replay equals the eager call
    bit for bit, and after positions and query change in place a replay rotates the new query
    by the new positions (nothing was read on the host at capture)."""
    name = "t512 h32/8 d128 neox bf16, cache bf16"
    try:
        dtype = torch.bfloat16
        q, k, _ = make_heads(512, 32, 8, 128, 0, False, dtype, gen)
        positions = make_positions(512, True, 1, gen)
        cache = make_cache(128, dtype)
        q0, k0 = q.clone(), k.clone()
        op(q, k, positions, cache, True)
        torch.cuda.synchronize()
        eager_q, eager_k = q.clone(), k.clone()
        q.copy_(q0)
        k.copy_(k0)
        g = capture(lambda s: op(q, k, positions, cache, True, stream=s))
        problems = [] if torch.equal(q, q0) and torch.equal(k, k0) else ["capture ran the kernel"]
        g.replay()
        torch.cuda.synchronize()
        if not (torch.equal(q, eager_q) and torch.equal(k, eager_k)):
            problems.append("replay is not bit-identical to the eager call")
        positions.copy_(torch.randint(0, MAX_POSITION, positions.shape, device="cuda", generator=gen))
        q.copy_((torch.rand(q.shape, device="cuda", generator=gen, dtype=torch.float64) * 4 - 2).to(dtype))
        q1, k1 = q.clone(), k.clone()
        g.replay()
        torch.cuda.synchronize()
        err, ratio, more = rotated_ok(q, q1, positions, cache, True, dtype)
        e2, _, more_k = rotated_ok(k, k1, positions, cache, True, dtype)
        problems += ["replay with new positions: " + p for p in more + more_k]
        res.add("rotary_embedding neox", target, "bf16", "graph", name, not problems, max(err, e2), None,
                "; ".join(problems) or "replay bit-identical; new positions honoured")
    except (kh.Error, RuntimeError) as e:
        res.add("rotary_embedding neox", target, "bf16", "graph", name, False, detail=f"{type(e).__name__}: {e}")


def check_bad_args(res, op, target):
    dtype = torch.bfloat16
    q = torch.randn(16, 8, 64, device="cuda").to(dtype)
    k = torch.randn(16, 2, 64, device="cuda").to(dtype)
    positions = torch.arange(16, device="cuda")
    cache = make_cache(64, dtype, 32)
    watched = [(q, q.clone()), (k, k.clone())]

    def refused(case, fn, arg):
        expect_refused(res, "rotary_embedding", target, case, fn, watched, INV, arg)

    refused("query 2-D", lambda: op(q.view(16, 512), k, positions, cache, True), "query")
    refused("key of another dtype", lambda: op(q, k.half(), positions, cache, True), "key")
    refused("key of another head size", lambda: op(q, k[..., :32], positions, cache, True), "key")
    refused("key of another token count", lambda: op(q, k[:15], positions, cache, True), "key")
    refused("key overlapping query", lambda: op(q, q[:, :2], positions, cache, True), "query")
    refused("positions float", lambda: op(q, k, positions.float(), cache, True), "positions")
    refused("positions of another length", lambda: op(q, k, positions[:15], cache, True), "positions")
    refused("positions on the CPU", lambda: op(q, k, positions.cpu(), cache, True), "positions")
    refused("cache fp16 for bf16 query", lambda: op(q, k, positions, cache.half(), True), "cos_sin_cache")
    refused("rotary_dim odd", lambda: op(q, k, positions, cache[:, :63], True), "cos_sin_cache")
    refused("rotary_dim > head_size", lambda: op(q, k, positions, make_cache(128, dtype, 32), True), "cos_sin_cache")
    refused("cache's last dim strided", lambda: op(q, k, positions, cache.t().contiguous().t(), True), "cos_sin_cache")
    refused("query broadcast over tokens", lambda: op(q[:1].expand(16, 8, 64), k, positions, cache, True), "query")
    refused("is_neox an int", lambda: op(q, k, positions, cache, 1), "is_neox")
