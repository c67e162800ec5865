"""kh.load_kernel's trusted_root= and timeout=, and kh.trust() (issues 39 and 43), on a
signed file hub holding the CPU rms_norm build, made with the `kernels` CLI:

  KH_LIBRARY=<libkh.so> python3 test_host_options.py <kernels> <libkh_rms_norm_cpu.so> <kernel.json>

- a fresh cache and the hub's root (a path, or bytes) load the package with no `kernels trust`;
- a cache pinned to another root raises KH_ERROR_SIGNATURE naming both;
- kh.trust() pins a cache that then loads with no root given;
- timeout=1 against a hub that accepts and never answers raises KH_ERROR_TIMEOUT in time.
Exit status 0 when every check passes; prints one line per check and "N passed, N failed".
"""
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import kh  # noqa: E402  pylint: disable=wrong-import-position

SPEC = "kernels-community/rms-norm@1"


def kernels(exe, *args):
    run = subprocess.run([exe, *args], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"kernels {' '.join(args)}: {run.stdout}{run.stderr}")


def make_hub(exe, work, name, library=None, package=None):
    """A signed file hub at work/name (its own key); with a library, rms-norm published to it."""
    hub = os.path.join(work, name)
    keys = os.path.join(work, name + "-keys")
    kernels(exe, "keys", "generate", keys)
    kernels(exe, "trust", "init", "--hub", "file://" + hub, "--key", keys + "/kh.pub", "--sign", keys + "/kh.key")
    if library:
        dist = os.path.join(work, name + "-dist")
        kernels(exe, "pack", library, "--package", package, "--out", dist)
        kernels(exe, "publish", dist, "--hub", "file://" + hub, "--key", keys + "/kh.key")
    return hub


def silent_server():
    """A loopback server that accepts, reads the request and never answers: (port, stop)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    held, stopping = [], threading.Event()

    def serve():
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
                held.append(conn)
            except socket.timeout:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    def stop():
        stopping.set()
        thread.join()
        for c in held:
            c.close()
        listener.close()
    return listener.getsockname()[1], stop


def main():
    exe, library, package = sys.argv[1:4]
    os.environ.update({"KH_PROGRESS": "0", "KH_METADATA_TTL": "0", "no_proxy": "127.0.0.1", "NO_PROXY": "127.0.0.1"})
    results = []

    def check(name, ok, detail=""):
        results.append(ok)
        print(("ok    " if ok else "FAIL  ") + name + (f": {detail}" if detail else ""))

    def error_of(f):
        try:
            f()
        except kh.Error as e:
            return e
        return None

    with tempfile.TemporaryDirectory() as work:
        hub = make_hub(exe, work, "hub", library, package)
        url = "file://" + hub
        root_path = os.path.join(hub, "root", "1.root.json")
        other = make_hub(exe, work, "other")
        with open(os.path.join(other, "root", "1.root.json"), "rb") as f:
            other_root = f.read()

        c1 = os.path.join(work, "cache1")
        e = error_of(lambda: kh.load_kernel(SPEC, hub=url, cache_dir=c1))
        check("without a root, a fresh cache refuses the hub", e is not None and e.status == kh.KH_ERROR_SIGNATURE,
              str(e))
        k = kh.load_kernel(SPEC, hub=url, cache_dir=c1, trusted_root=root_path)
        check("a fresh cache and the root's path load the package", k.name == "kernels-community/rms-norm", repr(k))
        k.close()
        with open(root_path, "rb") as f:
            k = kh.load_kernel(SPEC, hub=url, cache_dir=c1, trusted_root=f.read())
        check("the same root as bytes loads it again", k.variant.startswith("cpu-"), repr(k))
        k.close()
        e = error_of(lambda: kh.load_kernel(SPEC, hub=url, cache_dir=c1, trusted_root=other_root))
        check("a cache pinned to another root raises KH_ERROR_SIGNATURE naming both",
              e is not None and e.status == kh.KH_ERROR_SIGNATURE and "the cache's pin is" in e.message and
              "the host's is kh_load_options.trusted_root" in e.message, str(e))

        c2 = os.path.join(work, "cache2")
        kh.trust(root_path, hub=url, cache_dir=c2)
        kh.trust(root_path, hub=url, cache_dir=c2)
        k = kh.load_kernel(SPEC, hub=url, cache_dir=c2)
        check("kh.trust() pins a cache that then loads with no root given", k.name == "kernels-community/rms-norm")
        k.close()
        e = error_of(lambda: kh.trust(other_root, hub=url, cache_dir=c2))
        check("kh.trust() of another root raises KH_ERROR_SIGNATURE", e is not None and e.status == kh.KH_ERROR_SIGNATURE,
              str(e))

        port, stop = silent_server()
        try:
            t0 = time.monotonic()
            e = error_of(lambda: kh.load_kernel(SPEC, hub=f"http://127.0.0.1:{port}/hub",
                                                cache_dir=os.path.join(work, "cache3"), timeout=1.0,
                                                trusted_root=root_path))
            took = time.monotonic() - t0
        finally:
            stop()
        check("timeout=1 against a hub that never answers raises KH_ERROR_TIMEOUT in under 2 s",
              e is not None and e.status == kh.KH_ERROR_TIMEOUT and took < 2 and
              "kh_load_options.timeout_ms" in e.message, f"{took:.2f} s: {e}")

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
