"""check_decode.py: attention_decode_paged (kernels-community/attention 1.1) on the GPU, called
from check_through_kh.py with the builds it loaded through kh.load_kernel().

Per target (sm90a, sm80) x dtype x shape class: out and lse poisoned with NaN, random inputs,
a paged cache whose blocks are shuffled over a larger pool, block-table rows padded (a strided
view), lengths 0, 1, off multiples of the block size and longer than one split:
  max|out - ref64| <= 2 * max|torch - ref64| + 1e-5 over rows that see a key, where ref64 is a
  float64 computation on the same rounded inputs and torch PyTorch at the same precision
  (SDPA with a bottom-right/window mask on the gathered keys; with a soft-cap, matmul ->
  cap * tanh -> float32 softmax -> matmul in the dtype); lse within 1e-3 of ref64's; rows
  that see no key exactly 0 with lse -inf.
Also: the CPU build against ref64 and the GPU builds against the CPU build; every head dim
32..256 in steps of 8; CUDA graph capture then replay, bit-identical to the eager call, and a
replay after seq_lens and q changed in place (the graph reads them on the device); bad calls
refused with the argument named and the output untouched; block ids outside the cache left out
(GPU) or refused (CPU).
attention 1.2's FP8 ops (attention_decode_paged_fp8, paged_kv_cache_write, attention_varlen_fwd_fp8)
are checked at the end of check_decode by check_fp8.py, which says the grid and the pass rule;
KH_GPU_DECODE_FP8_ONLY=1 runs those alone.
"""
import math
import os

import torch
import torch.nn.functional as F

import kh
from check_fp8 import check_decode_fp8

DT_NAMES = {torch.float16: "f16", torch.bfloat16: "bf16"}


def workspace_floats(batch, q_len, hq, hkv, d, max_kv):
    """The op's workspace rule (docs/ops-attention-decode.md), float32 elements."""
    by_len = -(-max_kv // 128)
    by_fill = -(-4096 // (batch * hkv)) if batch * hkv > 0 else 1
    s = max(1, min(64, by_len, by_fill))
    return batch * q_len * hq * s * (d + 1) if s > 1 else 0


def make_paged(b, q_len, hq, hkv, d, bs, lens, dtype, gen, max_blocks=None, spare=3, dev="cuda", nan_tails=True):
    """q, k_cache, v_cache, block_table (a padded-row view), seq_lens, out (poisoned), lse.
    nan_tails: the cache rows past each length are NaN (off where a test lengthens seq_lens later)."""
    lens = [lens[i % len(lens)] for i in range(b)]
    need = max(1, max(-(-n // bs) for n in lens)) if lens else 1
    mb = max_blocks or need
    nblocks = b * mb + spare
    q = torch.randn(b, q_len, hq, d, device=dev, generator=gen).to(dtype)
    kc = torch.randn(nblocks, bs, hkv, d, device=dev, generator=gen).to(dtype)
    vc = torch.randn(nblocks, bs, hkv, d, device=dev, generator=gen).to(dtype)
    perm = torch.randperm(nblocks, device=dev, generator=gen)[: b * mb].to(torch.int32)
    table_buf = torch.full((b, mb + 5), -1, device=dev, dtype=torch.int32)
    table = table_buf[:, 2:2 + mb]
    table.copy_(perm.view(b, mb))
    seq = torch.tensor(lens, device=dev, dtype=torch.int32)
    # Rows past each sequence's length (in its last block and the blocks after) are NaN: an
    # engine's cache holds anything there, and a kernel that copies whole blocks must keep it out.
    rows = torch.arange(mb * bs, device=dev)
    for i, n in enumerate(lens if nan_tails else []):
        tail = rows[max(0, n):]
        if tail.numel():
            blk, r = table[i, tail // bs].long(), tail % bs
            kc[blk, r] = float("nan")
            vc[blk, r] = float("nan")
    out = torch.full((b, q_len, hq, d), float("nan"), device=dev, dtype=dtype)
    lse = torch.full((b, hq, q_len), float("nan"), device=dev, dtype=torch.float32)
    ws = torch.full((max(1, workspace_floats(b, q_len, hq, hkv, d, mb * bs)),), float("nan"), device=dev,
                    dtype=torch.float32)
    return q, kc, vc, table, seq, out, lse, ws


def gather(cache, table_row, n):
    """The first n keys of one sequence as a dense (n, heads, d) tensor; a bad block id's rows are
    zeros (decode_reference masks them out)."""
    bs = cache.shape[1]
    j = torch.arange(n, device=cache.device)
    ids = table_row[j // bs].long()
    ok = block_ok(ids, cache.shape[0])
    rows = cache[torch.where(ok, ids, 0), j % bs]
    return torch.where(ok.view(-1, 1, 1), rows, torch.zeros((), device=cache.device, dtype=cache.dtype))


def block_ok(ids, num_blocks):
    """The op's rule for the ids it reads: in [0, num_blocks); other blocks' keys are left out."""
    return (ids >= 0) & (ids < num_blocks)


def visible_mask(n, q_len, window, device):
    """(q_len, n) bool: query i (key position n - q_len + i) sees key j."""
    i = torch.arange(q_len, device=device).view(-1, 1)
    j = torch.arange(n, device=device).view(1, -1)
    pos = n - q_len + i
    m = j <= pos
    if window >= 0:
        m &= j >= pos - window
    return m


def decode_reference(q, kc, vc, table, seq, scale, window, softcap, same_precision=False):
    """float64 (or, same_precision, PyTorch in q's dtype) out (b, q_len, hq, d) and lse (b, hq, q_len)."""
    b, q_len, hq, d = q.shape
    hkv = kc.shape[2]
    out = torch.zeros(b, q_len, hq, d, device=q.device, dtype=torch.float64)
    lse = torch.full((b, hq, q_len), -math.inf, device=q.device, dtype=torch.float64)
    for s in range(b):
        n = int(seq[s])
        if n == 0:
            continue
        k = gather(kc, table[s], n).transpose(0, 1)  # (hkv, n, d)
        v = gather(vc, table[s], n).transpose(0, 1)
        j = torch.arange(n, device=q.device)
        mask = visible_mask(n, q_len, window, q.device) & block_ok(table[s][j // kc.shape[1]].long(), kc.shape[0])
        rows = mask.any(-1)
        qs = q[s].transpose(0, 1)  # (hq, q_len, d)
        if same_precision:
            if softcap == 0:
                o = F.scaled_dot_product_attention(qs.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), attn_mask=mask,
                                                   scale=scale, enable_gqa=hkv != hq)[0]
            else:
                kk = k.repeat_interleave(hq // hkv, dim=0)
                vv = v.repeat_interleave(hq // hkv, dim=0)
                sc = torch.matmul(qs, kk.transpose(-1, -2)) * scale
                sc = softcap * torch.tanh(sc / softcap)
                p = torch.softmax(sc.float().masked_fill(~mask, -math.inf), dim=-1).to(q.dtype)
                o = torch.matmul(p, vv)
            o = torch.nan_to_num(o.double(), nan=0.0)
            out[s] = o.transpose(0, 1)
            continue
        kk = k.double().repeat_interleave(hq // hkv, dim=0)
        vv = v.double().repeat_interleave(hq // hkv, dim=0)
        sc = torch.matmul(qs.double(), kk.transpose(-1, -2)) * scale
        if softcap > 0:
            sc = softcap * torch.tanh(sc / softcap)
        sc = sc.masked_fill(~mask, -math.inf)
        l = torch.logsumexp(sc, dim=-1)  # (hq, q_len)
        p = torch.exp(sc - l.unsqueeze(-1).masked_fill(torch.isinf(l).unsqueeze(-1), 0))
        p = torch.nan_to_num(p, nan=0.0)
        o = torch.matmul(p, vv)  # (hq, q_len, d)
        o[:, ~rows] = 0
        out[s] = o.transpose(0, 1)
        lse[s] = l
    return out, lse


def errors(out, lse, ref_o, ref_lse, check_lse=True):
    """(max abs err over rows that see a key, lse err, problems)."""
    o = out.double()
    seen = torch.isfinite(ref_lse).transpose(1, 2).unsqueeze(-1)  # (b, q_len, hq, 1)
    problems = []
    if bool(torch.isnan(o).any()):
        problems.append("NaN (unwritten) outputs")
    err = (o - ref_o).abs().masked_fill(~seen, 0).max().item() if o.numel() else 0.0
    masked = o.masked_select(~seen.expand_as(o))
    if masked.numel() and not bool((masked == 0).all()):
        problems.append("rows that see no key are not exactly 0")
    lse_err = 0.0
    if check_lse:
        inf_ref = torch.isinf(ref_lse)
        if bool(torch.isnan(lse).any()):
            problems.append("NaN lse")
        if not (bool((torch.isinf(lse) == inf_ref).all()) and bool((lse[inf_ref] < 0).all())):
            problems.append("lse -inf mismatch")
        fin = ~inf_ref
        lse_err = (lse.double()[fin] - ref_lse[fin]).abs().max().item() if bool(fin.any()) else 0.0
        if lse_err > 1e-3:
            problems.append(f"lse err {lse_err:.1e} > 1e-3")
    return err, lse_err, problems


def call(op, out, lse, q, kc, vc, table, seq, ws, scale, window, softcap, stream=None):
    out.fill_(float("nan"))
    if lse is not None:
        lse.fill_(float("nan"))
    op(out, lse, q, kc, vc, table, seq, ws, scale, window, softcap, stream=stream)


# (class, b, q_len, hq, hkv, d, block_size, lens, window, softcap)
CASES = [
    ("len 0/1/odd", 4, 1, 8, 2, 128, 16, [0, 1, 17, 1000], -1, 0.0),
    ("long (split)", 1, 1, 32, 8, 128, 16, [20000], -1, 0.0),
    # Two sequences past 8192 keys a table, on sm90a: the balanced grid, the long one cut at the
    # shares' bounds (one sequence keeps the split above).
    ("long (balanced)", 2, 1, 32, 8, 128, 16, [20000, 3], -1, 0.0),
    ("many seqs", 96, 1, 8, 8, 64, 32, [700, 1, 0, 129, 64], -1, 0.0),
    ("b512 (never split)", 512, 1, 8, 8, 64, 16, [300, 1, 0, 129, 64], -1, 0.0),
    ("mqa", 3, 1, 16, 1, 64, 32, [5, 300, 4096], -1, 0.0),
    ("q_len 5", 4, 5, 8, 2, 128, 16, [3, 5, 64, 2000], -1, 0.0),
    ("q_len 8 gqa 8", 2, 8, 32, 4, 128, 16, [8, 5000], -1, 0.0),
    ("window", 3, 2, 8, 2, 128, 64, [100, 3000, 10], 256, 0.0),
    ("softcap", 2, 1, 8, 8, 256, 256, [1500, 33], -1, 30.0),
    ("softcap+window q_len 5", 2, 5, 4, 2, 96, 16, [700, 4], 64, 20.0),
    # 128 row tiles of the 128 bucket: on an H200 one unsplit 12-warp CTA each (the wide CTA).
    ("wide CTA", 16, 1, 32, 8, 128, 16, [700, 1, 0, 129, 2048, 37], -1, 0.0),
    ("wide CTA q_len 2 d96 window", 16, 2, 32, 8, 96, 32, [3000, 2, 45, 600], 256, 0.0),
    # The same at d128: on sm90a the wide CTA's ring comes through TMA (a window's first tile
    # starts mid-tile; the last tile's rows past the length are NaN in the cache).
    ("wide CTA TMA q_len 2 window", 16, 2, 32, 8, 128, 16, [3000, 2, 45, 600, 0, 17], 256, 0.0),
    # The wide CTA's length-balanced grid (attention_decode_balanced.cuh; tables of >= 8192 keys a
    # sequence): a long sequence among short ones is cut into parts at the shares' bounds (merged
    # by its combine kernel).
    ("balanced: one long among short", 16, 1, 32, 8, 128, 16, [20000, 3, 300, 64, 1, 5000, 77, 0], -1, 0.0),
]

# More of the balanced grid, each with a table of 8192 keys a sequence (its threshold) whatever the
# lengths: (class, b, q_len, hq, hkv, d, block_size, lens, window, softcap, table blocks). Equal
# sequences past the grid (64 on 16 groups of 8 CTAs) run 4 a share, 16 one a share (the first
# tiles' guess is right; at 100 keys the warps past the length drop theirs); mostly empty
# sequences are written by CTAs without a share; one kv head: groups of one CTA; q_len 2 with a window; small
# batches, which the plain grid would split (every sequence into the same count of parts). d96 (the
# cp.async ring) takes the plain grid (KH_ATTENTION_DECODE_BALANCED=1, a development build's switch, takes it there).
BALANCED_CASES = [
    ("balanced: small batch skewed", 3, 1, 32, 8, 128, 16, [9000, 0, 33], -1, 0.0, 600),
    ("balanced: b5 q_len 2 gqa 16/4 window", 5, 2, 16, 4, 128, 64, [8100, 1, 700, 0, 4000], 1000, 0.0, 130),
    ("balanced: b2 mqa softcap", 2, 1, 8, 1, 128, 16, [8192, 77], -1, 5.0, 512),
    ("balanced: equal past the grid", 64, 1, 32, 8, 128, 16, [1000], -1, 0.0, 512),
    ("balanced: equal, a sequence a share", 16, 1, 32, 8, 128, 16, [5000], -1, 0.0, 512),
    ("balanced: equal, shorter than the warps' tiles", 16, 1, 32, 8, 128, 16, [100], -1, 0.0, 512),
    ("balanced: mostly empty", 16, 1, 32, 8, 128, 16, [0, 0, 0, 300], -1, 0.0, 512),
    ("balanced: one kv head", 132, 1, 8, 1, 128, 16, [3000, 5, 700, 0, 40], -1, 0.0, 512),
    ("balanced: q_len 2 window", 16, 2, 32, 8, 128, 32, [6000, 2, 45, 600, 0, 17], 256, 0.0, 256),
    ("balanced: d96 softcap", 16, 1, 32, 8, 96, 16, [7000, 1, 129, 2048, 37], -1, 30.0, 512),
]


# Block ids outside [0, num_blocks) where the call reads them (docs/ops-attention-decode.md): a GPU
# build reads nothing for them and leaves their keys out. One case a kernel path: (class, b, q_len,
# hq, hkv, d, block_size, lens, window, softcap, table blocks, bad entries (sequence, block)); the
# bad values go -1, num_blocks, INT32_MIN, INT32_MAX in turn.
BAD_BLOCK_CASES = [
    # d128 b16 GQA 32/8: the wide CTA (TMA on sm90a); blocks 0-11 are the warps' first tiles, which
    # go out before seq_lens is read. Sequence 1 (length 1) is left with no key; 3 and 5 lose the
    # last (partial) tile, 4 its first and last blocks.
    ("bad ids: wide CTA", 16, 1, 32, 8, 128, 16, [700, 1, 0, 129, 2048, 37], -1, 0.0, None,
     [(0, 0), (0, 5), (1, 0), (3, 8), (4, 0), (4, 127), (5, 2), (12, 11)]),
    # A table of 20000 keys (>= 8192): the balanced grid; block 0 is the guessed first tile of a share.
    ("bad ids: balanced grid", 16, 1, 32, 8, 128, 16, [20000, 3, 300, 64, 1, 5000, 77, 0], -1, 0.0, None,
     [(0, 0), (0, 600), (0, 1249), (5, 0), (5, 100), (2, 18), (4, 0), (8, 0), (8, 700), (13, 300)]),
    # One sequence split over the key length (d64, cp.async ring): the first 128 keys all bad.
    ("bad ids: split", 1, 1, 8, 2, 64, 16, [3000], -1, 0.0, None, [(0, i) for i in range(8)] + [(0, 50), (0, 187)]),
    # Block size 8: tiles of two blocks, each key's id read on its own; a window (blocks 0 and 20
    # lie before sequence 0's, so are never read).
    ("bad ids: block size 8 window", 2, 2, 8, 2, 64, 8, [300, 50], 100, 0.0, None, [(0, 0), (0, 20), (0, 37), (1, 6)]),
    ("bad ids: d96 wide CTA q_len 2", 16, 2, 32, 8, 96, 32, [3000, 2, 45, 600], 256, 0.0, None,
     [(0, 93), (0, 80), (2, 1), (3, 18)]),
    ("bad ids: d192", 2, 1, 16, 4, 192, 16, [2000, 100], -1, 0.0, None, [(0, 0), (0, 124), (1, 6)]),
    ("bad ids: d256 register kernel", 2, 1, 8, 2, 256, 16, [1500, 33], -1, 20.0, None, [(0, 3), (0, 93), (1, 2)]),
    ("bad ids: a whole sequence", 3, 1, 8, 2, 128, 16, [40, 70, 5], -1, 0.0, None, [(1, i) for i in range(5)]),
]


def check_decode_bad_blocks(res, kernels, gen, targets):
    """Bad block ids inside the lengths (left out) and past them (never read), on every GPU kernel
    path; the CPU build refuses them with the argument named and out untouched."""
    if fp8_only():
        return
    for target in targets:
        op = kernels[("attention", target)].op("attention_decode_paged")
        for (cls, b, q_len, hq, hkv, d, bs, lens, window, softcap, blocks, bad) in BAD_BLOCK_CASES:
            run_case(res, op, target, torch.bfloat16, cls, b, q_len, hq, hkv, d, bs, lens, window, softcap, gen,
                     blocks, bad)
    cpu_op = kernels[("attention", "cpu")].op("attention_decode_paged")
    q, kc, vc, table, seq, out, lse, ws = [t.cpu() for t in make_paged(2, 1, 8, 2, 64, 16, [40, 20], torch.bfloat16,
                                                                        gen)]
    for value in (-1, kc.shape[0]):
        table[1, 1] = value  # holds keys 16-19 of sequence 1
        expect_error(res, "cpu", f"block_table[1, 1] = {value}",
                     lambda: cpu_op(out, lse, q, kc, vc, table, seq, ws, 0.125, -1, 0.0), out,
                     kh.KH_ERROR_INVALID_ARGUMENT, "block_table")


def set_bad_blocks(table, num_blocks, bad):
    values = (-1, num_blocks, -2 ** 31, 2 ** 31 - 1)
    for n, (s, j) in enumerate(bad):
        table[s, j] = values[n % len(values)]


def fp8_only():
    """KH_GPU_DECODE_FP8_ONLY=1: the decode sections run the FP8 checks alone (check_fp8.py)."""
    return os.environ.get("KH_GPU_DECODE_FP8_ONLY", "0") == "1"


def check_decode(res, kernels, gen, quick, targets):
    if not fp8_only():
        check_decode_bf16(res, kernels, gen, quick, targets)
    check_decode_fp8(res, kernels, gen, quick, targets)  # attention 1.2: e4m3 caches, the cache write


def check_decode_bf16(res, kernels, gen, quick, targets):
    for target in targets:
        op = kernels[("attention", target)].op("attention_decode_paged")
        for dtype in (torch.bfloat16, torch.float16):
            for (cls, b, q_len, hq, hkv, d, bs, lens, window, softcap) in CASES:
                run_case(res, op, target, dtype, cls, b, q_len, hq, hkv, d, bs, lens, window, softcap, gen)
            for (cls, b, q_len, hq, hkv, d, bs, lens, window, softcap, blocks) in BALANCED_CASES:
                run_case(res, op, target, dtype, cls, b, q_len, hq, hkv, d, bs, lens, window, softcap, gen, blocks)
            dims = (32, 80, 104, 136, 192, 256) if quick else range(32, 257, 8)
            for d in dims:
                run_case(res, op, target, dtype, "head dims", 2, 2, 4, 2, d, 16, [300, 1], -1, 0.0, gen)
        check_graph(res, op, target, gen)
        check_bad_args(res, op, target)


def run_case(res, op, target, dtype, cls, b, q_len, hq, hkv, d, bs, lens, window, softcap, gen, max_blocks=None,
             bad_blocks=()):
    name = f"b{b} q{q_len} h{hq}/{hkv} d{d} bs{bs} lens{lens[:4]} w{window} cap{softcap:g}"
    name += f" table {max_blocks}" if max_blocks else ""
    name += f" {len(bad_blocks)} bad ids" if bad_blocks else ""
    scale = 1.0 / math.sqrt(d)
    try:
        q, kc, vc, table, seq, out, lse, ws = make_paged(b, q_len, hq, hkv, d, bs, lens, dtype, gen, max_blocks)
        set_bad_blocks(table, kc.shape[0], bad_blocks)
        # The workspace as the op sizes it (kh_op_workspace_size, the workspace left None); it
        # must agree with the docs' rule, which hosts without the query still follow.
        asked = op.workspace_size(out, lse, q, kc, vc, table, seq, None, scale, window, softcap)
        rule = workspace_floats(b, q_len, hq, hkv, d, table.shape[1] * bs)
        ws = torch.full((max(1, asked // 4),), float("nan"), device=q.device, dtype=torch.float32)
        call(op, out, lse, q, kc, vc, table, seq, ws, scale, window, softcap)
        torch.cuda.synchronize()
        ref_o, ref_lse = decode_reference(q, kc, vc, table, seq, scale, window, softcap)
        tp_o, _ = decode_reference(q, kc, vc, table, seq, scale, window, softcap, same_precision=True)
        seen = torch.isfinite(ref_lse).transpose(1, 2).unsqueeze(-1)
        torch_err = (tp_o - ref_o).abs().masked_fill(~seen, 0).max().item()
        err, lse_err, problems = errors(out, lse, ref_o, ref_lse)
        tol = 2.0 * torch_err + 1e-5
        if err > tol:
            problems.append(f"err {err:.2e} > tol {tol:.2e}")
        if asked != 4 * rule:
            problems.append(f"kh_op_workspace_size {asked} bytes, the docs' rule {rule} floats")
        res.add("attention_decode_paged", target, DT_NAMES[dtype], cls, name, not problems, err, tol,
                "; ".join(problems) or f"torch {torch_err:.2e} lse_err {lse_err:.1e}")
    except kh.Error as e:
        res.add("attention_decode_paged", target, DT_NAMES[dtype], cls, name, False, detail=str(e))


def check_decode_oracle(res, kernels, gen, targets):
    """The CPU build against ref64, the GPU builds against the CPU build."""
    if fp8_only():
        return
    cpu_op = kernels[("attention", "cpu")].op("attention_decode_paged")
    shapes = [("oracle gqa q5 window", 2, 5, 8, 2, 128, 16, [37, 300], 50, 0.0),
              ("oracle mqa softcap", 2, 1, 4, 1, 80, 32, [0, 333], -1, 10.0),
              ("oracle split", 1, 1, 8, 2, 64, 16, [3000], -1, 0.0)]
    for dtype in (torch.bfloat16, torch.float16):
        for (cls, b, q_len, hq, hkv, d, bs, lens, window, softcap) in shapes:
            name = f"b{b} q{q_len} h{hq}/{hkv} d{d} lens{lens} w{window} cap{softcap:g}"
            scale = 1.0 / math.sqrt(d)
            q, kc, vc, table, seq, out, lse, ws = make_paged(b, q_len, hq, hkv, d, bs, lens, dtype, gen)
            ref_o, ref_lse = decode_reference(q, kc, vc, table, seq, scale, window, softcap)
            cpu = [t.cpu() for t in (q, kc, vc, table, seq, out, lse, ws)]
            try:
                call(cpu_op, cpu[5], cpu[6], *cpu[:5], cpu[7], scale, window, softcap)
            except kh.Error as e:
                res.add("attention_decode_paged", "cpu", DT_NAMES[dtype], cls, name, False, detail=str(e))
                continue
            oc, lc = cpu[5], cpu[6]
            rtol = 2.0 ** -7 if dtype == torch.bfloat16 else 2.0 ** -10
            err_c, lse_err_c, problems = errors(oc, lc, ref_o.cpu(), ref_lse.cpu())
            if not bool(((oc.double() - ref_o.cpu()).abs() <= rtol * ref_o.cpu().abs() + 1e-6).all()):
                problems.append("CPU oracle is not within one rounding of ref64")
            res.add("attention_decode_paged", "cpu", DT_NAMES[dtype], cls, name, not problems, err_c, None,
                    "; ".join(problems) or f"lse_err {lse_err_c:.1e}")
            tp_o, _ = decode_reference(q, kc, vc, table, seq, scale, window, softcap, same_precision=True)
            seen = torch.isfinite(ref_lse).transpose(1, 2).unsqueeze(-1)
            torch_err = (tp_o - ref_o).abs().masked_fill(~seen, 0).max().item()
            for target in targets:
                op = kernels[("attention", target)].op("attention_decode_paged")
                try:
                    call(op, out, lse, q, kc, vc, table, seq, ws, scale, window, softcap)
                    torch.cuda.synchronize()
                except kh.Error as e:
                    res.add("attention_decode_paged", f"{target} vs cpu", DT_NAMES[dtype], cls, name, False,
                            detail=str(e))
                    continue
                err, lse_err, problems = errors(out.cpu(), lse.cpu(), oc.double(), lc.double())
                tol = 2.0 * torch_err + err_c + 1e-5
                if err > tol:
                    problems.append(f"|gpu - cpu| {err:.2e} > {tol:.2e}")
                res.add("attention_decode_paged", f"{target} vs cpu", DT_NAMES[dtype], cls, name, not problems, err,
                        tol, "; ".join(problems) or f"lse |gpu - cpu| {lse_err:.1e}")


def check_graph(res, op, target, gen):
    """Capture one call in a CUDA graph: replay == eager bit for bit; after seq_lens and q change in
    place, a replay computes the new call (nothing was read on the host at capture)."""
    for cls, b, lens in (("graph split", 1, [6000]), ("graph b128", 128, [900, 1, 0, 333]),
                         ("graph balanced", 16, [20000, 5, 300, 0, 4000]), ("graph balanced b3", 3, [9000, 0, 40])):
        name = f"b{b} lens{lens}"
        try:
            dtype, hq, hkv, d, bs = torch.bfloat16, 32, 8, 128, 16
            q, kc, vc, table, seq, out, lse, ws = make_paged(b, 1, hq, hkv, d, bs, lens, dtype, gen,
                                                             max_blocks=-(-max(lens) // bs) + 2, nan_tails=False)
            scale = 1.0 / math.sqrt(d)
            call(op, out, lse, q, kc, vc, table, seq, ws, scale, -1, 0.0)
            torch.cuda.synchronize()
            eager_o, eager_l = out.clone(), lse.clone()
            out.fill_(float("nan"))
            lse.fill_(float("nan"))
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                with torch.cuda.graph(g, stream=s):
                    op(out, lse, q, kc, vc, table, seq, ws, scale, -1, 0.0, stream=s)
            torch.cuda.current_stream().wait_stream(s)
            torch.cuda.synchronize()
            captured_untouched = bool(torch.isnan(out.float()).all())
            g.replay()
            torch.cuda.synchronize()
            same = torch.equal(out, eager_o) and torch.equal(lse, eager_l)
            out.fill_(float("nan"))
            g.replay()
            torch.cuda.synchronize()
            same2 = torch.equal(out, eager_o)
            # New lengths (one longer, within the table) and new q, in place; replay again.
            new_lens = [min(n + 17, table.shape[1] * bs) for n in (lens * b)[:b]]
            seq.copy_(torch.tensor(new_lens, device="cuda", dtype=torch.int32))
            q.copy_(torch.randn(q.shape, device="cuda", generator=gen).to(dtype))
            g.replay()
            torch.cuda.synchronize()
            ref_o, ref_lse = decode_reference(q, kc, vc, table, seq, scale, -1, 0.0)
            tp_o, _ = decode_reference(q, kc, vc, table, seq, scale, -1, 0.0, same_precision=True)
            seen = torch.isfinite(ref_lse).transpose(1, 2).unsqueeze(-1)
            tol = 2.0 * (tp_o - ref_o).abs().masked_fill(~seen, 0).max().item() + 1e-5
            err, lse_err, problems = errors(out, lse, ref_o, ref_lse)
            if not captured_untouched:
                problems.append("capture ran the kernel")
            if not (same and same2):
                problems.append("replay is not bit-identical to the eager call")
            if err > tol:
                problems.append(f"replay with new lengths: err {err:.2e} > tol {tol:.2e}")
            res.add("attention_decode_paged", target, "bf16", cls, name, not problems, err, tol,
                    "; ".join(problems) or "replay bit-identical; new lengths honoured")
        except (kh.Error, RuntimeError) as e:
            res.add("attention_decode_paged", target, "bf16", cls, name, False, detail=f"{type(e).__name__}: {e}")


def expect_error(res, target, case, fn, poisoned, status, arg):
    try:
        fn()
    except kh.Error as e:
        problems = []
        if e.status != status:
            problems.append(f"status {e.status_name}, expected {kh.Error(status, '').status_name}")
        if arg and f"'{arg}'" not in e.message:
            problems.append(f"message does not name '{arg}'")
        torch.cuda.synchronize()
        if not bool(torch.isnan(poisoned.float()).all()):
            problems.append("the output was written (a kernel ran)")
        res.add("attention_decode_paged", target, "-", "bad args", case, not problems,
                detail="; ".join(problems) or str(e))
        return
    except Exception as e:  # noqa: BLE001 - any other failure is a finding
        res.add("attention_decode_paged", target, "-", "bad args", case, False, detail=f"{type(e).__name__}: {e}")
        return
    res.add("attention_decode_paged", target, "-", "bad args", case, False, detail="accepted; expected kh.Error")


def check_bad_args(res, op, target):
    INV, UNS = kh.KH_ERROR_INVALID_ARGUMENT, kh.KH_ERROR_UNSUPPORTED
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    b, hq, hkv, d, bs = 1, 8, 2, 128, 16
    q, kc, vc, table, seq, out, lse, ws = make_paged(b, 1, hq, hkv, d, bs, [4000], torch.bfloat16, gen)
    assert ws.numel() > 1
    args = lambda **kw: [kw.get(n, v) for n, v in (("out", out), ("lse", lse), ("q", q), ("k", kc), ("v", vc),
                                                     ("t", table), ("s", seq), ("w", ws), ("scale", 0.1),
                                                     ("win", -1), ("cap", 0.0))]
    expect_error(res, target, "workspace missing", lambda: op(*args(w=None)), out, INV, "workspace")
    expect_error(res, target, "workspace one float short", lambda: op(*args(w=ws[:-1])), out, INV, "workspace")
    expect_error(res, target, "workspace bf16", lambda: op(*args(w=ws.to(torch.bfloat16))), out, INV, "workspace")
    expect_error(res, target, "block_table int64", lambda: op(*args(t=table.long())), out, INV, "block_table")
    expect_error(res, target, "block_table of another batch", lambda: op(*args(t=torch.zeros(2, table.shape[1],
                 device="cuda", dtype=torch.int32))), out, INV, "block_table")
    expect_error(res, target, "seq_lens of another size", lambda: op(*args(s=torch.zeros(3, device="cuda",
                 dtype=torch.int32))), out, INV, "seq_lens")
    expect_error(res, target, "block size 24", lambda: op(*args(k=kc[:, :12].repeat(1, 2, 1, 1),
                                                                 v=vc[:, :12].repeat(1, 2, 1, 1))), out, INV, "k_cache")
    expect_error(res, target, "v_cache fp16", lambda: op(*args(v=vc.half())), out, INV, "v_cache")
    expect_error(res, target, "v_cache on the CPU", lambda: op(*args(v=vc.cpu())), out, INV, "v_cache")
    q36 = torch.randn(b, 1, hq, 36, device="cuda").to(torch.bfloat16)
    k36 = torch.randn(kc.shape[0], bs, hkv, 36, device="cuda").to(torch.bfloat16)
    o36 = torch.full((b, 1, hq, 36), float("nan"), device="cuda", dtype=torch.bfloat16)
    expect_error(res, target, "head_dim 36", lambda: op(*args(out=o36, q=q36, k=k36, v=k36)), o36, UNS, "q")
    expect_error(res, target, "window_left -2", lambda: op(*args(win=-2)), out, INV, "window_left")
    expect_error(res, target, "softcap -1", lambda: op(*args(cap=-1.0)), out, INV, "softcap")
    expect_error(res, target, "lse of the wrong shape", lambda: op(*args(lse=lse.transpose(1, 2).contiguous())), out,
                 INV, "lse")
