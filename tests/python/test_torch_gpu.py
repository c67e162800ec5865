"""kh.torch on a CUDA GPU (issue 41): a decoder layer made of kh ops, eager, under
torch.compile(fullgraph=True) and captured in a CUDA graph. Runs where PyTorch has a CUDA device
(else prints SKIP and exits 77), with the kh of the Python path (the installed wheel on the GPU
machine: tests/python/gpu_run.sh), on a hub holding the CUDA builds (tests/gpu/run.sh makes one).

  python3 test_torch_gpu.py --hub URL --root ROOT.json --cache DIR

The layer, one decode step of 4 sequences over a paged KV cache (bf16, hidden 1024, GQA 8/2 heads
of 128, MLP 2048; PyTorch matmuls between kh ops):
  rms_norm (functional) -> qkv matmul -> rotary_embedding (functional: rotated copies of q, k)
  -> paged_kv_cache_write (the mutating op, on the caches the caller passes in)
  -> attention_decode_paged (functional: out, lse and its split-KV workspace allocated) -> o matmul
  + residual -> rms_norm -> gate/up matmul -> silu_and_mul (functional) -> down matmul + residual.
Checks:
  - the packages load for cuda:0 (the sm90a builds on an H100/H200), each in its own torch.library
    namespace; calls convert torch tensors through DLPack's C exchange API (kh._kh's type cache);
  - eager: the layer against a float32 PyTorch reference (SDPA over the gathered cache, F.silu,
    the rotary formula) within bf16 rounding of the chain; every op's functional form against its
    mutating op, bit for bit;
  - torch._dynamo.explain: one graph, no graph break; torch.compile(fullgraph=True) (Inductor):
    the output within a few bf16 ulps of eager and the caches written the same, bit for bit;
  - a CUDA graph of the eager layer: replays bit-identical to eager, twice, and again after new
    inputs are copied in; the kh ops alone (norm, rotary, decode, activation) likewise; the
    compiled layer captured in a CUDA graph replays bit-identical to the compiled layer.
Exit status 0 when every check passes; one line per check and "N passed, N failed".
"""
import argparse
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS: the same bits on every stream

results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok    " if ok else "FAIL  ") + name + (f": {detail}" if detail else ""), flush=True)


def section(name, fn):
    """Runs one part of the test; an exception fails it (with its traceback) and the others still run."""
    try:
        return fn()
    except Exception as e:  # pylint: disable=broad-except
        import traceback  # pylint: disable=import-outside-toplevel
        traceback.print_exc()
        check(name, False, f"{type(e).__name__}: {e}")
        return None


def main():  # pylint: disable=too-many-locals,too-many-statements
    p = argparse.ArgumentParser()
    p.add_argument("--hub", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--cache", required=True)
    args = p.parse_args()
    try:
        import torch  # pylint: disable=import-outside-toplevel
    except ImportError:
        print("SKIP: no PyTorch")
        return 77
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 77
    import torch.nn.functional as F  # pylint: disable=import-outside-toplevel
    import kh  # pylint: disable=import-outside-toplevel
    import kh.torch  # pylint: disable=import-outside-toplevel

    dev = torch.device("cuda", 0)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, kh {kh.__file__} ({kh.CALL_PATH})")
    opts = {"hub": args.hub, "cache_dir": args.cache, "trusted_root": args.root}
    norm = kh.torch.load("kernels-community/rms-norm@1", device=dev, **opts)
    rot = kh.torch.load("kernels-community/rotary@1", device=dev, **opts)
    attn = kh.torch.load("kernels-community/attention@1", device=dev, **opts)
    act = kh.torch.load("kernels-community/activation@1", device=dev, **opts)
    pkgs = (norm, rot, attn, act)
    check("the four packages load for cuda:0 as CUDA builds, one namespace each",
          all(p.kernel.variant.startswith("cuda") for p in pkgs) and len({p.namespace for p in pkgs}) == 4,
          "; ".join(f"{p.namespace}: {p.kernel.variant}" for p in pkgs))
    check("kh.CALL_PATH is the compiled extension", kh.CALL_PATH == "extension", kh.CALL_PATH)

    rms_norm_f = norm.rms_norm
    rotary_f = rot.rotary_embedding
    decode_f = attn.attention_decode_paged
    silu_f = act.silu_and_mul
    cache_write = attn.ops.paged_kv_cache_write.default

    # ---- the layer -----------------------------------------------------------------------------
    B, H, HQ, HKV, D, I, BLOCK, NB, MAXB = 4, 1024, 8, 2, 128, 2048, 16, 72, 16  # max_kv 256: split-KV
    eps, scale = 1e-6, D ** -0.5
    g = torch.Generator(device=dev).manual_seed(41)

    def randn(*shape, s=1.0):
        return (torch.randn(*shape, generator=g, device=dev, dtype=torch.float32) * s).to(torch.bfloat16)

    w = {"n1": (1 + 0.1 * torch.randn(H, generator=g, device=dev)).to(torch.bfloat16),
         "qkv": randn(H, (HQ + 2 * HKV) * D, s=H ** -0.5), "o": randn(HQ * D, H, s=(HQ * D) ** -0.5),
         "n2": (1 + 0.1 * torch.randn(H, generator=g, device=dev)).to(torch.bfloat16),
         "gu": randn(H, 2 * I, s=H ** -0.5), "down": randn(I, H, s=I ** -0.5)}
    inv = 10000.0 ** (-torch.arange(0, D, 2, device=dev, dtype=torch.float32) / D)
    ang = torch.arange(4096, device=dev, dtype=torch.float32)[:, None] * inv[None, :]
    cos_sin = torch.cat([ang.cos(), ang.sin()], dim=1).contiguous()  # float32 (max_position, D)
    old_lens = torch.tensor([37, 1, 100, 64], device=dev, dtype=torch.int32)
    seq_lens = old_lens + 1
    table = torch.randperm(NB, generator=g, device=dev)[:B * MAXB].to(torch.int32).reshape(B, MAXB)
    positions = old_lens.to(torch.int64)
    slots = (table.gather(1, (positions // BLOCK).view(B, 1).to(torch.int64)).view(B).to(torch.int64) * BLOCK +
             positions % BLOCK)
    k_cache0 = randn(NB, BLOCK, HKV, D)
    v_cache0 = randn(NB, BLOCK, HKV, D)
    x0 = randn(B, H)

    def layer(x, k_cache, v_cache, positions, slots, table, seq_lens):
        h = rms_norm_f(x, w["n1"], eps)
        qkv = h @ w["qkv"]
        q = qkv[:, :HQ * D].view(B, HQ, D)
        k = qkv[:, HQ * D:(HQ + HKV) * D].view(B, HKV, D)
        v = qkv[:, (HQ + HKV) * D:].view(B, HKV, D)
        q, k = rotary_f(q, k, positions, cos_sin, True)
        cache_write(k_cache, v_cache, k, v, slots, None, None)
        o, _ = decode_f(q.view(B, 1, HQ, D), k_cache, v_cache, table, seq_lens, scale)
        x2 = x + o.view(B, HQ * D) @ w["o"]
        h2 = rms_norm_f(x2, w["n2"], eps)
        return x2 + silu_f(h2 @ w["gu"]) @ w["down"]

    def reference(x, k_cache, v_cache):
        """float32 PyTorch, rounding to bf16 where the layer stores bf16 tensors."""
        def rms(t, wt):
            t = t.float()
            return (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * wt.float()).to(torch.bfloat16)

        def rope(t):
            c, s = cos_sin[positions][:, None, :D // 2], cos_sin[positions][:, None, D // 2:]
            a, b = t[..., :D // 2].float(), t[..., D // 2:].float()
            return torch.cat([a * c - b * s, b * c + a * s], -1).to(torch.bfloat16)
        h = rms(x, w["n1"])
        qkv = h @ w["qkv"]
        q = rope(qkv[:, :HQ * D].view(B, HQ, D))
        k = rope(qkv[:, HQ * D:(HQ + HKV) * D].view(B, HKV, D))
        v = qkv[:, (HQ + HKV) * D:].view(B, HKV, D)
        kc, vc = k_cache.clone(), v_cache.clone()
        kc.view(-1, HKV, D)[slots] = k
        vc.view(-1, HKV, D)[slots] = v
        outs = []
        for b in range(B):
            n = int(seq_lens[b])
            idx = torch.arange(n, device=dev)
            rows = table[b, idx // BLOCK].to(torch.int64) * BLOCK + idx % BLOCK
            kk = kc.view(-1, HKV, D)[rows].float().transpose(0, 1)  # (HKV, n, D)
            vv = vc.view(-1, HKV, D)[rows].float().transpose(0, 1)
            qq = q[b].float().view(HQ, 1, D)
            outs.append(F.scaled_dot_product_attention(qq, kk.repeat_interleave(HQ // HKV, 0),
                                                       vv.repeat_interleave(HQ // HKV, 0), scale=scale))
        o = torch.stack(outs).view(B, HQ * D).to(torch.bfloat16)
        x2 = x + o @ w["o"]
        gu = (rms(x2, w["n2"]) @ w["gu"]).float()
        a = (F.silu(gu[:, :I]) * gu[:, I:]).to(torch.bfloat16)
        return x2 + a @ w["down"], kc, vc

    def fresh():
        return x0.clone(), k_cache0.clone(), v_cache0.clone()

    def run(fn, x, kc, vc):
        y = fn(x, kc, vc, positions, slots, table, seq_lens)
        torch.cuda.synchronize()
        return y, kc, vc

    def ulps(a, b):
        return float((a.float() - b.float()).abs().max()), float(b.float().abs().max())

    # ---- eager ---------------------------------------------------------------------------------
    first = section("the eager layer runs", lambda: run(layer, *fresh()))
    if first is None:
        print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
        return 1
    y_e, kc_e, vc_e = first

    def eager_checks():
        y_r, kc_r, _ = reference(*fresh())
        err, mag = ulps(y_e, y_r)
        kerr, _ = ulps(kc_e, kc_r)
        check("eager layer of kh ops within bf16 rounding of a float32 PyTorch reference",
              err <= 0.03 * max(1.0, mag) and kerr <= 0.05, f"max |diff| {err:.3g} at max |y| {mag:.3g}; "
              f"written keys {kerr:.3g}")
        kinds = dict((t.__name__, k) for t, k in kh._kh._type_kinds()) if kh.CALL_PATH == "extension" else {}
        check("torch tensors go through DLPack's C exchange API", kinds.get("Tensor") == "dlpack-c-exchange", str(kinds))

        x1 = randn(B, H)
        out = torch.empty_like(x1)
        norm.ops.rms_norm(out, x1, w["n1"], eps)
        q1, k1 = randn(B, HQ, D), randn(B, HKV, D)
        q2, k2 = q1.clone(), k1.clone()
        rot.ops.rotary_embedding(q2, k2, positions, cos_sin, True)
        rq, rk = rotary_f(q1, k1, positions, cos_sin, True)
        gu1 = randn(B, 2 * I)
        sm = torch.empty(B, I, device=dev, dtype=torch.bfloat16)
        act.ops.silu_and_mul(sm, gu1)
        q4 = randn(B, 1, HQ, D)
        o4, l4 = torch.empty_like(q4), torch.empty(B, HQ, 1, device=dev)
        ws = torch.empty(1 << 20, device=dev)
        attn.ops.attention_decode_paged(o4, l4, q4, k_cache0, v_cache0, table, seq_lens, ws, scale)
        fo4, fl4 = decode_f(q4, k_cache0, v_cache0, table, seq_lens, scale)
        torch.cuda.synchronize()
        check("functional forms equal the mutating ops bit for bit (rms_norm, rotary, silu_and_mul, decode out and lse)",
              torch.equal(rms_norm_f(x1, w["n1"], eps), out) and torch.equal(rq, q2) and torch.equal(rk, k2) and
              torch.equal(silu_f(gu1), sm) and torch.equal(fo4, o4) and torch.equal(fl4, l4))

    section("eager checks", eager_checks)
    x1 = randn(B, H)

    # ---- torch.compile -------------------------------------------------------------------------
    import torch._dynamo  # pylint: disable=import-outside-toplevel

    def explain():
        torch._dynamo.reset()
        explained = torch._dynamo.explain(layer)(*fresh(), positions, slots, table, seq_lens)
        check("torch._dynamo.explain: one graph, no graph break",
              explained.graph_count == 1 and explained.graph_break_count == 0,
              f"graphs {explained.graph_count}, breaks {explained.graph_break_count} {explained.break_reasons}")
    section("torch._dynamo.explain", explain)

    def compile_layer():
        torch._dynamo.reset()
        fn = torch.compile(layer, fullgraph=True)
        y_c, kc_c, vc_c = run(fn, *fresh())
        err, mag = ulps(y_c, y_e)
        check("torch.compile(fullgraph=True) (Inductor) matches eager within 4 bf16 ulps, caches bit for bit",
              err <= 4 * 2 ** -8 * max(1.0, mag) and torch.equal(kc_c, kc_e) and torch.equal(vc_c, vc_e),
              f"max |diff| {err:.3g} at max |y| {mag:.3g}; bit-identical: {torch.equal(y_c, y_e)}")
        return fn
    compiled = section("torch.compile(fullgraph=True) (Inductor) runs the layer", compile_layer)

    # ---- CUDA graphs ---------------------------------------------------------------------------
    def capture(fn, static):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fn(*static)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out_ = fn(*static)
        return graph, out_

    x_s, kc_s, vc_s = fresh()
    static = (x_s, kc_s, vc_s, positions, slots, table, seq_lens)

    def graph_layer():
        graph, y_g = capture(layer, static)
        replays = []
        for new_x in (x0, x0, x1):
            x_s.copy_(new_x)
            kc_s.copy_(k_cache0)
            vc_s.copy_(v_cache0)
            graph.replay()
            torch.cuda.synchronize()
            y_want, kc_want, vc_want = run(layer, new_x.clone(), k_cache0.clone(), v_cache0.clone())
            replays.append(torch.equal(y_g, y_want) and torch.equal(kc_s, kc_want) and torch.equal(vc_s, vc_want))
        check("the eager layer captured in a CUDA graph replays bit-identical to eager (twice, then on new inputs)",
              all(replays), str(replays))
    section("the eager layer in a CUDA graph", graph_layer)

    def kh_only(x, k_cache, v_cache, positions, slots, table, seq_lens):  # pylint: disable=unused-argument,redefined-outer-name
        h = rms_norm_f(x, w["n1"], eps)
        q, k = rotary_f(h.view(B, HQ, D), h[:, :HKV * D].view(B, HKV, D), positions, cos_sin, True)
        o, lse = decode_f(q.view(B, 1, HQ, D), k_cache, v_cache, table, seq_lens, scale)
        return silu_f(o.view(B, HQ * D)), lse

    def graph_kh_only():
        static_k = (randn(B, H), k_cache0, v_cache0, positions, slots, table, seq_lens)
        graph_k, (a_g, lse_g) = capture(kh_only, static_k)
        graph_k.replay()
        torch.cuda.synchronize()
        a_e, lse_e = kh_only(*static_k)
        torch.cuda.synchronize()
        check("kh ops alone (norm, rotary, decode with lse, silu) in a CUDA graph: replay bit-identical to eager",
              torch.equal(a_g, a_e) and torch.equal(lse_g, lse_e))
    section("kh ops alone in a CUDA graph", graph_kh_only)

    def graph_compiled():
        x_s.copy_(x0)
        kc_s.copy_(k_cache0)
        vc_s.copy_(v_cache0)
        graph_c, y_gc = capture(compiled, static)
        x_s.copy_(x1)
        kc_s.copy_(k_cache0)
        vc_s.copy_(v_cache0)
        graph_c.replay()
        torch.cuda.synchronize()
        y_want, _, _ = run(compiled, x1.clone(), k_cache0.clone(), v_cache0.clone())
        check("the compiled layer captured in a CUDA graph replays bit-identical to the compiled layer",
              torch.equal(y_gc, y_want))
    if compiled is not None:
        section("the compiled layer in a CUDA graph", graph_compiled)

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
