"""The installed wheel on the CPU, with NumPy: run by test_wheel.py with the venv's python, from
outside the repository, on a signed local hub holding the CPU builds of rms-norm, activation,
attention and rotary.

  <venv>/bin/python wheel_check_cpu.py <hub URL> <root.json> <cache dir>

- kh is the installed one (site-packages), calls go through the compiled extension, libkh is
  the copy beside the module;
- load_kernel(trusted_root=, device=): the package loads on a fresh cache; a device this
  machine lacks is refused naming it; device="cpu" says how to get the CPU build;
- NumPy calls (unbound, bound, read-only inputs, a read-only output refused, a wrong dtype
  refused naming the argument, a released package refused) against float64 references;
- the functional forms (Kernel.functional: outputs and workspaces allocated from the manifest and
  the op docs' rules): rms_norm, fused_add_rms_norm, silu_and_mul, rotary_embedding (copies
  written, inputs untouched), attention_decode_paged over a shuffled paged cache with a split-KV
  workspace (the op's own size query, kh_op_workspace_size, agrees with the rule; the CPU build
  refuses one below it).
Exit status 0 when every check passes; prints one line per check and "N passed, N failed".
"""
import math
import os
import sys

import numpy as np

import kh

results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok    " if ok else "FAIL  ") + name + (f": {detail}" if detail else ""), flush=True)


def error_of(f, kind=kh.Error):
    try:
        f()
    except kind as e:  # pylint: disable=broad-except
        return e
    return None


def rms_ref(x, w, eps):
    x64 = x.astype(np.float64)
    return x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + eps) * w.astype(np.float64)


def decode_ref(q, k_cache, v_cache, table, lens, scale):
    """float64 attention_decode_paged: (batch, q_len, heads_q, head_dim)."""
    batch, q_len, heads_q, head_dim = q.shape
    block, heads_kv = k_cache.shape[1], k_cache.shape[2]
    out = np.zeros((batch, q_len, heads_q, head_dim))
    for b in range(batch):
        n = int(lens[b])
        keys = np.stack([k_cache[table[b, j // block], j % block] for j in range(n)]).astype(np.float64)
        vals = np.stack([v_cache[table[b, j // block], j % block] for j in range(n)]).astype(np.float64)
        for i in range(q_len):
            pos = n - q_len + i
            for h in range(heads_q):
                g = h // (heads_q // heads_kv)
                s = scale * keys[:pos + 1, g] @ q[b, i, h].astype(np.float64)
                p = np.exp(s - s.max())
                out[b, i, h] = p @ vals[:pos + 1, g] / p.sum()
    return out


def rotary_ref(x, positions, cache, neox):
    x = x.astype(np.float64).copy()
    r = cache.shape[1]
    for t, p in enumerate(positions):
        c, s = cache[p, :r // 2].astype(np.float64), cache[p, r // 2:].astype(np.float64)
        if neox:
            a, b = x[t, :, :r // 2].copy(), x[t, :, r // 2:r].copy()
            x[t, :, :r // 2], x[t, :, r // 2:r] = a * c - b * s, b * c + a * s
        else:
            a, b = x[t, :, 0:r:2].copy(), x[t, :, 1:r:2].copy()
            x[t, :, 0:r:2], x[t, :, 1:r:2] = a * c - b * s, b * c + a * s
    return x


def main():
    hub, root, cache = sys.argv[1:4]
    rng = np.random.default_rng(41)
    here = os.path.dirname(os.path.abspath(kh.__file__))
    check("kh is the installed package, not the source tree", "site-packages" in here and
          not os.path.exists(os.path.join(here, "..", "build_backend")), here)
    check("calls go through the compiled extension", kh.CALL_PATH == "extension", kh.CALL_PATH)
    check("libkh is the copy beside the module", os.path.dirname(os.path.abspath(kh.library_path())) == here,
          kh.library_path())

    opts = {"hub": hub, "cache_dir": cache, "trusted_root": root}
    norm = kh.load_kernel("kernels-community/rms-norm@1", **opts)
    check("load_kernel(trusted_root=) on a fresh cache loads the CPU build",
          norm.variant.startswith("cpu-") and norm.device == (0, 0), repr(norm))
    e = error_of(lambda: kh.load_kernel("kernels-community/rms-norm@1", device="cuda:7", **opts))
    check("device='cuda:7' on a machine without it is refused naming it",
          e is not None and e.status == kh.KH_ERROR_INVALID_ARGUMENT and "device 7" in e.message, str(e))
    e = error_of(lambda: kh.load_kernel("kernels-community/rms-norm@1", device="cpu", **opts), ValueError)
    check("device='cpu' says how to get the CPU build", e is not None and "variant=" in str(e), str(e))

    # NumPy calls
    op = norm.op("rms_norm")
    x = rng.standard_normal((5, 96)).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(96)).astype(np.float32)
    x.setflags(write=False)
    out = np.full_like(x, np.nan)
    op(out, x, w, 1e-6)
    err = float(np.abs(out - rms_ref(x, w, 1e-6)).max())
    check("rms_norm on NumPy arrays (read-only input) matches float64", err < 1e-5, f"max error {err:.2e}")
    out2 = np.full_like(x, np.nan)
    bound = op.bind(out2, x, w, 1e-6)
    bound()
    check("a BoundCall gives the same bytes", np.array_equal(out, out2), repr(bound))
    strided = np.zeros((5, 2, 96), np.float32)[:, 0]
    op(strided, x, w, 1e-6)
    check("a strided output (row stride 192) is written in place", np.array_equal(strided, out))
    e = error_of(lambda: op(x, x, w, 1e-6), TypeError)
    check("a read-only output is refused before the call", e is not None and "argument 0 'out' is read-only" in str(e),
          str(e))
    e = error_of(lambda: op(out, x.astype(np.float64), w, 1e-6))
    check("a float64 input is refused naming it", e is not None and e.status == kh.KH_ERROR_INVALID_ARGUMENT and
          "'x'" in e.message, str(e))
    e = error_of(lambda: op(out, x, w, 1))
    check("an int for a float is refused naming it", e is not None and "'eps'" in e.message, str(e))

    # functional forms
    f = norm.functional("rms_norm")
    y = f(x, w, 1e-6)
    check("functional rms_norm allocates out (x's shape and dtype)", y.shape == x.shape and y.dtype == x.dtype and
          np.array_equal(y, out), repr(f.plan))
    r = rng.standard_normal((5, 96)).astype(np.float32)
    y2, res = norm.functional("fused_add_rms_norm")(x, r, w, 1e-6)
    want_res = (x + r).astype(np.float32)
    err = float(np.abs(y2 - rms_ref(want_res, w, 1e-6)).max())
    check("functional fused_add_rms_norm returns (out, residual_out)",
          np.array_equal(res, want_res) and err < 1e-5, f"max error {err:.2e}")

    act = kh.load_kernel("kernels-community/activation@1", **opts)
    g = rng.standard_normal((3, 4, 2 * 40)).astype(np.float32)
    y = act.functional("silu_and_mul")(g)
    g64 = g.astype(np.float64)
    want = g64[..., :40] / (1 + np.exp(-g64[..., :40])) * g64[..., 40:]
    err = float(np.abs(y - want).max())
    check("functional silu_and_mul: out (..., d) from x (..., 2 d)", y.shape == (3, 4, 40) and err < 1e-5,
          f"shape {y.shape}, max error {err:.2e}")

    rot = kh.load_kernel("kernels-community/rotary@1", **opts)
    tokens, head = 6, 64
    q = rng.standard_normal((tokens, 4, head)).astype(np.float32)
    k = rng.standard_normal((tokens, 2, head)).astype(np.float32)
    pos = rng.integers(0, 50, tokens).astype(np.int64)
    inv = 10000.0 ** (-np.arange(0, head, 2) / head)
    ang = np.arange(50)[:, None] * inv[None, :]
    cs = np.concatenate([np.cos(ang), np.sin(ang)], axis=1).astype(np.float32)
    q0, k0 = q.copy(), k.copy()
    q2, k2 = rot.functional("rotary_embedding")(q, k, pos, cs, True)
    err = max(float(np.abs(q2 - rotary_ref(q, pos, cs, True)).max()), float(np.abs(k2 - rotary_ref(k, pos, cs, True)).max()))
    check("functional rotary_embedding writes copies of query and key, inputs untouched",
          np.array_equal(q, q0) and np.array_equal(k, k0) and err < 1e-5, f"max error {err:.2e}")

    attn = kh.load_kernel("kernels-community/attention@1", **opts)
    batch, q_len, heads_q, heads_kv, head_dim, block = 2, 1, 4, 2, 64, 16
    lens = np.array([300, 129], np.int32)
    blocks_per_seq = 20
    num_blocks = batch * blocks_per_seq + 3
    perm = rng.permutation(num_blocks)[:batch * blocks_per_seq].astype(np.int32)
    table = perm.reshape(batch, blocks_per_seq)
    kc = (0.5 * rng.standard_normal((num_blocks, block, heads_kv, head_dim))).astype(np.float16)
    vc = rng.standard_normal((num_blocks, block, heads_kv, head_dim)).astype(np.float16)
    qq = rng.standard_normal((batch, q_len, heads_q, head_dim)).astype(np.float16)
    fdec = attn.functional("attention_decode_paged")
    plan = fdec.plan
    sizes = plan.allocation({"q": qq.shape, "k_cache": kc.shape, "v_cache": vc.shape, "block_table": table.shape,
                             "seq_lens": lens.shape})
    max_splits = max(1, min(64, math.ceil(blocks_per_seq * block / 128), math.ceil(4096 / (batch * heads_kv))))
    rule = batch * q_len * heads_q * max_splits * (head_dim + 1)
    check("the workspace follows the op docs' rule (split-KV: max_splits > 1)",
          sizes["workspace"] == (rule,) and max_splits > 1, f"{sizes['workspace']} for max_splits {max_splits}")
    o, lse = fdec(qq, kc, vc, table, lens, head_dim ** -0.5)
    ref = decode_ref(qq, kc, vc, table, lens, head_dim ** -0.5)
    err = float(np.abs(o.astype(np.float64) - ref).max())
    check("functional attention_decode_paged returns (out, lse), out within fp16 rounding of float64",
          o.shape == qq.shape and o.dtype == np.float16 and lse.shape == (batch, heads_q, q_len) and
          lse.dtype == np.float32 and err < 2e-3, f"max error {err:.2e}, plan {plan}")
    op = attn.op("attention_decode_paged")
    check("the op names its workspace argument (kh_op_workspace_arg)", op.workspace_arg == 7, str(op.workspace_arg))
    asked = op.workspace_size(np.empty_like(qq), None, qq, kc, vc, table, lens, None, head_dim ** -0.5)
    check("the op's own answer (kh_op_workspace_size, the workspace left None) is the docs' rule in bytes",
          asked == 4 * rule, f"{asked} bytes for a rule of {rule} floats")
    e = error_of(lambda: attn.op("attention_fwd").workspace_size())
    check("an op without a workspace does not answer (KH_ERROR_UNSUPPORTED)",
          e is not None and e.status == kh.KH_ERROR_UNSUPPORTED, str(e))
    # The functional form asks the op once per argument signature (shapes, dtypes, scalars), not per call.
    asks = []

    def counting_query(*args):
        asks.append(args)
        return op.workspace_size(*args)

    arrays = kh._outputs.NumpyArrays()  # pylint: disable=protected-access
    plan2 = kh._outputs.plan_for(op, attn.manifest)  # pylint: disable=protected-access
    for b in (batch, batch, 1):
        kh._outputs.call_functional(plan2, op, arrays, (qq[:b], kc, vc, table[:b], lens[:b], head_dim ** -0.5), {},  # pylint: disable=protected-access
                                    query=counting_query)
    check("the functional form asks the op's size once per argument signature (three calls, two shapes: two asks)",
          len(asks) == 2, f"{len(asks)} asks")
    # The call path's argument names come from the same reading as the functional forms' (kh._schema.Arg):
    # a default holding a comma and a space is part of its argument, not a name.
    schema = "f(Tensor(a!) out, int[] dims=[1, 2], Tensor? bias=None, float eps=1e-6) -> ()"
    names = kh._tensors.schema_arguments(schema)  # pylint: disable=protected-access
    check("schema_arguments names each argument, a default with a space too",
          names == [("out", True), ("dims", False), ("bias", False), ("eps", False)], str(names))
    small = np.empty(rule - 1, np.float32)
    e = error_of(lambda: attn.op("attention_decode_paged")(np.empty_like(qq), None, qq, kc, vc, table, lens, small,
                                                           head_dim ** -0.5))
    check("one float less than the rule is refused by the CPU build (so the rule is the op's)",
          e is not None and "workspace" in e.message, str(e))

    norm.close()
    e = error_of(lambda: bound())
    check("a released package's ops and bound calls raise kh.Error", e is not None and "released" in e.message, str(e))

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
