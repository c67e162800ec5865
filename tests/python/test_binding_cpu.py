"""The Python binding on the CPU build of rms_norm, with host arrays given through
__array_interface__ (as NumPy arrays are): read-only inputs are accepted, a read-only
output is refused before the call, results match a plain-Python reference.

  KH_LIBRARY=<libkh.so> python3 test_binding_cpu.py <libkh_rms_norm_cpu.so>

Real NumPy arrays are checked too where NumPy is installed. Exit status 0 when every check
passes; prints one line per check and "N passed, N failed".
"""
import array
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import kh  # noqa: E402  pylint: disable=wrong-import-position


class HostArray:
    """A float32 host buffer exposing __array_interface__, as NumPy arrays do."""

    def __init__(self, values, shape, read_only=False):
        self.buf = array.array("f", values)
        address, _ = self.buf.buffer_info()
        self.__array_interface__ = {"data": (address, read_only), "shape": shape, "typestr": "<f4",
                                    "strides": None, "version": 3}


def reference(x, w, rows, cols, eps):
    out = []
    for r in range(rows):
        row = x[r * cols:(r + 1) * cols]
        scale = 1.0 / math.sqrt(sum(v * v for v in row) / cols + eps)
        out += [v * scale * w[c] for c, v in enumerate(row)]
    return out


def main():
    rows, cols, eps = 4, 64, 1e-6
    xs = [math.sin(0.37 * i) for i in range(rows * cols)]
    ws = [0.5 + 0.01 * c for c in range(cols)]
    want = reference(xs, ws, rows, cols, eps)
    op = kh.load_library(sys.argv[1]).op("rms_norm")
    results = []

    def check(name, ok, detail=""):
        results.append(ok)
        print(("ok    " if ok else "FAIL  ") + name + (f": {detail}" if detail else ""))

    out = HostArray([0.0] * (rows * cols), (rows, cols))
    op(out, HostArray(xs, (rows, cols), read_only=True), HostArray(ws, (cols,), read_only=True), eps)
    err = max(abs(a - b) for a, b in zip(out.buf, want))
    check("read-only inputs are accepted and the result is right", err < 1e-5, f"max error {err:.2e}")

    try:
        op(HostArray([0.0] * (rows * cols), (rows, cols), read_only=True), HostArray(xs, (rows, cols)),
           HostArray(ws, (cols,)), eps)
        check("a read-only output is refused", False, "the call went through")
    except TypeError as e:
        check("a read-only output is refused", "argument 0 'out' is read-only" in str(e), str(e))

    try:
        import numpy as np  # pylint: disable=import-outside-toplevel
    except ImportError:
        print("(NumPy not installed: its arrays are not checked)")
    else:
        x = np.array(xs, dtype=np.float32).reshape(rows, cols)
        x.setflags(write=False)
        w = np.array(ws, dtype=np.float32)
        w.setflags(write=False)
        o = np.zeros((rows, cols), dtype=np.float32)
        op(o, x, w, eps)
        err = float(np.abs(o.reshape(-1) - np.array(want)).max())
        check("read-only NumPy inputs", err < 1e-5, f"max error {err:.2e}")
        try:
            op(x, x, w, eps)
            check("a read-only NumPy output is refused", False, "the call went through")
        except TypeError as e:
            check("a read-only NumPy output is refused", "read-only" in str(e), str(e))

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
