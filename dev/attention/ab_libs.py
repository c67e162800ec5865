"""ab_libs.py: what the A/B scripts of dev/attention share (fp8_decode_ab.py, fp8_prefill_ab.py,
cache_write_ab.py): the repository's python/ and tests/bench on sys.path (kh, gpu_bench), one op of
each library with the library's name (the folder holding it), and the copy bandwidth of the run."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for _sub in (("python",), ("tests", "bench")):
    _path = os.path.normpath(os.path.join(HERE, "..", "..", *_sub))
    if _path not in sys.path:
        sys.path.insert(0, _path)

import torch  # noqa: E402
import kh  # noqa: E402
import gpu_bench  # noqa: E402


def ops_of(libs, op_name):
    """(names, ops): op_name of each library file, named by the folder holding it."""
    return ([os.path.basename(os.path.dirname(lib)) for lib in libs],
            [kh.load_library(lib).op(op_name) for lib in libs])


def copy_tbs():
    """A 512 MiB device copy's TB/s (read + write), printed with the device's name."""
    n = 1 << 28
    xs = [torch.empty(n // 2, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    tbs = 2 * n / gpu_bench.Timing([lambda: xs[1].copy_(xs[0])], 20).ms / 1e9
    print(f"copy {tbs:.2f} TB/s  {torch.cuda.get_device_name()}", flush=True)
    return tbs
