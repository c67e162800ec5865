"""check_fp8.py: the FP8 ops of kernels-community/attention 1.2 on the GPU, called from check_decode.py
(the "attention decode" section of check_through_kh.py) with the builds loaded through kh.load_kernel().

Caches hold float8_e4m3fn bytes, passed as uint8 views (the op's convention). The pass rule of issue
42: the reference is float64 attention on the dequantized e4m3 values (e4m3 * scale); a build passes
when max|out - ref64| <= 2 * max|torch - ref64| + 1e-5 over rows that see a key, torch being a
float32 PyTorch implementation on the same dequantized values that rounds the probabilities to q's
dtype before P.V (and its result to out's dtype); lse within 1e-3 of ref64's, or within twice the
float32 implementation's lse error where that is larger (scores of e4m3 values near 448 times their
scales reach the thousands, where float32 itself is off by more); rows that see no key exactly 0
with lse -inf. Per GPU target x dtype:
  - attention_decode_paged_fp8 on 1.1's decode grid (GQA/MQA, block sizes 1-256, lengths 0/1/not
    multiples of the block, windows, soft-caps, q_len 1, 2, 5 and 8, head dims 32-256 in steps of 16),
    scales per tensor and per KV head far from 1 (1e-3 .. 300), caches at e4m3's range limits
    (saturated +-448 and subnormal values); the CPU build against ref64 and the GPU builds against
    the CPU build; a CUDA graph replay bit-identical to the eager call and honouring new seq_lens and
    scales written in place;
  - paged_kv_cache_write: e4m3 caches byte-equal to PyTorch's (x.float() / s).clamp(-448, 448)
    .to(torch.float8_e4m3fn) (per tensor and per head, int32/int64 slot maps with skipped tokens,
    values at 448, 464, 480, infinities, subnormals; NaN written as a NaN byte), bf16/fp16 caches
    byte-equal to the input, untouched rows untouched; then a decode over the written cache;
  - attention_varlen_fwd_fp8 with a bf16/fp16 q (the FP8-KV packed mode) against ref64 by the same
    rule; with an e4m3 q too (FP8 prefill) on the sm90a build, by the same rule with P rounded to e4m3
    in the float32 implementation (the kernel's P.V operand), on PREFILL_CASES (the varlen grid, head
    dims 32-256, empty key sequences, multi-block sequences, windows, soft-caps, scales far from 1,
    values at e4m3's limits) and a CUDA graph replay; on the sm80 build an e4m3 q is refused with
    KH_ERROR_UNSUPPORTED before launch (no output written);
  - bad calls refused with the argument named.
KH_GPU_FP8_QUICK=1 runs one case per class (head dims 64/128/256).
"""
import itertools
import math
import os

import torch

import kh

E4M3 = torch.float8_e4m3fn
DT_NAMES = {torch.float16: "f16", torch.bfloat16: "bf16"}


def quick():
    return os.environ.get("KH_GPU_FP8_QUICK", "0") == "1"


# --- FP8 helpers ---------------------------------------------------------------------------------

def quantize(x, scale):
    """PyTorch's e4m3 bytes of x / scale (scale: (1) or (heads) float32, heads on dim -2), saturating."""
    s = scale.view(*([1] * (x.dim() - 2)), -1, 1) if scale.numel() > 1 else scale
    return (x.float() / s).clamp(-448.0, 448.0).to(E4M3).view(torch.uint8)


def dequant(b, scale):
    s = scale.view(*([1] * (b.dim() - 2)), -1, 1).double() if scale.numel() > 1 else scale.double()
    return b.view(E4M3).double() * s


def make_scales(kind, hkv, gen, lo=1e-3, hi=300.0):
    """kind 'tensor': one factor; 'head': one a KV head, spread log-uniformly over [lo, hi]."""
    n = 1 if kind == "tensor" else hkv
    u = torch.rand(n, device="cuda", generator=gen, dtype=torch.float64)
    return torch.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))).float()


def workspace_floats(batch, q_len, hq, hkv, d, max_kv):
    by_len = -(-max_kv // 128)
    by_fill = -(-4096 // (batch * hkv)) if batch * hkv > 0 else 1
    s = max(1, min(64, by_len, by_fill))
    return batch * q_len * hq * s * (d + 1) if s > 1 else 0


def make_paged_fp8(b, q_len, hq, hkv, d, bs, lens, dtype, gen, scale_kind="head", values="normal", max_blocks=None,
                   spare=3):
    """q, k_cache, v_cache (uint8 e4m3), k_scale, v_scale, block_table (a padded-row view), seq_lens,
    out (NaN), lse (NaN), ws. values: 'normal' (N(0,1) x scale), 'limits' (a third saturated past
    448, a third subnormal), 'subnormal' (mostly below 2^-6 after scaling)."""
    lens = [lens[i % len(lens)] for i in range(b)]
    need = max(1, max(-(-n // bs) for n in lens)) if lens else 1
    mb = max_blocks or need
    nblocks = b * mb + spare
    q = torch.randn(b, q_len, hq, d, device="cuda", generator=gen).to(dtype)
    ks = make_scales(scale_kind, hkv, gen)
    vs = make_scales(scale_kind, hkv, gen)
    caches = []
    for s in (ks, vs):
        x = torch.randn(nblocks, bs, hkv, d, device="cuda", generator=gen)
        if values == "limits":
            pick = torch.randint(0, 3, x.shape, device="cuda", generator=gen)
            x = torch.where(pick == 0, x * 600.0, torch.where(pick == 1, x * 2.0 ** -8, x * 100.0))
        elif values == "subnormal":
            x = x * 2.0 ** -8
        sv = s.view(1, 1, -1, 1) if s.numel() > 1 else s
        caches.append(quantize(x * sv, s))
    kc, vc = caches
    perm = torch.randperm(nblocks, device="cuda", generator=gen)[: b * mb].to(torch.int32)
    table_buf = torch.full((b, mb + 5), -1, device="cuda", dtype=torch.int32)
    table = table_buf[:, 2:2 + mb]
    table.copy_(perm.view(b, mb))
    seq = torch.tensor(lens, device="cuda", dtype=torch.int32)
    out = torch.full((b, q_len, hq, d), float("nan"), device="cuda", dtype=dtype)
    lse = torch.full((b, hq, q_len), float("nan"), device="cuda", dtype=torch.float32)
    ws = torch.full((max(1, workspace_floats(b, q_len, hq, hkv, d, mb * bs)),), float("nan"), device="cuda",
                    dtype=torch.float32)
    return q, kc, vc, ks, vs, table, seq, out, lse, ws


def visible(n, q_len, window, device, causal=True, len_q=None):
    """(q_len, n) bool: query i (key position n - len_q + i) sees key j."""
    len_q = q_len if len_q is None else len_q
    i = torch.arange(q_len, device=device).view(-1, 1)
    j = torch.arange(n, device=device).view(1, -1)
    pos = n - len_q + i
    m = (j <= pos) if causal else torch.ones(q_len, n, dtype=torch.bool, device=device)
    if window >= 0:
        m &= j >= pos - window
    return m


def attention_ref(q, k, v, mask, scale, softcap, operand_dtype=None, p_dtype=None):
    """q (hq, sq, d), k/v (hkv, n, d) dequantized, mask (sq, n). float64 (operand_dtype None), or the
    float32 implementation that rounds exp(s - max) to operand_dtype (p_dtype when given: e4m3 for
    the FP8 prefill, whose P.V runs on e4m3) before P.V and its result to operand_dtype.
    Returns out (sq, hq, d) float64 and lse (hq, sq) float64."""
    hq, hkv = q.shape[0], k.shape[0]
    f = torch.float64 if operand_dtype is None else torch.float32
    kk = k.to(f).repeat_interleave(hq // hkv, dim=0)
    vv = v.to(f).repeat_interleave(hq // hkv, dim=0)
    s = torch.matmul(q.to(f), kk.transpose(-1, -2)) * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    s = s.masked_fill(~mask, -math.inf)
    mx = s.amax(-1, keepdim=True)
    mx = torch.where(torch.isinf(mx), torch.zeros_like(mx), mx)
    e = torch.exp(s - mx)
    den = e.sum(-1, keepdim=True)
    pe = e if operand_dtype is None else e.to(p_dtype or operand_dtype).to(f)
    o = torch.matmul(pe, vv) / torch.where(den > 0, den, torch.ones_like(den))
    if operand_dtype is not None:
        o = o.to(operand_dtype)
    lse = torch.log(den.squeeze(-1)) + mx.squeeze(-1)
    lse = torch.where(den.squeeze(-1) > 0, lse, torch.full_like(lse, -math.inf))
    return o.double().transpose(0, 1), lse.double()


def gather(cache, table_row, n):
    bs = cache.shape[1]
    j = torch.arange(n, device=cache.device)
    return cache[table_row[j // bs].long(), j % bs]  # (n, heads, d)


def decode_refs(q, kc, vc, ks, vs, table, seq, scale, window, softcap, with_lse=False):
    """(ref64 out, ref64 lse, torch-rule out[, torch-rule lse]) for a paged FP8 decode call."""
    b, q_len, hq, d = q.shape
    ref_o = torch.zeros(b, q_len, hq, d, device=q.device, dtype=torch.float64)
    ref_l = torch.full((b, hq, q_len), -math.inf, device=q.device, dtype=torch.float64)
    tp_o = torch.zeros_like(ref_o)
    tp_l = ref_l.clone()
    for s in range(b):
        n = int(seq[s])
        if n == 0:
            continue
        k = dequant(gather(kc, table[s], n), ks).transpose(0, 1)  # (hkv, n, d)
        v = dequant(gather(vc, table[s], n), vs).transpose(0, 1)
        mask = visible(n, q_len, window, q.device)
        qs = q[s].transpose(0, 1)
        o, l = attention_ref(qs, k, v, mask, scale, softcap)
        rows = mask.any(-1)
        o[~rows] = 0
        ref_o[s], ref_l[s] = o, l
        o2, l2 = attention_ref(qs, k, v, mask, scale, softcap, operand_dtype=q.dtype)
        o2[~rows] = 0
        tp_o[s], tp_l[s] = o2, l2
    return (ref_o, ref_l, tp_o, tp_l) if with_lse else (ref_o, ref_l, tp_o)


def lse_tolerance(tp_l, ref_l):
    """1e-3 (1.1's decode rule), or twice the float32 reference's lse error where the scores are so
    large (e4m3 values near 448 times scales far from 1 reach scores of 1e5) that float32 itself is
    further off; errors() adds two float32 ulps of each lse (lse is float32: at 1e5 one ulp is 8e-3)."""
    fin = torch.isfinite(ref_l)
    torch_err = (tp_l[fin] - ref_l[fin]).abs().max().item() if bool(fin.any()) else 0.0
    return max(1e-3, 2.0 * torch_err)


def errors(out, lse, ref_o, ref_l, seen, lse_tol=1e-3):
    o = out.double()
    problems = []
    if bool(torch.isnan(o).any()):
        problems.append("NaN (unwritten) outputs")
    err = (o - ref_o).abs().masked_fill(~seen, 0).max().item() if o.numel() else 0.0
    masked = o.masked_select(~seen.expand_as(o))
    if masked.numel() and not bool((masked == 0).all()):
        problems.append("rows that see no key are not exactly 0")
    lse_err = 0.0
    if lse is not None:
        inf_ref = torch.isinf(ref_l)
        if bool(torch.isnan(lse).any()):
            problems.append("NaN lse")
        if not (bool((torch.isinf(lse) == inf_ref).all()) and bool((lse[inf_ref] < 0).all())):
            problems.append("lse -inf mismatch")
        fin = ~inf_ref
        diff = (lse.double()[fin] - ref_l[fin]).abs()
        lse_err = diff.max().item() if bool(fin.any()) else 0.0
        allowed = lse_tol + 2.0 ** -22 * ref_l[fin].abs()  # + 2 float32 ulps of the value
        if bool(fin.any()) and not bool((diff <= allowed).all()):
            problems.append(f"lse err {lse_err:.1e} > {lse_tol:.1e} + 2 float32 ulps")
    return err, lse_err, problems


# --- attention_decode_paged_fp8 ------------------------------------------------------------------

# (class, b, q_len, hq, hkv, d, block_size, lens, window, softcap, scale kind, values)
DECODE_CASES = [
    ("len 0/1/odd", 4, 1, 8, 2, 128, 16, [0, 1, 17, 1000], -1, 0.0, "head", "normal"),
    ("long (split)", 1, 1, 32, 8, 128, 16, [20000], -1, 0.0, "tensor", "normal"),
    ("many seqs", 96, 1, 8, 8, 64, 32, [700, 1, 0, 129, 64], -1, 0.0, "head", "normal"),
    ("b512 (never split)", 512, 1, 8, 8, 64, 16, [300, 1, 0, 129, 64], -1, 0.0, "tensor", "normal"),
    ("mqa", 3, 1, 16, 1, 64, 32, [5, 300, 4096], -1, 0.0, "tensor", "normal"),
    ("q_len 5", 4, 5, 8, 2, 128, 16, [3, 5, 64, 2000], -1, 0.0, "head", "normal"),
    ("q_len 8 gqa 8", 2, 8, 32, 4, 128, 16, [8, 5000], -1, 0.0, "head", "normal"),
    ("window", 3, 2, 8, 2, 128, 64, [100, 3000, 10], 256, 0.0, "head", "normal"),
    ("softcap", 2, 1, 8, 8, 256, 256, [1500, 33], -1, 30.0, "head", "normal"),
    ("softcap+window q_len 5", 2, 5, 4, 2, 96, 16, [700, 4], 64, 20.0, "tensor", "normal"),
    ("block size 1", 2, 1, 8, 2, 128, 1, [77, 300], -1, 0.0, "head", "normal"),
    ("block size 8", 2, 2, 8, 2, 64, 8, [300, 50], 100, 0.0, "head", "normal"),
    ("gqa 32/8 b16 (bench shape)", 16, 1, 32, 8, 128, 16, [700, 1, 0, 129, 2048, 37], -1, 0.0, "head", "normal"),
    ("e4m3 limits", 4, 1, 8, 2, 128, 16, [300, 1, 45, 1000], -1, 0.0, "head", "limits"),
    ("e4m3 subnormals", 3, 2, 8, 2, 64, 32, [90, 400, 3], -1, 0.0, "tensor", "subnormal"),
    ("e4m3 limits d256 softcap", 2, 1, 8, 2, 256, 16, [500, 129], -1, 50.0, "head", "limits"),
]


def run_decode_case(res, op, target, dtype, case, gen):
    cls, b, q_len, hq, hkv, d, bs, lens, window, softcap, skind, values = case
    name = f"b{b} q{q_len} h{hq}/{hkv} d{d} bs{bs} lens{lens[:4]} w{window} cap{softcap:g} {skind} {values}"
    scale = 1.0 / math.sqrt(d)
    try:
        q, kc, vc, ks, vs, table, seq, out, lse, ws = make_paged_fp8(b, q_len, hq, hkv, d, bs, lens, dtype, gen,
                                                                     skind, values)
        # The workspace as the op sizes it (kh_op_workspace_size), checked against the docs' rule.
        asked = op.workspace_size(out, lse, q, kc, vc, ks, vs, table, seq, None, scale, window, softcap)
        rule = workspace_floats(b, q_len, hq, hkv, d, table.shape[1] * bs)
        ws = torch.full((max(1, asked // 4),), float("nan"), device="cuda", dtype=torch.float32)
        op(out, lse, q, kc, vc, ks, vs, table, seq, ws, scale, window, softcap)
        torch.cuda.synchronize()
        ref_o, ref_l, tp_o, tp_l = decode_refs(q, kc, vc, ks, vs, table, seq, scale, window, softcap, with_lse=True)
        seen = torch.isfinite(ref_l).transpose(1, 2).unsqueeze(-1)
        torch_err = (tp_o - ref_o).abs().masked_fill(~seen, 0).max().item()
        err, lse_err, problems = errors(out, lse, ref_o, ref_l, seen, lse_tolerance(tp_l, ref_l))
        tol = 2.0 * torch_err + 1e-5
        if err > tol:
            problems.append(f"err {err:.2e} > tol {tol:.2e}")
        if asked != 4 * rule:
            problems.append(f"kh_op_workspace_size {asked} bytes, the docs' rule {rule} floats")
        res.add("attention_decode_paged_fp8", target, DT_NAMES[dtype], cls, name, not problems, err, tol,
                "; ".join(problems) or f"torch {torch_err:.2e} lse_err {lse_err:.1e}")
    except Exception as e:  # noqa: BLE001 - any failure is this case's finding
        res.add("attention_decode_paged_fp8", target, DT_NAMES[dtype], cls, name, False, detail=f"{type(e).__name__}: {e}")


def check_decode_fp8_oracle(res, kernels, gen, targets):
    """The CPU build against ref64 (one rounding of out's dtype), the GPU builds against the CPU build."""
    cpu_op = kernels[("attention", "cpu")].op("attention_decode_paged_fp8")
    shapes = [("oracle gqa q5 window", 2, 5, 8, 2, 128, 16, [37, 300], 50, 0.0, "head", "normal"),
              ("oracle mqa softcap limits", 2, 1, 4, 1, 80, 32, [0, 333], -1, 10.0, "tensor", "limits"),
              ("oracle split", 1, 1, 8, 2, 64, 16, [3000], -1, 0.0, "head", "normal")]
    for dtype in (torch.bfloat16, torch.float16):
        for (cls, b, q_len, hq, hkv, d, bs, lens, window, softcap, skind, values) in shapes:
            name = f"b{b} q{q_len} h{hq}/{hkv} d{d} lens{lens} w{window} cap{softcap:g}"
            scale = 1.0 / math.sqrt(d)
            t = make_paged_fp8(b, q_len, hq, hkv, d, bs, lens, dtype, gen, skind, values)
            q, kc, vc, ks, vs, table, seq, out, lse, ws = t
            ref_o, ref_l, tp_o = decode_refs(q, kc, vc, ks, vs, table, seq, scale, window, softcap)
            seen = torch.isfinite(ref_l).transpose(1, 2).unsqueeze(-1)
            cpu = [x.cpu() for x in t]
            try:
                cpu_op(cpu[7], cpu[8], *cpu[:7], cpu[9], scale, window, softcap)
            except kh.Error as e:
                res.add("attention_decode_paged_fp8", "cpu", DT_NAMES[dtype], cls, name, False, detail=str(e))
                continue
            oc, lc = cpu[7], cpu[8]
            rtol = 2.0 ** -7 if dtype == torch.bfloat16 else 2.0 ** -10
            err_c, lse_c, problems = errors(oc, lc, ref_o.cpu(), ref_l.cpu(), seen.cpu())
            if not bool(((oc.double() - ref_o.cpu()).abs() <= rtol * ref_o.cpu().abs() + 1e-6).all()):
                problems.append("CPU oracle is not within one rounding of ref64")
            res.add("attention_decode_paged_fp8", "cpu", DT_NAMES[dtype], cls, name, not problems, err_c, None,
                    "; ".join(problems) or f"lse_err {lse_c:.1e}")
            torch_err = (tp_o - ref_o).abs().masked_fill(~seen, 0).max().item()
            for target in targets:
                op = kernels[("attention", target)].op("attention_decode_paged_fp8")
                try:
                    out.fill_(float("nan"))
                    op(out, lse, q, kc, vc, ks, vs, table, seq, ws, scale, window, softcap)
                    torch.cuda.synchronize()
                except kh.Error as e:
                    res.add("attention_decode_paged_fp8", f"{target} vs cpu", DT_NAMES[dtype], cls, name, False,
                            detail=str(e))
                    continue
                err, lse_err, problems = errors(out.cpu(), lse.cpu(), oc.double(), lc.double(), seen.cpu())
                tol = 2.0 * torch_err + err_c + 1e-5
                if err > tol:
                    problems.append(f"|gpu - cpu| {err:.2e} > {tol:.2e}")
                res.add("attention_decode_paged_fp8", f"{target} vs cpu", DT_NAMES[dtype], cls, name, not problems,
                        err, tol, "; ".join(problems) or f"lse |gpu - cpu| {lse_err:.1e}")


def check_decode_fp8_graph(res, op, target, gen):
    """One call captured in a CUDA graph: replay == eager bit for bit; after seq_lens, q and the
    scales change in place, a replay computes the new call."""
    for cls, b, lens in (("graph split", 1, [6000]), ("graph b128", 128, [900, 1, 0, 333])):
        name = f"b{b} lens{lens}"
        try:
            dtype, hq, hkv, d, bs = torch.bfloat16, 32, 8, 128, 16
            q, kc, vc, ks, vs, table, seq, out, lse, ws = make_paged_fp8(
                b, 1, hq, hkv, d, bs, lens, dtype, gen, "head", "normal", max_blocks=-(-max(lens) // bs) + 2)
            scale = 1.0 / math.sqrt(d)
            op(out, lse, q, kc, vc, ks, vs, table, seq, ws, scale, -1, 0.0)
            torch.cuda.synchronize()
            eager_o, eager_l = out.clone(), lse.clone()
            out.fill_(float("nan"))
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                with torch.cuda.graph(g, stream=s):
                    op(out, lse, q, kc, vc, ks, vs, table, seq, ws, scale, -1, 0.0, stream=s)
            torch.cuda.current_stream().wait_stream(s)
            torch.cuda.synchronize()
            untouched = bool(torch.isnan(out.float()).all())
            g.replay()
            torch.cuda.synchronize()
            same = torch.equal(out, eager_o) and torch.equal(lse, eager_l)
            seq.copy_(torch.tensor([min(n + 17, table.shape[1] * bs) for n in (lens * b)[:b]], device="cuda",
                                   dtype=torch.int32))
            q.copy_(torch.randn(q.shape, device="cuda", generator=gen).to(dtype))
            ks.mul_(0.5)
            vs.mul_(3.0)
            g.replay()
            torch.cuda.synchronize()
            ref_o, ref_l, tp_o = decode_refs(q, kc, vc, ks, vs, table, seq, scale, -1, 0.0)
            seen = torch.isfinite(ref_l).transpose(1, 2).unsqueeze(-1)
            tol = 2.0 * (tp_o - ref_o).abs().masked_fill(~seen, 0).max().item() + 1e-5
            err, _, problems = errors(out, lse, ref_o, ref_l, seen)
            if not untouched:
                problems.append("capture ran the kernel")
            if not same:
                problems.append("replay is not bit-identical to the eager call")
            if err > tol:
                problems.append(f"replay with new lengths and scales: err {err:.2e} > tol {tol:.2e}")
            res.add("attention_decode_paged_fp8", target, "bf16", cls, name, not problems, err, tol,
                    "; ".join(problems) or "replay bit-identical; new lengths and scales honoured")
        except Exception as e:  # noqa: BLE001 - any failure is this case's finding
            res.add("attention_decode_paged_fp8", target, "bf16", cls, name, False, detail=f"{type(e).__name__}: {e}")


# --- paged_kv_cache_write ------------------------------------------------------------------------

def check_cache_write(res, op, target, gen, dec_op=None):
    """Round trips against PyTorch's quantize, bytes exact; bf16/fp16 caches exact copies."""
    cases = [  # (class, tokens, heads, d, block_size, blocks, scale kind, slot dtype, special values)
        ("e4m3 per head, int32 slots", 37, 8, 128, 16, 6, "head", torch.int32, False),
        ("e4m3 per tensor, int64 slots", 300, 2, 64, 32, 12, "tensor", torch.int64, False),
        ("e4m3 limits and specials", 20, 2, 256, 4, 8, "head", torch.int32, True),
        ("e4m3 d80 block size 1", 9, 3, 80, 1, 16, "head", torch.int64, False),
        # 40 heads of d128: 1280 chunks a token, past the 1024 a CUDA CTA's threads load before the slots.
        ("e4m3 many heads", 33, 40, 128, 16, 4, "head", torch.int32, False),
        # Past 4096 tokens the CUDA kernel takes 4 tokens a CTA (5002: a last CTA of 4 partly empty).
        ("e4m3 many tokens", 5002, 4, 128, 16, 400, "head", torch.int64, False),
    ]
    for dtype in (torch.bfloat16, torch.float16):
        for (cls, tokens, heads, d, bs, nblocks, skind, sdt, special) in cases:
            name = f"t{tokens} h{heads} d{d} bs{bs} {skind} {str(sdt)[6:]}"
            try:
                key = torch.randn(tokens, heads, d, device="cuda", generator=gen)
                value = torch.randn(tokens, heads, d, device="cuda", generator=gen)
                ks = make_scales(skind, heads, gen, 0.01, 10.0)
                vs = make_scales(skind, heads, gen, 0.01, 10.0)
                sv = ks.view(1, -1, 1) if ks.numel() > 1 else ks
                key = key * sv * 100.0  # a spread reaching past 448 and into the subnormals
                if special:
                    flat = key.view(-1)
                    sk = ks.view(1, -1, 1).expand(tokens, heads, d).reshape(-1) if ks.numel() > 1 else ks.expand(flat.numel())
                    vals = torch.tensor([448.0, 464.0, 480.0, 1e4, float("inf"), -float("inf"), 2.0 ** -9, 2.0 ** -10,
                                         3 * 2.0 ** -10, -448.0, 0.0, -0.0, 1.0 + 1 / 16, 432.0],
                                        device="cuda")
                    flat[: vals.numel()] = vals * sk[: vals.numel()]
                key, value = key.to(dtype), value.to(dtype)
                # Padded token rows for key: a strided view.
                key_buf = torch.zeros(tokens, heads * d + 64, device="cuda", dtype=dtype)
                key_buf[:, : heads * d] = key.view(tokens, heads * d)
                key = key_buf[:, : heads * d].view(tokens, heads, d)
                capacity = nblocks * bs
                perm = torch.randperm(capacity, device="cuda", generator=gen)[:tokens]
                slots = torch.where(torch.arange(tokens, device="cuda") % 4 == 3, -1 - perm, perm).to(sdt)
                kc = torch.full((nblocks, bs, heads, d), 0xA5, device="cuda", dtype=torch.uint8)
                vc = torch.full((nblocks, bs, heads, d), 0xA5, device="cuda", dtype=torch.uint8)
                op(kc, vc, key, value, slots, ks, vs)
                torch.cuda.synchronize()
                problems = []
                on = slots >= 0
                rows = slots[on].long()
                want_k = quantize(key[on], ks)
                want_v = quantize(value[on], vs)
                got_k = kc.view(capacity, heads, d)[rows]
                got_v = vc.view(capacity, heads, d)[rows]
                # NaN inputs are written as a NaN byte (0x7f / 0xff); everything else byte for byte.
                nan_k = torch.isnan(key[on].float())
                diff = ((got_k != want_k) & ~nan_k).sum().item() + (got_v != want_v).sum().item()
                if bool(nan_k.any()) and not bool(((got_k[nan_k] & 0x7F) == 0x7F).all()):
                    problems.append("NaN not written as a NaN byte")
                if diff:
                    problems.append(f"{diff} bytes differ from PyTorch's quantize")
                untouched = torch.ones(capacity, dtype=torch.bool, device="cuda")
                untouched[rows] = False
                if not bool((kc.view(capacity, -1)[untouched] == 0xA5).all()):
                    problems.append("rows of skipped slots were written")
                # bf16/fp16 caches: the bytes as given.
                kc16 = torch.full((nblocks, bs, heads, d), float("nan"), device="cuda", dtype=dtype)
                vc16 = torch.full_like(kc16, float("nan"))
                op(kc16, vc16, key, value, slots, None, None)
                torch.cuda.synchronize()
                kv16 = kc16.view(capacity, heads, d)
                if not (torch.equal(kv16[rows].view(torch.int16), key[on].contiguous().view(torch.int16)) and
                        torch.equal(vc16.view(capacity, heads, d)[rows], value[on])):
                    problems.append(f"{DT_NAMES[dtype]} cache is not the input")
                if not bool(torch.isnan(kv16[untouched].float()).all()):
                    problems.append(f"{DT_NAMES[dtype]} cache: skipped rows written")
                res.add("paged_kv_cache_write", target, DT_NAMES[dtype], cls, name, not problems, float(diff), None,
                        "; ".join(problems) or f"{int(on.sum())} tokens written byte-exact, skipped rows untouched")
            except Exception as e:  # noqa: BLE001 - any failure is this case's finding
                res.add("paged_kv_cache_write", target, DT_NAMES[dtype], cls, name, False,
                        detail=f"{type(e).__name__}: {e}")
    check_cache_write_every_value(res, op, target, gen)
    if dec_op is not None:
        check_write_then_decode(res, op, dec_op, target, gen)


# Scales of the every-value check: round and odd ones, far from 1 both ways, one drawn at random
# (appended per call), and 2^-70 / 2^70, whose quotients reach float32's range limits (where a
# kernel dividing by a reciprocal must fall back to the division).
EVERY_VALUE_SCALES = [1.0, 0.02, 0.03, 3.7, 1e-3, 448.0, 1.0 / 3.0, 2.0 ** -70, 2.0 ** 70]


def check_cache_write_every_value(res, op, target, gen):
    """Every 16-bit pattern of bf16 and fp16 (keys: ascending, values: descending) quantized with
    each of EVERY_VALUE_SCALES: byte for byte PyTorch's quantize (x / scale in float32, IEEE
    division), NaN patterns as a NaN byte: every input rounds as the division does, whatever way
    the kernel divides."""
    scales = EVERY_VALUE_SCALES + [float(torch.rand(1, generator=torch.Generator().manual_seed(11)).item() * 50 + 0.01)]
    # The patterns once (512 tokens: the CUDA kernel's one-token CTAs, which divide) and 9 times
    # over (4608 tokens: its CTAs of several tokens, which multiply by the reciprocal and correct).
    for dtype, reps in itertools.product((torch.bfloat16, torch.float16), (1, 9)):
        bits = torch.arange(-32768, 32768, device="cuda", dtype=torch.int32).to(torch.int16)
        tokens = 512 * reps
        key = bits.view(dtype).view(512, 1, 128).repeat(reps, 1, 1)
        value = bits.flip(0).view(dtype).view(512, 1, 128).repeat(reps, 1, 1)
        slots = torch.arange(tokens, device="cuda", dtype=torch.int32)
        bad, nan_bad = [], 0
        for sc in scales:
            scale = torch.tensor([sc], device="cuda", dtype=torch.float32)
            kc = torch.zeros(tokens // 16, 16, 1, 128, device="cuda", dtype=torch.uint8)
            vc = torch.zeros_like(kc)
            op(kc, vc, key, value, slots, scale, scale)
            torch.cuda.synchronize()
            for got, x in ((kc.view(tokens, 1, 128), key), (vc.view(tokens, 1, 128), value)):
                nan = torch.isnan(x.float())
                diff = int(((got != quantize(x, scale)) & ~nan).sum().item())
                nan_bad += int(((got[nan] & 0x7F) != 0x7F).sum().item())
                if diff:
                    bad.append(f"scale {sc:g}: {diff}")
        problems = ([f"bytes differing from PyTorch's quantize: {', '.join(bad)}"] if bad else []) + \
            ([f"{nan_bad} NaN inputs not written as a NaN byte"] if nan_bad else [])
        res.add("paged_kv_cache_write", target, DT_NAMES[dtype], "every value",
                f"65536 patterns x {len(scales)} scales, {tokens} tokens",
                not problems, None, None, "; ".join(problems) or "every byte equals PyTorch's quantize")


def check_write_then_decode(res, write_op, dec_op, target, gen):
    """An engine's step: write 1 new token a sequence into the FP8 cache, then decode over it."""
    dtype, b, hq, hkv, d, bs = torch.bfloat16, 8, 32, 8, 128, 16
    name = f"b{b} h{hq}/{hkv} d{d}"
    try:
        lens = [int(x) for x in torch.randint(1, 900, (b,), generator=torch.Generator().manual_seed(3))]
        q, kc, vc, ks, vs, table, seq, out, lse, ws = make_paged_fp8(b, 1, hq, hkv, d, bs, lens, dtype, gen, "head",
                                                                     "normal", max_blocks=64)
        new_k = torch.randn(b, hkv, d, device="cuda", generator=gen).to(dtype)
        new_v = torch.randn(b, hkv, d, device="cuda", generator=gen).to(dtype)
        pos = torch.tensor(lens, device="cuda") - 1  # the new token is the last key
        slots = (table[torch.arange(b, device="cuda"), pos // bs].long() * bs + pos % bs).to(torch.int64)
        write_op(kc, vc, new_k, new_v, slots, ks, vs)
        dec_op(out, lse, q, kc, vc, ks, vs, table, seq, ws, 1.0 / math.sqrt(d), -1, 0.0)
        torch.cuda.synchronize()
        ref_o, ref_l, tp_o = decode_refs(q, kc, vc, ks, vs, table, seq, 1.0 / math.sqrt(d), -1, 0.0)
        seen = torch.isfinite(ref_l).transpose(1, 2).unsqueeze(-1)
        tol = 2.0 * (tp_o - ref_o).abs().masked_fill(~seen, 0).max().item() + 1e-5
        err, _, problems = errors(out, lse, ref_o, ref_l, seen)
        wrote = torch.equal(kc.view(-1, hkv, d)[slots], quantize(new_k, ks))
        if not wrote:
            problems.append("the written keys are not PyTorch's quantize")
        if err > tol:
            problems.append(f"err {err:.2e} > tol {tol:.2e}")
        res.add("paged_kv_cache_write", target, "bf16", "write then decode", name, not problems, err, tol,
                "; ".join(problems) or "written, then decoded within the rule")
    except Exception as e:  # noqa: BLE001 - any failure is this case's finding
        res.add("paged_kv_cache_write", target, "bf16", "write then decode", name, False,
                detail=f"{type(e).__name__}: {e}")


# --- attention_varlen_fwd_fp8 --------------------------------------------------------------------

VARLEN_CASES = [  # (class, lens_q, lens_k, hq, hkv, d, causal, window, softcap)
    ("varlen fp8 kv", [5, 1, 0, 37, 130], [9, 1, 4, 37, 300], 8, 2, 128, False, -1, 0.0),
    ("varlen fp8 kv causal", [5, 1, 0, 37, 130], [9, 1, 4, 37, 300], 8, 2, 128, True, -1, 0.0),
    ("varlen fp8 kv window softcap", [64, 3, 200], [64, 80, 200], 4, 4, 64, True, 17, 10.0),
    ("varlen fp8 kv mqa d256", [7, 33], [500, 33], 6, 1, 256, False, 40, 0.0),
]


# FP8 prefill (an e4m3 q too; the sm90a build's FP8 wgmma kernel): the varlen grid above, head dims
# 32-256, empty key sequences, multi-block sequences (pipeline, causal tiles), scales far from 1 and
# values at e4m3's limits. (class, lens_q, lens_k, hq, hkv, d, causal, window, softcap, scale ranges
# of q and k, values.) The q and k scales are far from 1 but their products keep the scores at a
# model's magnitudes (|s| up to ~100: NORMAL gives q_scale k_scale in [0.1, 10] on N(0, 1) values;
# FAR [0.1, 10] from q scales near 1e-3 and k scales near 300; LIMITS [1e-5, 1e-3] on values of
# which a third saturate at 448).
NORMAL = ((0.05, 0.5), (2.0, 20.0))
FAR = ((1e-3, 1e-2), (100.0, 1000.0))
LIMITS = ((1e-4, 1e-3), (0.1, 1.0))
PREFILL_CASES = [(c[0].replace("kv", "prefill"),) + c[1:] + (NORMAL, "normal") for c in VARLEN_CASES] + [
    ("fp8 prefill empty k", [5, 3, 9], [0, 20, 0], 4, 2, 128, False, -1, 0.0, NORMAL, "normal"),
    ("fp8 prefill no keys", [5, 3], [0, 0], 4, 2, 128, True, -1, 0.0, NORMAL, "normal"),
    ("fp8 prefill long", [1000, 513, 7], [1000, 2000, 300], 8, 2, 128, False, -1, 0.0, NORMAL, "normal"),
    ("fp8 prefill long causal", [1000, 513, 7], [1000, 2000, 300], 8, 2, 128, True, -1, 0.0, NORMAL, "normal"),
    # GQA long enough that the workspace is used at d <= 128: group x max_seqlen_q 6400 (12800 causal).
    ("fp8 prefill gqa ws", [1600, 300, 9], [1600, 2100, 300], 16, 4, 128, False, -1, 0.0, NORMAL, "normal"),
    ("fp8 prefill gqa ws causal", [1600, 5], [1700, 1], 32, 4, 128, True, -1, 0.0, NORMAL, "normal"),
    ("fp8 prefill gqa ws d64", [800, 31], [900, 1000], 16, 2, 64, False, -1, 0.0, NORMAL, "normal"),
    ("fp8 prefill long d256", [300, 700], [700, 301], 4, 4, 256, True, -1, 0.0, NORMAL, "normal"),
    ("fp8 prefill long d64", [400, 77], [700, 500], 6, 2, 64, True, -1, 0.0, NORMAL, "normal"),
    ("fp8 prefill window", [600, 5], [900, 1], 4, 1, 128, True, 100, 0.0, NORMAL, "normal"),
    ("fp8 prefill softcap d256", [200, 1], [333, 70], 4, 2, 256, False, -1, 30.0, NORMAL, "normal"),
    ("fp8 prefill scales far", [130, 64], [300, 64], 8, 4, 128, True, -1, 0.0, FAR, "normal"),
    ("fp8 prefill scales far d256", [70, 64], [300, 64], 4, 2, 256, False, -1, 0.0, FAR, "normal"),
    ("fp8 prefill limits", [130, 64], [300, 64], 8, 4, 128, False, -1, 0.0, LIMITS, "limits"),
    ("fp8 prefill limits d256", [77, 200], [200, 77], 4, 2, 256, True, -1, 0.0, LIMITS, "limits"),
] + [("fp8 prefill head dims", [37, 130], [300, 1], 4, 2, d, True, -1, 0.0, NORMAL, "normal")
     for d in range(32, 257, 16)]


FP8_QK_REL = 2.0 ** -10  # the FP8 prefill's lse rule: its share of the largest |score|


def vt_workspace_bytes(total_k, batch, hq, hkv, d, max_q, causal):
    """The docs' size of attention_varlen_fwd_fp8's workspace (sm90a, e4m3 q): V transposed,
    heads_kv x head_dim x (total_k + batch (B - 1), rounded up to 128) bytes (B: the kernel's key block,
    128 at head dims up to 64, 192 up to 128, 128 above), after a header of (batch + 1) int32 rounded
    up to 128 bytes; 0 where the pre-pass does not pay: head dims up to 128 below (hq / hkv) x max_q
    of 6144 (12288 causal)."""
    if d <= 128 and (hq // hkv) * max_q < (12288 if causal else 6144):
        return 0
    up = lambda n, m: (n + m - 1) // m * m
    block = 192 if 64 < d <= 128 else 128
    return up((batch + 1) * 4, 128) + hkv * d * up(total_k + batch * (block - 1), 128)


def prefill_workspace(op, args, problems):
    """The workspace kh_op_workspace_size asks for (checked against the docs' rule), filled with e4m3
    NaN bytes (0x7f), so that a column the pre-pass should have zeroed shows up as NaN rows."""
    out, lse, q, k, v, qsc, ks, vs, cu_q, cu_k, max_q, max_k, scale, causal, window, softcap = args
    asked = op.workspace_size(out, lse, q, k, v, qsc, ks, vs, cu_q, cu_k, max_q, max_k, scale, causal, window,
                              softcap, None)
    rule = vt_workspace_bytes(k.shape[0], cu_k.numel() - 1, q.shape[1], k.shape[1], k.shape[2], max_q, causal)
    if asked != rule:
        problems.append(f"kh_op_workspace_size {asked} bytes, the docs' rule {rule}")
    return torch.full((max(asked, rule, 1),), 0x7F, device="cuda", dtype=torch.uint8)


def fp8_values(shape, scale, values, gen):
    """e4m3 bytes whose dequantized values are N(0, 1) x scale (scale per head on dim -2), or with
    values 'limits': a third saturated at +-448 x scale, a third subnormal, a third x100."""
    x = torch.randn(*shape, device="cuda", generator=gen)
    if values == "limits":
        pick = torch.randint(0, 3, x.shape, device="cuda", generator=gen)
        x = torch.where(pick == 0, x * 600.0, torch.where(pick == 1, x * 2.0 ** -8, x * 100.0))
    sv = scale.view(-1, 1) if scale.numel() > 1 else scale
    return quantize(x * sv, scale)


def varlen_fp8_case(res, op, target, gen, dtype, case, q_fp8, workspace=False):
    """One attention_varlen_fwd_fp8 call (q bf16/fp16, or e4m3 with q_fp8) against ref64 by the
    pass rule; the float32 rule rounds P to e4m3 when q is e4m3 (the kernel's P.V operand). With
    workspace (e4m3 q): the call also runs with the workspace the op asks for (V transposed by a
    pre-pass), whose out and lse must be bit-identical to the call without it (the kernel reads the
    same bytes for P V either way)."""
    cls, lq, lk, hq, hkv, d, causal, window, softcap = case[:9]
    (q_lo, q_hi), (k_lo, k_hi) = case[9] if len(case) > 9 else ((1e-3, 300.0), (1e-3, 300.0))
    values = case[10] if len(case) > 10 else "normal"
    name = f"lq{lq} lk{lk} h{hq}/{hkv} d{d} causal{int(causal)} w{window} cap{softcap:g}"
    if q_fp8:
        name += f" q_scale[{q_lo:g},{q_hi:g}] k_scale[{k_lo:g},{k_hi:g}] {values}"
    cu_q = torch.tensor([0] + list(itertools.accumulate(lq)), device="cuda", dtype=torch.int32)
    cu_k = torch.tensor([0] + list(itertools.accumulate(lk)), device="cuda", dtype=torch.int32)
    tq, tk = int(cu_q[-1]), int(cu_k[-1])
    group = hq // hkv
    if q_fp8:
        qsc = make_scales("head", hkv, gen, q_lo, q_hi)
        ks, vs = make_scales("head", hkv, gen, k_lo, k_hi), make_scales("tensor", hkv, gen)
        q = fp8_values((tq, hq, d), qsc.repeat_interleave(group), values, gen)
        k = fp8_values((tk, hkv, d), ks, values, gen)
        v = fp8_values((tk, hkv, d), vs, values, gen)
        q_ref = dequant(q, qsc.repeat_interleave(group))
    else:
        qsc = None
        q = torch.randn(tq, hq, d, device="cuda", generator=gen).to(dtype)
        ks, vs = make_scales("head", hkv, gen), make_scales("tensor", hkv, gen)
        k = quantize(torch.randn(tk, hkv, d, device="cuda", generator=gen) * ks.view(1, -1, 1), ks)
        v = quantize(torch.randn(tk, hkv, d, device="cuda", generator=gen) * vs, vs)
        q_ref = q
    out = torch.full((tq, hq, d), float("nan"), device="cuda", dtype=dtype)
    lse = torch.full((hq, tq), float("nan"), device="cuda", dtype=torch.float32)
    scale = 1.0 / math.sqrt(d)
    op(out, lse, q, k, v, qsc, ks, vs, cu_q, cu_k, max(lq), max(lk), scale, causal, window, softcap)
    torch.cuda.synchronize()
    ws_problems = []
    if workspace:
        name += " workspace"
        call = [out, lse, q, k, v, qsc, ks, vs, cu_q, cu_k, max(lq), max(lk), scale, causal, window, softcap]
        ws = prefill_workspace(op, call, ws_problems)
        out_plain, lse_plain = out.clone(), lse.clone()
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        op(*call, ws)
        torch.cuda.synchronize()
        if not (torch.equal(out.view(torch.int16), out_plain.view(torch.int16)) and
                torch.equal(lse.nan_to_num(), lse_plain.nan_to_num())):
            diff = (out.float() - out_plain.float()).abs().nan_to_num(float("inf")).max().item()
            ws_problems.append(f"with the workspace out/lse differ from the call without it (max |diff| {diff:.2e})")
    ref_o = torch.zeros(tq, hq, d, device="cuda", dtype=torch.float64)
    ref_l = torch.full((hq, tq), -math.inf, device="cuda", dtype=torch.float64)
    tp_o = torch.zeros_like(ref_o)
    tp_l = ref_l.clone()
    max_score = 0.0
    for s in range(len(lq)):
        q0, k0, nq, nk = int(cu_q[s]), int(cu_k[s]), lq[s], lk[s]
        if nq == 0 or nk == 0:  # no key: out 0 and lse -inf, as ref_o / ref_l hold
            continue
        kd = dequant(k[k0:k0 + nk], ks).transpose(0, 1)
        vd = dequant(v[k0:k0 + nk], vs).transpose(0, 1)
        mask = visible(nk, nq, window, q.device, causal=causal)
        qs = q_ref[q0:q0 + nq].transpose(0, 1)
        if q_fp8:  # the largest |score| any row sees: the scale of FP8 wgmma's accumulation error
            sc = torch.matmul(qs.double(), kd.repeat_interleave(group, dim=0).transpose(-1, -2)).abs() * scale
            max_score = max(max_score, sc.masked_fill(~mask, 0).max().item())
        o, l = attention_ref(qs, kd, vd, mask, scale, softcap)
        rows = mask.any(-1)
        o[~rows] = 0
        ref_o[q0:q0 + nq], ref_l[:, q0:q0 + nq] = o, l
        o2, l2 = attention_ref(qs, kd, vd, mask, scale, softcap, operand_dtype=dtype, p_dtype=E4M3 if q_fp8 else None)
        o2[~rows] = 0
        tp_o[q0:q0 + nq], tp_l[:, q0:q0 + nq] = o2, l2
    seen = torch.isfinite(ref_l).transpose(0, 1).unsqueeze(-1)
    torch_err = (tp_o - ref_o).abs().masked_fill(~seen, 0).max().item() if tq else 0.0
    lse_tol = lse_tolerance(tp_l, ref_l)
    if q_fp8:
        # FP8 wgmma sums the e4m3 products of q.k with fewer mantissa bits than float32 (lse errors of
        # 2-4e-4 x the largest |score| on the H100), so lse is held to that scale too; the grid keeps
        # the scores at a model's magnitudes (|s| up to ~100).
        lse_tol += FP8_QK_REL * max_score
    err, lse_err, problems = errors(out, lse, ref_o, ref_l, seen, lse_tol)
    problems += ws_problems
    tol = 2.0 * torch_err + 1e-5
    if err > tol:
        problems.append(f"err {err:.2e} > tol {tol:.2e}")
    res.add("attention_varlen_fwd_fp8", target, DT_NAMES[dtype], cls, name, not problems, err, tol,
            "; ".join(problems) or f"torch {torch_err:.2e} lse_err {lse_err:.1e}")
    return (out, lse, q, k, v, qsc, ks, vs, cu_q, cu_k, max(lq), max(lk), scale, causal, window, softcap) + \
        ((ws,) if workspace else ())


def check_varlen_fp8(res, op, target, gen, expect_error=None):
    for dtype in (torch.bfloat16, torch.float16):
        for case in VARLEN_CASES:
            try:
                varlen_fp8_case(res, op, target, gen, dtype, case, q_fp8=False)
            except Exception as e:  # noqa: BLE001 - any failure is this case's finding
                res.add("attention_varlen_fwd_fp8", target, DT_NAMES[dtype], case[0], str(case[1:]), False,
                        detail=f"{type(e).__name__}: {e}")
    if "sm90a" in target:
        check_fp8_prefill(res, op, target, gen)
    elif expect_error is not None:
        # An e4m3 q (FP8 prefill): refused before launch where there are no FP8 tensor cores (sm80).
        q8 = torch.zeros(16, 4, 64, device="cuda", dtype=torch.uint8)
        k8 = torch.zeros(16, 2, 64, device="cuda", dtype=torch.uint8)
        out = torch.full((16, 4, 64), float("nan"), device="cuda", dtype=torch.bfloat16)
        one = torch.ones(1, device="cuda")
        cu = torch.tensor([0, 16], device="cuda", dtype=torch.int32)
        expect_error(res, target, "e4m3 q (FP8 prefill) refused",
                     lambda: op(out, None, q8, k8, k8, one, one, one, cu, cu, 16, 16, 0.1, True, -1, 0.0), out,
                     kh.KH_ERROR_UNSUPPORTED, "q", "attention_varlen_fwd_fp8")


def check_fp8_prefill(res, op, target, gen, cases=None):
    """The FP8 prefill grid (PREFILL_CASES; quick: one case per class) for both out dtypes, each case
    without and with the workspace, then a CUDA graph replay of one call with the workspace (the
    pre-pass and the kernel), bit-identical to the eager call, and sequences that overlap in k (the
    workspace then too small for their padded lengths: the kernel transposes itself)."""
    cases = cases or ([c for c in PREFILL_CASES if c[5] in (64, 128, 256)][:12] if quick() else PREFILL_CASES)
    last = None
    for dtype in (torch.bfloat16, torch.float16):
        for case in cases:
            try:
                last = varlen_fp8_case(res, op, target, gen, dtype, case, q_fp8=True, workspace=True)
            except Exception as e:  # noqa: BLE001 - any failure is this case's finding
                res.add("attention_varlen_fwd_fp8", target, DT_NAMES[dtype], case[0], str(case[1:]), False,
                        detail=f"{type(e).__name__}: {e}")
    if last is None:
        return
    args = list(last)
    eager_o, eager_l = args[0].clone(), args[1].clone()
    try:
        graph = torch.cuda.CUDAGraph()
        args[0].fill_(float("nan"))
        with torch.cuda.graph(graph):
            op(*args)
        graph.replay()
        torch.cuda.synchronize()
        same = torch.equal(args[0].view(torch.uint8), eager_o.view(torch.uint8)) and \
            torch.equal(args[1].nan_to_num(), eager_l.nan_to_num())
        res.add("attention_varlen_fwd_fp8", target, "-", "fp8 prefill graph", "replay == eager", same,
                detail="bit-identical" if same else "replay differs from the eager call")
    except Exception as e:  # noqa: BLE001
        res.add("attention_varlen_fwd_fp8", target, "-", "fp8 prefill graph", "replay == eager", False,
                detail=f"{type(e).__name__}: {e}")
    try:
        check_fp8_prefill_overlap(res, op, target, gen)
    except Exception as e:  # noqa: BLE001
        res.add("attention_varlen_fwd_fp8", target, "-", "fp8 prefill overlap", "workspace", False,
                detail=f"{type(e).__name__}: {e}")
    check_fp8_prefill_short_workspace(res, op, target, gen)


def check_fp8_prefill_overlap(res, op, target, gen):
    """Sequences whose keys overlap (cu_seqlens_k not ascending: the clamping rules allow it) pad to
    more columns than the workspace holds: the kernel must transpose in shared memory then, and give
    the call without a workspace's bits. Also a call whose sequences fit, for the contrast."""
    d, hq, hkv = 256, 4, 2  # a head dim the workspace is used at
    for label, cu_k_list, lens_q in (("overlapping k", [0, 600, 0, 600, 0, 600], [70, 0, 130, 0, 200]),
                                     ("ascending k", [0, 300, 301, 900, 900, 1000], [70, 5, 130, 0, 200])):
        cu_q = torch.tensor([0] + list(itertools.accumulate(lens_q)), device="cuda", dtype=torch.int32)
        cu_k = torch.tensor(cu_k_list, device="cuda", dtype=torch.int32)
        tq, tk = int(cu_q[-1]), max(cu_k_list)
        one = torch.ones(1, device="cuda")
        q = fp8_values((tq, hq, d), one, "normal", gen)
        k = fp8_values((tk, hkv, d), one, "normal", gen)
        v = fp8_values((tk, hkv, d), one, "normal", gen)
        max_k = max(max(0, b - a) for a, b in zip(cu_k_list, cu_k_list[1:]))
        outs = []
        for with_ws in (False, True):
            out = torch.full((tq, hq, d), float("nan"), device="cuda", dtype=torch.bfloat16)
            lse = torch.full((hq, tq), float("nan"), device="cuda", dtype=torch.float32)
            call = [out, lse, q, k, v, one, one, one, cu_q, cu_k, max(lens_q), max_k, d ** -0.5, True, -1, 0.0]
            problems = []
            if with_ws:
                call.append(prefill_workspace(op, call, problems))
            op(*call)
            torch.cuda.synchronize()
            outs.append((out, lse))
        (o0, l0), (o1, l1) = outs
        same = torch.equal(o0.view(torch.int16), o1.view(torch.int16)) and torch.equal(l0.nan_to_num(), l1.nan_to_num())
        finite = bool(torch.isfinite(o0).all())
        res.add("attention_varlen_fwd_fp8", target, "bf16", "fp8 prefill overlap", f"{label} workspace",
                same and finite and not problems,
                detail="; ".join(problems) or ("bit-identical to the call without it" if same and finite else
                                               "differs from the call without it, or NaN rows"))


def check_fp8_prefill_short_workspace(res, op, target, gen):
    """A workspace one byte shorter than kh_op_workspace_size asks for (at d256, where one is used) is
    refused before launch, naming 'workspace', with the output left as it was."""
    d, hq, hkv, n = 256, 4, 2, 300
    one = torch.ones(1, device="cuda")
    q = fp8_values((n, hq, d), one, "normal", gen)
    k = fp8_values((n, hkv, d), one, "normal", gen)
    cu = torch.tensor([0, n], device="cuda", dtype=torch.int32)
    out = torch.full((n, hq, d), float("nan"), device="cuda", dtype=torch.bfloat16)
    call = [out, None, q, k, k, one, one, one, cu, cu, n, n, d ** -0.5, True, -1, 0.0]
    asked = op.workspace_size(*call, None)
    if asked <= 0:
        res.add("attention_varlen_fwd_fp8", target, "-", "bad args", "workspace one byte short", False,
                detail=f"kh_op_workspace_size asked {asked} bytes at d{d}; expected a workspace")
        return
    ws = torch.zeros(asked - 1, device="cuda", dtype=torch.uint8)
    expect_error(res, target, "workspace one byte short", lambda: op(*call, ws), out, kh.KH_ERROR_INVALID_ARGUMENT,
                 "workspace", "attention_varlen_fwd_fp8")


def check_fp8_bad_args(res, op, target, expect_error):
    INV, UNS = kh.KH_ERROR_INVALID_ARGUMENT, kh.KH_ERROR_UNSUPPORTED
    gen = torch.Generator(device="cuda")
    gen.manual_seed(9)
    q, kc, vc, ks, vs, table, seq, out, lse, ws = make_paged_fp8(1, 1, 8, 2, 128, 16, [4000], torch.bfloat16, gen)
    args = lambda **kw: [kw.get(n, x) for n, x in (("out", out), ("lse", lse), ("q", q), ("k", kc), ("v", vc),
                                                   ("ks", ks), ("vs", vs), ("t", table), ("s", seq), ("w", ws),
                                                   ("scale", 0.1), ("win", -1), ("cap", 0.0))]
    name = "attention_decode_paged_fp8"
    expect_error(res, target, "k_cache bf16", lambda: op(*args(k=kc.to(torch.bfloat16))), out, INV, "k_cache", name)
    expect_error(res, target, "k_scale of 3", lambda: op(*args(ks=torch.ones(3, device="cuda"))), out, INV, "k_scale",
                 name)
    expect_error(res, target, "v_scale missing", lambda: op(*args(vs=None)), out, INV, "v_scale", name)
    expect_error(res, target, "k_scale on the CPU", lambda: op(*args(ks=ks.cpu())), out, INV, "k_scale", name)
    expect_error(res, target, "workspace one float short", lambda: op(*args(w=ws[:-1])), out, INV, "workspace", name)
    q40 = torch.randn(1, 1, 8, 40, device="cuda").to(torch.bfloat16)
    k40 = torch.zeros(kc.shape[0], 16, 2, 40, device="cuda", dtype=torch.uint8)
    o40 = torch.full((1, 1, 8, 40), float("nan"), device="cuda", dtype=torch.bfloat16)
    expect_error(res, target, "head_dim 40", lambda: op(*args(out=o40, q=q40, k=k40, v=k40)), o40, UNS, "q", name)


# --- entry ---------------------------------------------------------------------------------------

def expect_error(res, target, case, fn, poisoned, status, arg, op_name):
    """fn() must raise kh.Error with `status` (None: any) naming `arg`, and leave `poisoned` (NaN) as is."""
    try:
        fn()
    except kh.Error as e:
        problems = []
        if status is not None and e.status != status:
            problems.append(f"status {e.status_name}, expected {kh.Error(status, '').status_name}")
        if arg and f"'{arg}'" not in e.message:
            problems.append(f"message does not name '{arg}'")
        torch.cuda.synchronize()
        if not bool(torch.isnan(poisoned.float()).all()):
            problems.append("the output was written (a kernel ran)")
        res.add(op_name, target, "-", "bad args", case, not problems, detail="; ".join(problems) or str(e))
        return
    except Exception as e:  # noqa: BLE001 - any other failure is a finding
        res.add(op_name, target, "-", "bad args", case, False, detail=f"{type(e).__name__}: {e}")
        return
    res.add(op_name, target, "-", "bad args", case, False, detail="accepted; expected kh.Error")


def check_decode_fp8(res, kernels, gen, quick_run, targets):
    q = quick_run or quick()
    for target in targets:
        k = kernels[("attention", target)]
        op = k.op("attention_decode_paged_fp8")
        for dtype in (torch.bfloat16, torch.float16):
            for case in (DECODE_CASES[:2] + DECODE_CASES[-3:] if q else DECODE_CASES):
                run_decode_case(res, op, target, dtype, case, gen)
            for d in ((64, 128, 256) if q else range(32, 257, 16)):
                run_decode_case(res, op, target, dtype, ("head dims", 2, 2, 4, 2, d, 16, [300, 1], -1, 0.0, "head",
                                                         "normal"), gen)
        check_decode_fp8_graph(res, op, target, gen)
        check_fp8_bad_args(res, op, target, expect_error)
        check_cache_write(res, k.op("paged_kv_cache_write"), target, gen, dec_op=op)
        check_varlen_fp8(res, k.op("attention_varlen_fwd_fp8"), target, gen, expect_error)
    check_decode_fp8_oracle(res, kernels, gen, targets)
    cpu = kernels[("attention", "cpu")]
    check_cache_write_cpu(res, cpu.op("paged_kv_cache_write"), gen)


def check_cache_write_cpu(res, op, gen):
    """The CPU build's write against PyTorch's quantize (the same rule, on host tensors)."""
    for dtype in (torch.bfloat16, torch.float16):
        key = (torch.randn(40, 4, 64, generator=torch.Generator().manual_seed(5)) * 300).to(dtype)
        value = torch.randn(40, 4, 64, generator=torch.Generator().manual_seed(6)).to(dtype)
        ks = torch.tensor([0.5, 1.0, 2.0, 0.003]).float()
        vs = torch.tensor([0.01]).float()
        slots = torch.arange(40, dtype=torch.int32) * 2
        kc = torch.zeros(10, 8, 4, 64, dtype=torch.uint8)
        vc = torch.zeros_like(kc)
        name = "t40 h4 d64"
        try:
            op(kc, vc, key, value, slots, ks, vs)
            diff = (kc.view(80, 4, 64)[slots.long()] != quantize(key, ks)).sum().item()
            diff += (vc.view(80, 4, 64)[slots.long()] != quantize(value, vs)).sum().item()
            res.add("paged_kv_cache_write", "cpu", DT_NAMES[dtype], "round trip", name, diff == 0, float(diff), None,
                    f"{diff} bytes differ from PyTorch's quantize")
        except kh.Error as e:
            res.add("paged_kv_cache_write", "cpu", DT_NAMES[dtype], "round trip", name, False, detail=str(e))
