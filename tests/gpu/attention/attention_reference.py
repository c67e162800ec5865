"""attention_reference.py: the float64 reference of attention_fwd, PyTorch SDPA at the same
precision (the tolerance's yardstick) and the inputs of a case, as check_through_kh.py's
attention sections use them (and dev/attention/attention_dev_check.py, the development sweep).
"""
import math

import torch
import torch.nn.functional as F


def reference(q, k, v, scale, causal):
    """float64 out (b, sq, hq, d) and lse (b, hq, sq); fully masked rows: out 0, lse -inf."""
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    q64, k64, v64 = (t.double().transpose(1, 2) for t in (q, k, v))  # (b, h, s, d)
    rep = hq // hkv
    k64 = k64.repeat_interleave(rep, dim=1)
    v64 = v64.repeat_interleave(rep, dim=1)
    s = torch.matmul(q64, k64.transpose(-1, -2)) * scale
    if causal:
        i = torch.arange(sq, device=q.device).view(-1, 1)
        j = torch.arange(sk, device=q.device).view(1, -1)
        s = s.masked_fill(j > i + (sk - sq), -math.inf)
    lse = torch.logsumexp(s, dim=-1)  # -inf on fully masked rows
    p = torch.exp(s - lse.unsqueeze(-1).masked_fill(torch.isinf(lse).unsqueeze(-1), 0))
    p = torch.nan_to_num(p, nan=0.0)
    out = torch.matmul(p, v64).transpose(1, 2)
    return out, lse


def sdpa_same_precision(q, k, v, scale, causal):
    b, sq, hq, d = q.shape
    sk = k.shape[1]
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    mask = None
    if causal:
        i = torch.arange(sq, device=q.device).view(-1, 1)
        j = torch.arange(sk, device=q.device).view(1, -1)
        mask = j <= i + (sk - sq)  # bottom-right aligned; SDPA's is_causal is top-left
    o = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, scale=scale, enable_gqa=(kt.shape[1] != qt.shape[1]))
    return torch.nan_to_num(o.transpose(1, 2).double(), nan=0.0)


def make_inputs(b, sq, sk, hq, hkv, d, dtype, packed, gen):
    dev = "cuda"
    if packed:  # q, k, v as views of one (b, s, hq + 2 hkv, d) buffer: strided heads and rows
        assert sq == sk
        qkv = torch.randn(b, sq, hq + 2 * hkv, d, device=dev, dtype=torch.float32, generator=gen).to(dtype)
        q, k, v = qkv[:, :, :hq], qkv[:, :, hq:hq + hkv], qkv[:, :, hq + hkv:]
        out_buf = torch.empty(b, sq, hq + 3, d, device=dev, dtype=dtype)
        out = out_buf[:, :, 1:hq + 1]  # strided output too
    else:
        q = torch.randn(b, sq, hq, d, device=dev, generator=gen).to(dtype)
        k = torch.randn(b, sk, hkv, d, device=dev, generator=gen).to(dtype)
        v = torch.randn(b, sk, hkv, d, device=dev, generator=gen).to(dtype)
        out = torch.empty(b, sq, hq, d, device=dev, dtype=dtype)
    return q, k, v, out
