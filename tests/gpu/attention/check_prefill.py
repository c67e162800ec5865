"""check_prefill.py: the prefill ops of kernels-community/attention 1.1 on the GPU, called from
check_through_kh.py with the builds it loaded through kh.load_kernel(): attention_fwd at every
head dim of 1.1 (32..256 in steps of 8, and v's head dim 128 with q's 192) and
attention_varlen_fwd.

Per target (sm90a, sm80) x dtype x shape class: outputs poisoned with NaN, random inputs;
  max|out - ref64| <= 2 * max|torch - ref64| + 1e-5 over rows that see a key, where ref64 is a
  float64 computation on the same rounded inputs per sequence and torch PyTorch at the same
  precision (SDPA with the bottom-right / window mask; with a soft-cap, matmul -> cap * tanh ->
  float32 softmax -> matmul in the dtype); lse within 1e-3 of ref64's; rows that see no key
  exactly 0 with lse -inf; packed rows outside every sequence (filled with NaN in q, k and v,
  as memory a caller left uninitialised could be) neither read into any output nor written.
Varlen shapes: lengths 0, 1, odd, q and k lengths that differ, longer than one tile, a sequence
past the last (the V rows a tile reads beyond its sequence), GQA/MQA, window, soft-cap, every
head-dim bucket and lengths below it, strided cu_seqlens, max_seqlen above the longest; on
sm90a, full attention on the persistent grid (the tile list each CTA builds from cu_seqlens:
several tiles a CTA, hundreds of sequences) and past the list's sequence limit (one CTA a tile).
Also: the CPU build against ref64 and the GPU builds against the CPU build; CUDA graph capture
then replay, bit-identical to the eager call, and a replay after cu_seqlens and q changed in
place (nothing read on the host); bad calls refused with the argument named, output untouched.
"""
import math

import torch
import torch.nn.functional as F

import kh

DT_NAMES = {torch.float16: "f16", torch.bfloat16: "bf16"}
DEVICE = "cuda"  # where the checks make their tensors (a CPU smoke run of this file sets "cpu")


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()
HEAD_DIMS = [(d, d) for d in range(32, 257, 8)] + [(192, 128)]
FAST_DIMS = [(64, 64), (80, 80), (96, 96), (128, 128), (192, 192), (256, 256), (192, 128)]


# --- references (one sequence: q (sq, hq, d), k (sk, hkv, d), v (sk, hkv, dv)) ----------

def visible(sq, sk, causal, window, device):
    """(sq, sk) bool: query i (key position i + sk - sq) sees key j."""
    i = torch.arange(sq, device=device).view(-1, 1)
    j = torch.arange(sk, device=device).view(1, -1)
    pos = i + (sk - sq)
    m = torch.ones(sq, sk, dtype=torch.bool, device=device)
    if causal:
        m &= j <= pos
    if window >= 0:
        m &= j >= pos - window
    return m


def seq_reference(q, k, v, scale, causal, window, softcap):
    """float64 out (sq, hq, dv) and lse (hq, sq); rows that see no key: 0 and -inf."""
    sq, hq, _ = q.shape
    sk, hkv, dv = v.shape
    if sq == 0 or sk == 0:
        return (torch.zeros(sq, hq, dv, device=q.device, dtype=torch.float64),
                torch.full((hq, sq), -math.inf, device=q.device, dtype=torch.float64))
    q64 = q.double().transpose(0, 1)
    k64 = k.double().transpose(0, 1).repeat_interleave(hq // hkv, dim=0)
    v64 = v.double().transpose(0, 1).repeat_interleave(hq // hkv, dim=0)
    s = torch.matmul(q64, k64.transpose(-1, -2)) * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    s = s.masked_fill(~visible(sq, sk, causal, window, q.device), -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.nan_to_num(torch.exp(s - lse.masked_fill(torch.isinf(lse), 0).unsqueeze(-1)), nan=0.0)
    return torch.matmul(p, v64).transpose(0, 1), lse


def seq_same_precision(q, k, v, scale, causal, window, softcap):
    """PyTorch in q's dtype, as float64 (sq, hq, dv); rows that see no key: 0."""
    sq, hq, _ = q.shape
    sk, hkv, dv = v.shape
    if sq == 0 or sk == 0:
        return torch.zeros(sq, hq, dv, device=q.device, dtype=torch.float64)
    qt, kt, vt = (t.transpose(0, 1) for t in (q, k, v))
    mask = visible(sq, sk, causal, window, q.device)
    o = None
    if softcap == 0:
        try:
            o = F.scaled_dot_product_attention(qt.unsqueeze(0), kt.unsqueeze(0), vt.unsqueeze(0), attn_mask=mask,
                                               scale=scale, enable_gqa=hkv != hq)[0]
        except (RuntimeError, ValueError, TypeError):
            o = None  # no SDPA backend for this shape: the same math by hand below
    if o is None:
        kk = kt.repeat_interleave(hq // hkv, dim=0)
        vv = vt.repeat_interleave(hq // hkv, dim=0)
        sc = torch.matmul(qt, kk.transpose(-1, -2)) * scale
        if softcap > 0:
            sc = softcap * torch.tanh(sc / softcap)
        pr = torch.softmax(sc.float().masked_fill(~mask, -math.inf), dim=-1).to(q.dtype)
        o = torch.matmul(pr, vv)
    return torch.nan_to_num(o.double(), nan=0.0).transpose(0, 1)


class Errors:
    """Accumulates one call's comparison over its sequences."""

    def __init__(self):
        self.err = self.torch_err = self.lse_err = 0.0
        self.problems = []

    def add(self, out, lse, ref_o, ref_lse, tp_o, check_lse=True):
        """out (sq, hq, dv), lse (hq, sq) or None of one sequence against its references."""
        if out.shape[0] == 0:
            return
        o = out.double()
        seen = torch.isfinite(ref_lse).transpose(0, 1).unsqueeze(-1)  # (sq, hq, 1)
        if bool(torch.isnan(o).any()):
            self.problems.append("NaN (unwritten or poisoned) outputs")
        self.err = max(self.err, (o - ref_o).abs().masked_fill(~seen, 0).max().item())
        self.torch_err = max(self.torch_err, (tp_o - ref_o).abs().masked_fill(~seen, 0).max().item())
        masked = o.masked_select(~seen.expand_as(o))
        if masked.numel() and not bool((masked == 0).all()):
            self.problems.append("rows that see no key are not exactly 0")
        if check_lse and lse is not None:
            inf_ref = torch.isinf(ref_lse)
            if bool(torch.isnan(lse).any()):
                self.problems.append("NaN lse")
            if not (bool((torch.isinf(lse) == inf_ref).all()) and bool((lse[inf_ref] < 0).all())):
                self.problems.append("lse -inf mismatch")
            fin = ~inf_ref
            if bool(fin.any()):
                self.lse_err = max(self.lse_err, (lse.double()[fin] - ref_lse[fin]).abs().max().item())

    def verdict(self, extra_tol=0.0):
        tol = 2.0 * self.torch_err + extra_tol + 1e-5
        problems = list(dict.fromkeys(self.problems))
        if self.err > tol:
            problems.append(f"err {self.err:.2e} > tol {tol:.2e}")
        if self.lse_err > 1e-3:
            problems.append(f"lse err {self.lse_err:.1e} > 1e-3")
        return tol, problems


# --- attention_fwd at every head dim ------------------------------------------------------

def check_head_dims(res, kernels, gen, quick, targets):
    """attention_fwd (1.1 head dims) against ref64 per batch entry."""
    dims = FAST_DIMS + [(40, 40), (136, 136), (200, 200)] if quick else HEAD_DIMS
    for target in targets:
        op = kernels[("attention", target)].op("attention_fwd")
        for dtype in (torch.bfloat16, torch.float16):
            for (d, dv) in dims:
                shapes = [(2, 97, 97, 4, 2, False), (2, 41, 130, 4, 2, True)]
                if (d, dv) in FAST_DIMS:
                    shapes.append((1, 300, 513, 8, 1, True))  # several tiles and key blocks, MQA
                if (d, dv) in FAST_DIMS and d >= 128 and not quick:
                    # sm90a's causal pair schedule past its tail: 36 heads x 8 pairs of 128-row
                    # tiles (17 of them: an odd count) fill more than two rounds of 132 CTAs.
                    shapes.append((1, 2176, 2176, 36, 4, True))
                for (b, sq, sk, hq, hkv, causal) in shapes:
                    name = f"d{d}/{dv} b{b} sq{sq} sk{sk} h{hq}/{hkv} {'causal' if causal else 'full'}"
                    cls = "head dims" if (d, dv) not in FAST_DIMS else "fast head dims"
                    try:
                        q = torch.randn(b, sq, hq, d, device=DEVICE, generator=gen).to(dtype)
                        k = torch.randn(b, sk, hkv, d, device=DEVICE, generator=gen).to(dtype)
                        v = torch.randn(b, sk, hkv, dv, device=DEVICE, generator=gen).to(dtype)
                        out = torch.full((b, sq, hq, dv), float("nan"), device=DEVICE, dtype=dtype)
                        lse = torch.full((b, hq, sq), float("nan"), device=DEVICE, dtype=torch.float32)
                        scale = 1.0 / math.sqrt(d)
                        op(out, lse, q, k, v, scale, causal)
                        sync()
                        e = Errors()
                        for i in range(b):
                            ref_o, ref_l = seq_reference(q[i], k[i], v[i], scale, causal, -1, 0.0)
                            tp_o = seq_same_precision(q[i], k[i], v[i], scale, causal, -1, 0.0)
                            e.add(out[i], lse[i], ref_o, ref_l, tp_o)
                        tol, problems = e.verdict()
                        res.add("attention_fwd", target, DT_NAMES[dtype], cls, name, not problems, e.err, tol,
                                "; ".join(problems) or f"torch {e.torch_err:.2e} lse_err {e.lse_err:.1e}")
                    except kh.Error as ex:
                        res.add("attention_fwd", target, DT_NAMES[dtype], cls, name, False, detail=str(ex))


# --- attention_varlen_fwd ------------------------------------------------------------------

class Packed:
    """Packed sequences: q (total_q, hq, d), k/v (total_k, hkv, d/dv), cu_seqlens, outputs
    poisoned with NaN; `tail` packed rows after the last sequence, NaN in q, k and v."""

    def __init__(self, lens_q, lens_k, hq, hkv, d, dv, dtype, gen, tail=0, cu_stride=1, max_extra=0, dev=None):
        dev = dev or DEVICE
        self.lens_q, self.lens_k = list(lens_q), list(lens_k)
        self.starts_q = [sum(self.lens_q[:i]) for i in range(len(self.lens_q))]
        self.starts_k = [sum(self.lens_k[:i]) for i in range(len(self.lens_k))]
        self.total_q, self.total_k = sum(self.lens_q) + tail, sum(self.lens_k) + tail
        self.q = torch.randn(self.total_q, hq, d, device=dev, generator=gen).to(dtype)
        self.k = torch.randn(self.total_k, hkv, d, device=dev, generator=gen).to(dtype)
        self.v = torch.randn(self.total_k, hkv, dv, device=dev, generator=gen).to(dtype)
        if tail:
            for t in (self.q, self.k, self.v):
                t[t.shape[0] - tail:] = float("nan")
        cu_q = torch.tensor([0] + [sum(self.lens_q[:i + 1]) for i in range(len(self.lens_q))], dtype=torch.int32)
        cu_k = torch.tensor([0] + [sum(self.lens_k[:i + 1]) for i in range(len(self.lens_k))], dtype=torch.int32)
        # A strided view (every cu_stride-th element of a larger buffer) when cu_stride > 1.
        self.cu_q = torch.zeros(cu_q.numel() * cu_stride, dtype=torch.int32, device=dev)[::cu_stride]
        self.cu_k = torch.zeros(cu_k.numel() * cu_stride, dtype=torch.int32, device=dev)[::cu_stride]
        self.cu_q.copy_(cu_q)
        self.cu_k.copy_(cu_k)
        self.max_q = max(self.lens_q, default=0) + max_extra
        self.max_k = max(self.lens_k, default=0) + max_extra
        self.out = torch.full((self.total_q, hq, dv), float("nan"), device=dev, dtype=dtype)
        self.lse = torch.full((hq, self.total_q), float("nan"), device=dev, dtype=torch.float32)

    def to_cpu(self):
        c = object.__new__(Packed)
        c.__dict__.update({k: (v.cpu() if torch.is_tensor(v) else v) for k, v in self.__dict__.items()})
        return c

    def call(self, op, scale, causal, window, softcap, with_lse=True, stream=None):
        self.out.fill_(float("nan"))
        self.lse.fill_(float("nan"))
        op(self.out, self.lse if with_lse else None, self.q, self.k, self.v, self.cu_q, self.cu_k, self.max_q,
           self.max_k, scale, causal, window, softcap, stream=stream)

    def compare(self, scale, causal, window, softcap, with_lse=True):
        """Errors of out / lse against ref64 and torch per sequence, plus the untouched rows."""
        e = Errors()
        covered = torch.zeros(self.total_q, dtype=torch.bool, device=self.out.device)
        for (q0, sq, k0, sk) in zip(self.starts_q, self.lens_q, self.starts_k, self.lens_k):
            q, k, v = self.q[q0:q0 + sq], self.k[k0:k0 + sk], self.v[k0:k0 + sk]
            ref_o, ref_l = seq_reference(q, k, v, scale, causal, window, softcap)
            # PyTorch's same-precision result on the GPU when there is one (a CPU copy of the
            # call, for the oracle, must not depend on CPU fp16 kernels).
            dev = "cuda" if torch.cuda.is_available() and DEVICE == "cuda" else q.device
            tp_o = seq_same_precision(q.to(dev), k.to(dev), v.to(dev), scale, causal, window, softcap).to(q.device)
            e.add(self.out[q0:q0 + sq], self.lse[:, q0:q0 + sq] if with_lse else None, ref_o, ref_l, tp_o,
                  check_lse=with_lse)
            covered[q0:q0 + sq] = True
        if not bool(torch.isnan(self.out[~covered].float()).all()):
            e.problems.append("rows of no sequence were written")
        if not bool(torch.isnan(self.lse[:, ~covered]).all()) or (not with_lse and not bool(torch.isnan(self.lse).all())):
            e.problems.append("lse of rows of no sequence (or an lse not asked for) was written")
        return e


# (class, lens_q, lens_k, hq, hkv, d, dv, causal, window, softcap, tail, cu_stride, max_extra)
VARLEN_CASES = [
    ("lens 0/1/odd", [0, 1, 37, 300, 129], None, 8, 2, 128, 128, True, -1, 0.0, 0, 1, 0),
    ("lens 0/1/odd full", [0, 1, 37, 300, 129], None, 8, 2, 128, 128, False, -1, 0.0, 0, 1, 0),
    ("q != k lengths", [5, 400, 0, 70], [333, 17, 9, 70], 8, 2, 64, 64, True, -1, 0.0, 0, 1, 0),
    ("q != k full mqa", [5, 400, 0, 70], [333, 17, 9, 70], 8, 1, 96, 96, False, -1, 0.0, 0, 1, 0),
    ("garbage tail", [130, 61], None, 4, 4, 128, 128, True, -1, 0.0, 7, 1, 0),
    ("garbage tail full", [130, 61], [250, 3], 4, 2, 80, 80, False, -1, 0.0, 9, 1, 0),
    ("strided cu, max above", [17, 200, 3], None, 4, 2, 192, 192, True, -1, 0.0, 0, 3, 40),
    ("192/128", [64, 1, 199], [300, 1, 199], 8, 2, 192, 128, True, -1, 0.0, 3, 1, 0),
    ("window", [300, 40], [300, 500], 8, 2, 128, 128, True, 64, 0.0, 0, 1, 0),
    ("window full", [300, 40], [300, 500], 8, 2, 64, 64, False, 33, 0.0, 0, 1, 0),
    ("softcap", [257, 5], None, 4, 2, 256, 256, True, -1, 30.0, 4, 1, 0),
    ("softcap+window gqa", [190, 77], None, 8, 2, 96, 96, True, 50, 20.0, 0, 1, 0),
    ("head dim below bucket", [100, 33], None, 4, 2, 72, 72, True, -1, 0.0, 5, 1, 0),
    ("head dim 40", [129, 2], [129, 64], 4, 1, 40, 40, False, -1, 0.0, 0, 1, 0),
    ("head dim 136", [70, 140], None, 2, 2, 136, 136, True, -1, 0.0, 2, 1, 0),
    ("many short", [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 0, 144], None, 4, 2, 128, 128, True, -1, 0.0, 0, 1, 0),
    ("many short full", [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 0, 144], None, 4, 2, 128, 128, False, -1, 0.0, 0, 1, 0),
    # sm90a full attention runs the persistent grid: more tiles than CTAs (132 SMs on an H200),
    # so CTAs take several, of sequences of unequal lengths (the list puts the longest first);
    # a sequence with rows and no keys (its tiles: 0 and -inf, listed last).
    ("persistent, tiles > SMs", [700, 1, 1100, 333, 0, 900], [900, 0, 1100, 40, 7, 900], 16, 4, 128, 128, False,
     -1, 0.0, 5, 1, 0),
    ("persistent d64, tiles > SMs", [700, 1, 1100, 333, 0, 900], None, 16, 4, 64, 64, False, -1, 0.0, 3, 1, 0),
]

# Hundreds of short sequences (the list is built by every thread of a CTA, several sequences a
# thread): 450 under the sm90a list's limit at d128 (512), 230 over it at d256 (224: one CTA a
# tile there).
_MANY = torch.Generator().manual_seed(450)
VARLEN_CASES += [
    ("450 sequences full", torch.randint(0, 40, (450,), generator=_MANY).tolist(), None, 2, 1, 128, 128, False, -1,
     0.0, 2, 1, 0),
    ("230 sequences full d256", torch.randint(0, 40, (230,), generator=_MANY).tolist(), None, 2, 1, 256, 256, False,
     -1, 0.0, 2, 1, 0),
]

# The sm90a causal pair list (buckets 128, 192, 192/128, 256; heads_q x total_q >= 12 x 128 x 132
# on an H200: 24 x 8646 here): odd tile counts (a middle tile alone: 1, 2176 and 640 rows), a
# one-row sequence, an empty one, more keys than queries; the shortest sequences are its tail of
# single tiles.
_PAIR_LQ, _PAIR_LK = [3500, 129, 0, 1, 2176, 1500, 700, 640], [3500, 400, 9, 1, 2176, 1620, 700, 640]
VARLEN_CASES += [
    (f"pair list d{d}/{dv}", _PAIR_LQ, _PAIR_LK, 24, 4, d, dv, True, -1, 0.0, 3, 1, 0)
    for (d, dv) in ((128, 128), (192, 192), (256, 256), (192, 128))
]


def run_varlen_case(res, op, target, dtype, case, gen):
    cls, lq, lk, hq, hkv, d, dv, causal, window, softcap, tail, cu_stride, max_extra = case
    lk = lk or lq
    name = f"lens{lq[:5]} k{lk[:5]} h{hq}/{hkv} d{d}/{dv} {'causal' if causal else 'full'} w{window} cap{softcap:g}"
    scale = 1.0 / math.sqrt(d)
    try:
        pk = Packed(lq, lk, hq, hkv, d, dv, dtype, gen, tail=tail, cu_stride=cu_stride, max_extra=max_extra)
        pk.call(op, scale, causal, window, softcap)
        sync()
        e = pk.compare(scale, causal, window, softcap)
        tol, problems = e.verdict()
        res.add("attention_varlen_fwd", target, DT_NAMES[dtype], cls, name, not problems, e.err, tol,
                "; ".join(problems) or f"torch {e.torch_err:.2e} lse_err {e.lse_err:.1e}")
    except kh.Error as ex:
        res.add("attention_varlen_fwd", target, DT_NAMES[dtype], cls, name, False, detail=str(ex))


def check_varlen(res, kernels, gen, quick, targets, expect_error):
    for target in targets:
        op = kernels[("attention", target)].op("attention_varlen_fwd")
        for dtype in (torch.bfloat16, torch.float16):
            for case in VARLEN_CASES[::2] if quick else VARLEN_CASES:
                run_varlen_case(res, op, target, dtype, case, gen)
            # every fast head-dim bucket through varlen
            for (d, dv) in FAST_DIMS:
                for causal in (True, False):
                    run_varlen_case(res, op, target, dtype,
                                    ("varlen head dims" + ("" if causal else " full"), [77, 0, 160], [90, 4, 160], 4,
                                     2, d, dv, causal, -1, 0.0, 3, 1, 0), gen)
        check_graph(res, kernels, target, gen)
        check_bad_args(res, kernels, target, expect_error)


def check_varlen_oracle(res, kernels, gen, targets):
    """The CPU build against ref64, the GPU builds against the CPU build."""
    cpu_op = kernels[("attention", "cpu")].op("attention_varlen_fwd")
    cases = [("oracle gqa window", [37, 0, 130], [60, 3, 130], 8, 2, 128, 128, True, 40, 0.0),
             ("oracle mqa softcap 192/128", [20, 65], [20, 100], 4, 1, 192, 128, True, -1, 10.0),
             ("oracle d80 full", [129, 1], [64, 1], 4, 2, 80, 80, False, -1, 0.0)]
    for dtype in (torch.bfloat16, torch.float16):
        for (cls, lq, lk, hq, hkv, d, dv, causal, window, softcap) in cases:
            name = f"lens{lq} k{lk} h{hq}/{hkv} d{d}/{dv} w{window} cap{softcap:g}"
            scale = 1.0 / math.sqrt(d)
            pk = Packed(lq, lk, hq, hkv, d, dv, dtype, gen, tail=2)
            pc = pk.to_cpu()
            try:
                pc.call(cpu_op, scale, causal, window, softcap)
            except kh.Error as ex:
                res.add("attention_varlen_fwd", "cpu", DT_NAMES[dtype], cls, name, False, detail=str(ex))
                continue
            ec = pc.compare(scale, causal, window, softcap)
            rtol = 2.0 ** -7 if dtype == torch.bfloat16 else 2.0 ** -10
            for (q0, sq, k0, sk) in zip(pc.starts_q, pc.lens_q, pc.starts_k, pc.lens_k):
                ref_o, _ = seq_reference(pc.q[q0:q0 + sq], pc.k[k0:k0 + sk], pc.v[k0:k0 + sk], scale, causal, window,
                                         softcap)
                if not bool(((pc.out[q0:q0 + sq].double() - ref_o).abs() <= rtol * ref_o.abs() + 1e-6).all()):
                    ec.problems.append("CPU oracle is not within one rounding of ref64")
            res.add("attention_varlen_fwd", "cpu", DT_NAMES[dtype], cls, name, not ec.problems, ec.err, None,
                    "; ".join(ec.problems) or f"lse_err {ec.lse_err:.1e}")
            for target in targets:
                op = kernels[("attention", target)].op("attention_varlen_fwd")
                try:
                    pk.call(op, scale, causal, window, softcap)
                    sync()
                except kh.Error as ex:
                    res.add("attention_varlen_fwd", f"{target} vs cpu", DT_NAMES[dtype], cls, name, False,
                            detail=str(ex))
                    continue
                covered = torch.isfinite(pc.out[:, 0, 0])
                diff = (pk.out.cpu().double() - pc.out.double())[covered].abs()
                err = diff.max().item() if diff.numel() else 0.0
                lse_diff = (pk.lse.cpu() - pc.lse)[:, covered]
                fin = torch.isfinite(pc.lse[:, covered])
                lse_err = lse_diff[fin].abs().max().item() if bool(fin.any()) else 0.0
                tol = 2.0 * ec.torch_err + ec.err + 1e-5
                problems = []
                if not (err <= tol):
                    problems.append(f"|gpu - cpu| {err:.2e} > {tol:.2e}")
                if not (lse_err <= 1e-3):
                    problems.append(f"lse |gpu - cpu| {lse_err:.1e}")
                if not torch.equal(torch.isinf(pk.lse.cpu()[:, covered]), torch.isinf(pc.lse[:, covered])):
                    problems.append("lse -inf differs from the CPU build")
                res.add("attention_varlen_fwd", f"{target} vs cpu", DT_NAMES[dtype], cls, name, not problems, err, tol,
                        "; ".join(problems) or f"lse |gpu - cpu| {lse_err:.1e}")


def check_varlen_graph(res, op, target, gen, dtype, causal):
    """One varlen call captured, replayed, and replayed after new cu_seqlens (see check_graph)."""
    name = "varlen lens [300, 17, 0, 129] -> [17, 129, 300, 0], d96 GQA 8/2 " + ("causal" if causal else "full")
    try:
        pk = Packed([300, 17, 0, 129], [300, 17, 0, 129], 8, 2, 96, 96, dtype, gen, tail=3)
        scale = 1.0 / math.sqrt(96)
        pk.call(op, scale, causal, -1, 0.0)
        sync()
        eager_o, eager_l = pk.out.clone(), pk.lse.clone()
        pk.out.fill_(float("nan"))
        pk.lse.fill_(float("nan"))
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            with torch.cuda.graph(g, stream=s):
                op(pk.out, pk.lse, pk.q, pk.k, pk.v, pk.cu_q, pk.cu_k, pk.max_q, pk.max_k, scale, causal, -1, 0.0,
                   stream=s)
        torch.cuda.current_stream().wait_stream(s)
        sync()
        untouched = bool(torch.isnan(pk.out.float()).all())
        g.replay()
        sync()
        same = torch.equal(pk.out.nan_to_num(7.0), eager_o.nan_to_num(7.0)) and \
            torch.equal(pk.lse.nan_to_num(7.0), eager_l.nan_to_num(7.0))
        # New lengths (a permutation: the same totals), new q, in place; replay.
        new = [17, 129, 300, 0]
        pk.lens_q = pk.lens_k = new
        pk.starts_q = pk.starts_k = [sum(new[:i]) for i in range(len(new))]
        cu = torch.tensor([0] + [sum(new[:i + 1]) for i in range(len(new))], dtype=torch.int32, device=DEVICE)
        pk.cu_q.copy_(cu)
        pk.cu_k.copy_(cu)
        pk.q[:pk.total_q - 3].copy_(torch.randn(pk.total_q - 3, 8, 96, device=DEVICE, generator=gen).to(dtype))
        pk.out.fill_(float("nan"))
        pk.lse.fill_(float("nan"))
        g.replay()
        sync()
        e = pk.compare(scale, causal, -1, 0.0)
        tol, problems = e.verdict()
        if not untouched:
            problems.append("capture ran the kernel")
        if not same:
            problems.append("replay is not bit-identical to the eager call")
        res.add("attention_varlen_fwd", target, "bf16", "graph", name, not problems, e.err, tol,
                "; ".join(problems) or "replay bit-identical; new cu_seqlens honoured")
    except (kh.Error, RuntimeError) as ex:
        res.add("attention_varlen_fwd", target, "bf16", "graph", name, False, detail=f"{type(ex).__name__}: {ex}")


def check_graph(res, kernels, target, gen):
    """Capture a call in a CUDA graph: replay == eager bit for bit; after cu_seqlens and q change
    in place (same totals, lengths within max_seqlen), a replay computes the new call. Causal
    (one CTA a tile on sm90a) and full (the persistent grid, whose tile list a replay rebuilds
    from the new cu_seqlens)."""
    op = kernels[("attention", target)].op("attention_varlen_fwd")
    fwd = kernels[("attention", target)].op("attention_fwd")
    dtype = torch.bfloat16
    for causal in (True, False):
        check_varlen_graph(res, op, target, gen, dtype, causal)
    # attention_fwd at a 1.1 head dim, captured and replayed.
    name = "attention_fwd d80 b2 s700 h8/2 causal"
    try:
        q = torch.randn(2, 700, 8, 80, device=DEVICE, generator=gen).to(dtype)
        k = torch.randn(2, 700, 2, 80, device=DEVICE, generator=gen).to(dtype)
        v = torch.randn(2, 700, 2, 80, device=DEVICE, generator=gen).to(dtype)
        out = torch.full_like(q, float("nan"))
        lse = torch.full((2, 8, 700), float("nan"), device=DEVICE)
        fwd(out, lse, q, k, v, 0.1, True)
        sync()
        eager_o, eager_l = out.clone(), lse.clone()
        out.fill_(float("nan"))
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            with torch.cuda.graph(g, stream=s):
                fwd(out, lse, q, k, v, 0.1, True, stream=s)
        torch.cuda.current_stream().wait_stream(s)
        g.replay()
        sync()
        ok = torch.equal(out, eager_o) and torch.equal(lse, eager_l)
        res.add("attention_fwd", target, "bf16", "graph", name, ok,
                detail="replay bit-identical" if ok else "replay is not bit-identical to the eager call")
    except (kh.Error, RuntimeError) as ex:
        res.add("attention_fwd", target, "bf16", "graph", name, False, detail=f"{type(ex).__name__}: {ex}")


def check_bad_args(res, kernels, target, expect_error):
    """Refusals, each with the output poisoned first; expect_error is check_through_kh's
    (fn must raise kh.Error(status) naming arg and leave the output all NaN)."""
    INV, UNS = kh.KH_ERROR_INVALID_ARGUMENT, kh.KH_ERROR_UNSUPPORTED
    op = kernels[("attention", target)].op("attention_varlen_fwd")
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(11)
    pk = Packed([30, 20], [30, 20], 4, 2, 64, 64, torch.bfloat16, gen)
    out = pk.out

    def refused(case, fn, poisoned, status, arg):
        poisoned.fill_(float("nan"))  # each case on its own, whatever an earlier one did
        expect_error(res, "attention_varlen_fwd", target, case, fn, poisoned, status, arg)

    def args(**kw):
        names = ("out", "lse", "q", "k", "v", "cu_q", "cu_k", "max_q", "max_k", "scale", "causal", "window", "cap")
        vals = (out, pk.lse, pk.q, pk.k, pk.v, pk.cu_q, pk.cu_k, pk.max_q, pk.max_k, 0.125, True, -1, 0.0)
        return [kw.get(n, v) for n, v in zip(names, vals)]

    refused("cu_seqlens_q on the CPU", lambda: op(*args(cu_q=pk.cu_q.cpu())), out, INV, "cu_seqlens_q")
    refused("cu_seqlens_k int64", lambda: op(*args(cu_k=pk.cu_k.long())), out, INV, "cu_seqlens_k")
    refused("cu_seqlens_k of another length",
                 lambda: op(*args(cu_k=torch.zeros(4, dtype=torch.int32, device=DEVICE))), out, INV, "cu_seqlens_k")
    refused("max_seqlen_q -1", lambda: op(*args(max_q=-1)), out, INV, "max_seqlen_q")
    refused("max_seqlen_k a float", lambda: op(*args(max_k=30.0)), out, INV, "max_seqlen_k")
    refused("window_left -2", lambda: op(*args(window=-2)), out, INV, "window_left")
    refused("softcap -1", lambda: op(*args(cap=-1.0)), out, INV, "softcap")
    refused("v rows != k rows", lambda: op(*args(v=pk.v[:-1])), out, INV, "v")
    refused("v head dim 32 with q's 64", lambda: op(*args(v=pk.v[..., :32].contiguous())), out, UNS,
                 "v")
    q36 = torch.randn(pk.total_q, 4, 36, device=DEVICE).to(torch.bfloat16)
    k36 = torch.randn(pk.total_k, 2, 36, device=DEVICE).to(torch.bfloat16)
    o36 = torch.full((pk.total_q, 4, 36), float("nan"), device=DEVICE, dtype=torch.bfloat16)
    refused("head_dim 36", lambda: op(*args(out=o36, q=q36, k=k36, v=k36)), o36, UNS, "q")
    refused("lse (total_q, heads_q)", lambda: op(*args(lse=pk.lse.t().contiguous())), out, INV, "lse")
    refused("v head dim 128 with q's 64",
                 lambda: op(*args(v=torch.randn(pk.total_k, 2, 128, device=DEVICE).to(torch.bfloat16))), out, UNS, "v")
    refused("q of rank 4", lambda: op(*args(q=pk.q.unsqueeze(0))), out, INV, "q")
    # A row stride the 16-byte copies cannot take (a 4-byte offset): refused on the GPU.
    buf = torch.randn(pk.total_q * 4 * 64 + 2, device=DEVICE).to(torch.bfloat16)
    q_odd = buf[2:].view(pk.total_q, 4, 64)
    refused("q 4 bytes off 16-byte alignment", lambda: op(*args(q=q_odd)), out, UNS, None)
