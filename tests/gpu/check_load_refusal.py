#!/usr/bin/env python3
"""check_load_refusal.py: a build with no device code for this GPU fails in kh_load_kernel
(issue 39, item 4), on a GPU machine, the way an outside author's package meets it.

An author's package (`kernels init acme/scale`, built with the author kit) is built twice: for
a target whose SASS this GPU cannot run and whose PTX it cannot JIT (cuda-sm120: SASS sm_120f,
PTX compute_120, both newer than any Hopper or Ampere GPU) and for this GPU's own target. Both
builds are published to a hub of their own; then
  - the sm120 build forced (kh.load_kernel(variant=...), as KH_TARGET does) is refused at load
    with KH_ERROR_NO_COMPATIBLE_VARIANT, the message naming the GPU's arch and the build's code;
  - the build selection picks (this GPU's) loads, and its scale op (a kernel in an anonymous
    namespace of the template) runs on a torch tensor on the caller's stream and is right.
Usage: check_load_refusal.py --kernels BIN --work DIR, BIN the `kernels` of an installed kh (KH_LIBRARY names libkh.so;
tests/gpu/run.sh sets it). Exit status 0 when every check passes.
"""
import argparse
import os
import shutil
import subprocess
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import kh  # noqa: E402  pylint: disable=wrong-import-position

FORCED = "cuda-sm120"  # a build this script's GPUs (sm80 .. sm90) cannot run


def own_target():
    """The build-matrix target for this GPU: sm90a on Hopper, sm80 elsewhere (PTX JIT past 8.x)."""
    major, minor = torch.cuda.get_device_capability(0)
    return "cuda-sm90a" if (major, minor) == (9, 0) else "cuda-sm80"


def sh(cmd, cwd, env):
    print("$ " + " ".join(cmd), flush=True)
    done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)
    if done.returncode != 0:
        sys.exit(f"check_load_refusal: {' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}")
    return done.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--kernels", required=True, help="the kernels command")
    ap.add_argument("--work", required=True, help="a folder of its own (recreated)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: no CUDA GPU")
        return 77
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    hub = "file://" + os.path.join(a.work, "hub")
    cache = os.path.join(a.work, "cache")
    # The installation's bin/ on PATH, as an author has it; the GPU machine has no DLPack package,
    # so the stage's copy of dlpack.h (in the installation's include/) is named to CMake.
    prefix = os.path.dirname(os.path.dirname(os.path.abspath(a.kernels)))
    env = dict(os.environ, KH_CACHE=cache, PATH=os.path.join(prefix, "bin") + os.pathsep + os.environ["PATH"],
               KH_BUILD_CMAKE_ARGS="-DCMAKE_PREFIX_PATH=" + prefix)
    env.pop("KH_HUB", None)
    pkg = os.path.join(a.work, "scale")
    target = own_target()
    sh([a.kernels, "init", "acme/scale"], a.work, env)
    # Built here for this check only: held to this machine's glibc, not the build image's floor.
    glibc = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    sh([a.kernels, "build", "--no-test", "--max-glibc", glibc, "--target", FORCED, "--target", target], pkg, env)
    keys = os.path.join(a.work, "keys")
    sh([a.kernels, "keys", "generate", keys], a.work, env)
    sh([a.kernels, "trust", "init", "--hub", hub, "--key", keys + "/kh.pub", "--sign", keys + "/kh.key", "--out",
        os.path.join(a.work, "root.json")], a.work, env)
    sh([a.kernels, "publish", "dist", "--hub", hub, "--key", keys + "/kh.key"], pkg, env)
    root = os.path.join(a.work, "root.json")

    failures = 0

    def check(what, ok, detail=""):
        nonlocal failures
        failures += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FAIL'}  {what}{': ' + detail if detail else ''}", flush=True)

    forced = next(n for n in os.listdir(os.path.join(pkg, "dist")) if "sm120" in n)
    forced_key = forced[len("acme__scale-0.1.0-"):-len(".tar.zst")]
    arch = "sm%d%d" % torch.cuda.get_device_capability(0)
    try:
        kh.load_kernel("acme/scale@0.1", hub=hub, cache_dir=cache, variant=forced_key, trusted_root=root)
        check(f"the forced {forced_key} build is refused at load", False, "it loaded")
    except kh.Error as e:
        msg = str(e)
        check(f"the forced {forced_key} build is refused at load with KH_ERROR_NO_COMPATIBLE_VARIANT",
              e.status == kh.KH_ERROR_NO_COMPATIBLE_VARIANT, msg)
        check("the refusal names the GPU's arch and the build's code", arch in msg and "sm_120" in msg, msg)

    kernel = kh.load_kernel("acme/scale@0.1", hub=hub, cache_dir=cache, trusted_root=root)
    check(f"selection loads this GPU's build ({target})", target.split("-")[1] in kernel.variant, kernel.variant)
    x = torch.randn(4097, device="cuda")
    out = torch.full_like(x, float("nan"))
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        kernel.op("scale")(out, x, -2.5)
    stream.synchronize()
    err = (out - (-2.5) * x).abs().max().item()
    check("its scale op runs on the caller's stream and is right", err == 0.0, f"max error {err}")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
