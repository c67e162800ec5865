"""kh's wheel end to end, as a user meets it (issue 41): built from this repository with Debian's
packages alone, inspected, installed into a fresh venv with no package index, then used there.

  python3 test_wheel.py <work dir> <kernels> <package>=<libkh_<package>_cpu.so> ...

 1. `python3 -m pip wheel --no-index --no-build-isolation python/` builds the wheel (libkh in
    $KH_WHEEL_BUILD_DIR, kept between runs: a Release build, however the tests were built).
 2. The wheel, checked with binutils' readelf (not the builder's own ELF reader): its name and
    WHEEL tag agree (cp311-abi3-manylinux_2_N_x86_64); RECORD lists every file with its sha256;
    no scripts or console entry points; every ELF file needs only libraries inside the wheel or
    those a manylinux platform promises (glibc's, libgcc_s, libstdc++), has RUNPATH $ORIGIN where
    it needs bundled ones, and its versioned needs of those outside fit the tag: the newest
    GLIBC_2.x is at most N, N is the lowest manylinux floor that admits them all (the floor is
    honest: neither below what the files need nor above it), GLIBCXX/CXXABI/GCC within the
    policy of that floor, no GLIBC_PRIVATE.
 3. `python3 -m venv --system-site-packages` (for Debian's NumPy), `pip install --no-index`; the
    venv's bin/ gains no executable (Hugging Face's `kernels` package owns a `kernels` command).
 4. A signed file hub made with the `kernels` CLI holding the given CPU builds; then
    wheel_check_cpu.py runs with the venv's python from outside the repository (KH_LIBRARY and
    PYTHONPATH unset; $KH_WHEEL_TEST_PRELOAD preloaded: a sanitizer build's kernel libraries need
    their runtime), and tests/bench/bench_python_call.py prints the host time per call (not
    asserted).
Exit status: 0 when every check passes, 77 (skipped) when this Python lacks venv, pip, its
headers or NumPy (naming the Debian packages), else 1.
"""
import hashlib
import base64
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Libraries every manylinux platform provides (PEP 600).
PLATFORM = {"libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0", "libresolv.so.2", "libutil.so.1",
            "libnsl.so.1", "libanl.so.1", "ld-linux-x86-64.so.2", "libgcc_s.so.1", "libstdc++.so.6"}
# manylinux floors and the newest GLIBCXX / CXXABI / GCC versions their policies admit.
FLOORS = [((2, 17), (3, 4, 19), (1, 3, 7), (4, 8, 0)), ((2, 24), (3, 4, 22), (1, 3, 10), (4, 8, 0)),
          ((2, 28), (3, 4, 24), (1, 3, 11), (7, 0, 0)), ((2, 31), (3, 4, 28), (1, 3, 12), (7, 0, 0)),
          ((2, 34), (3, 4, 29), (1, 3, 13), (7, 0, 0)), ((2, 35), (3, 4, 30), (1, 3, 13), (12, 0, 0)),
          ((2, 36), (3, 4, 30), (1, 3, 13), (12, 0, 0)), ((2, 39), (3, 4, 33), (1, 3, 15), (14, 0, 0))]

results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok    " if ok else "FAIL  ") + name + (f": {detail}" if detail else ""), flush=True)


def run(cmd, **kwargs):
    r = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def skip_reason():
    need = []
    for module, package in (("venv", "python3-venv"), ("ensurepip", "python3-venv"), ("pip", "python3-pip"),
                            ("numpy", "python3-numpy")):
        if subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, check=False).returncode:
            need.append(package)
    import sysconfig  # pylint: disable=import-outside-toplevel
    if not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        need.append("python3-dev")
    for tool, package in (("readelf", "binutils"), ("patchelf", "patchelf"), ("cc", "build-essential")):
        if not shutil.which(tool):
            need.append(package)
    return f"{sys.executable} lacks: apt-get install {' '.join(sorted(set(need)))}" if need else None


def version(text):
    return tuple(int(p) for p in text.split("."))


def elf_facts(path):
    """(needed, soname, runpath, {file: {version}}) through readelf."""
    dyn = run(["readelf", "-dW", path])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
    soname = re.findall(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dyn)
    runpath = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]+)\]", dyn)
    versions, current = {}, None
    for line in run(["readelf", "-VW", path]).splitlines():
        m = re.search(r"File: (\S+)\s+Cnt:", line)
        if m:
            current = versions.setdefault(m.group(1), set())
            continue
        m = re.search(r"Name: (\S+)\s+Flags:", line)
        if m and current is not None:
            current.add(m.group(1))
    return needed, soname[0] if soname else None, runpath[0] if runpath else None, versions


def check_wheel(wheel, unpacked):
    name = os.path.basename(wheel)
    m = re.fullmatch(r"kh_kernel_hub-([0-9.]+)-cp311-abi3-manylinux_(\d+)_(\d+)_x86_64\.whl", name)
    check("the wheel is named <dist>-<version>-cp311-abi3-manylinux_2_N_x86_64.whl", m is not None, name)
    if not m:
        return
    tag = f"cp311-abi3-manylinux_{m.group(2)}_{m.group(3)}_x86_64"
    floor = (int(m.group(2)), int(m.group(3)))
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        info = f"kh_kernel_hub-{m.group(1)}.dist-info"
        wheel_meta = zf.read(f"{info}/WHEEL").decode()
        check("WHEEL says the same tag and Root-Is-Purelib: false",
              f"Tag: {tag}\n" in wheel_meta and "Root-Is-Purelib: false" in wheel_meta, wheel_meta.replace("\n", "; "))
        record = {}
        for line in zf.read(f"{info}/RECORD").decode().splitlines():
            path, digest, size = line.rsplit(",", 2)
            record[path] = (digest, size)
        bad = []
        for n in names:
            if n.endswith("/RECORD"):
                continue
            data = zf.read(n)
            want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            if record.get(n) != (want, str(len(data))):
                bad.append(n)
        check("RECORD lists every file with its sha256 and size", not bad and set(record) == set(names), str(bad[:3]))
        check("no scripts and no console entry points (no `kernels` on PATH)",
              not any(".data/scripts/" in n or n.endswith("entry_points.txt") for n in names))
        zf.extractall(unpacked)
    pkg = os.path.join(unpacked, "kh")
    check("the package holds the modules, the abi3 extension and libkh beside them",
          all(os.path.isfile(os.path.join(pkg, f)) for f in ("__init__.py", "torch.py", "_kh.abi3.so", "libkh.so")))
    elves = {}
    for f in sorted(os.listdir(pkg)):
        p = os.path.join(pkg, f)
        with open(p, "rb") as fh:
            if fh.read(4) == b"\x7fELF":
                elves[f] = elf_facts(p)
    inside = {facts[1] or f for f, facts in elves.items()}
    outside, wrong_runpath, glibc, cxx = set(), [], (0, 0), {"GLIBCXX": (), "CXXABI": (), "GCC": ()}
    private = []
    for f, (needed, _, runpath, versions) in elves.items():
        outside |= {n for n in needed if n not in inside}
        if any(n in inside for n in needed) and runpath != "$ORIGIN":
            wrong_runpath.append(f"{f}: {runpath}")
        for lib, names_ in versions.items():
            if lib in inside:
                continue
            for v in names_:
                prefix, _, number = v.rpartition("_")
                if not re.fullmatch(r"[0-9.]+", number):
                    private.append(f"{f}: {v}")
                elif prefix == "GLIBC":
                    glibc = max(glibc, version(number))
                elif prefix in cxx:
                    cxx[prefix] = max(cxx[prefix], version(number))
    check(f"{len(elves)} ELF files need nothing outside the wheel but manylinux platform libraries",
          outside <= PLATFORM, f"outside: {sorted(outside)}")
    check("every ELF file that needs a bundled library finds it through RUNPATH $ORIGIN", not wrong_runpath,
          str(wrong_runpath[:3]))
    check("no private symbol versions", not private, str(private[:3]))
    honest = next((fl for fl, gxx, abi, gcc in FLOORS if fl >= glibc and cxx["GLIBCXX"] <= gxx and
                   cxx["CXXABI"] <= abi and cxx["GCC"] <= gcc), None)
    check(f"the platform tag's floor manylinux_{floor[0]}_{floor[1]} is the lowest that admits what the files need",
          honest == floor, f"newest GLIBC_{'.'.join(map(str, glibc))}, " +
          ", ".join(f"{k}_{'.'.join(map(str, v))}" for k, v in cxx.items()) + f"; lowest floor {honest}")
    print(f"      external libraries: {', '.join(sorted(outside))}")
    print(f"      bundled: {len(elves) - 2} libraries beside libkh.so and _kh.abi3.so")


def make_hub(kernels, work, libraries):
    hub = os.path.join(work, "hub")
    dist = os.path.join(work, "packages")
    for pkg, lib in libraries.items():
        run([kernels, "pack", lib, "--package", os.path.join(ROOT, "kernels-src", pkg, "kernel.json"), "--out", dist])
    run([kernels, "keys", "generate", os.path.join(work, "keys")])
    run([kernels, "trust", "init", "--hub", "file://" + hub, "--key", os.path.join(work, "keys", "kh.pub"),
         "--sign", os.path.join(work, "keys", "kh.key")])
    run([kernels, "publish", dist, "--hub", "file://" + hub, "--key", os.path.join(work, "keys", "kh.key")])
    return "file://" + hub, os.path.join(hub, "root", "1.root.json")


def main():
    work, kernels = sys.argv[1], sys.argv[2]
    libraries = dict(a.split("=", 1) for a in sys.argv[3:])
    reason = skip_reason()
    if reason:
        print(f"SKIP: {reason}")
        return 77
    os.makedirs(work, exist_ok=True)
    for d in ("dist", "unpacked", "venv", "hub", "packages", "keys", "cache", "cwd"):
        shutil.rmtree(os.path.join(work, d), ignore_errors=True)
    env = dict(os.environ)
    env.setdefault("KH_WHEEL_BUILD_DIR", os.path.join(work, "libkh-build"))
    for k in ("KH_LIBRARY", "PYTHONPATH", "LD_PRELOAD"):
        env.pop(k, None)
    dist = os.path.join(work, "dist")
    print("building the wheel (pip wheel --no-index --no-build-isolation python/) ...", flush=True)
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-index", "--no-build-isolation", "--no-deps", "-w",
                          dist, os.path.join(ROOT, "python")], env=env, capture_output=True, text=True, check=False)
    check("the wheel builds from the repository with no package index", out.returncode == 0,
          "" if out.returncode == 0 else (out.stdout + out.stderr)[-3000:])
    for line in (out.stdout + out.stderr).splitlines():
        if re.search(r"kh_wheel: (bundled|newest|wrote)", line):
            print("      " + line.strip())
    wheels = [os.path.join(dist, f) for f in os.listdir(dist)] if os.path.isdir(dist) else []
    if len(wheels) != 1:
        check("one wheel", False, str(wheels))
        return 1
    wheel = wheels[0]
    print(f"      {os.path.basename(wheel)}: {os.path.getsize(wheel) / 2**20:.1f} MiB")
    check_wheel(wheel, os.path.join(work, "unpacked"))

    venv = os.path.join(work, "venv")
    run([sys.executable, "-m", "venv", "--system-site-packages", venv], env=env)
    py = os.path.join(venv, "bin", "python")
    before = set(os.listdir(os.path.join(venv, "bin")))
    run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel], env=env)
    after = set(os.listdir(os.path.join(venv, "bin")))
    check("pip install --no-index into a fresh venv adds no executable (no `kernels` on PATH)",
          after == before and "kernels" not in after, f"new: {sorted(after - before)}")

    hub, root = make_hub(kernels, work, libraries)
    use = dict(env)
    use.update({"KH_PROGRESS": "0", "KH_METADATA_TTL": "0"})
    use.pop("KH_HUB", None)
    use.pop("KH_CACHE", None)
    if os.environ.get("KH_WHEEL_TEST_PRELOAD"):
        use["LD_PRELOAD"] = os.environ["KH_WHEEL_TEST_PRELOAD"]
        use.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    cwd = os.path.join(work, "cwd")
    os.makedirs(cwd)
    r = subprocess.run([py, os.path.join(HERE, "wheel_check_cpu.py"), hub, root, os.path.join(work, "cache")], env=use,
                       cwd=cwd, text=True, capture_output=True, check=False)
    print(r.stdout + r.stderr, end="")
    check("the installed wheel loads packages from a hub and calls them with NumPy", r.returncode == 0)
    r = subprocess.run([py, os.path.join(ROOT, "tests", "bench", "bench_python_call.py"), "--hub", hub, "--root", root,
                        "--cache", os.path.join(work, "cache")], env=use, cwd=cwd, text=True, capture_output=True,
                       check=False)
    print(r.stdout + r.stderr, end="")
    check("the call benchmark ran (its numbers are printed, not asserted)", r.returncode == 0)

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
