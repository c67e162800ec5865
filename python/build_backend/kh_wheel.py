"""kh_wheel: the PEP 517 build backend of kh's wheel, from this repository, with Debian's packages
alone (no Python package index: no setuptools, scikit-build or auditwheel is needed).

    python3 -m pip wheel --no-index --no-build-isolation --no-deps -w dist python/
    python3 -m build --wheel --no-isolation python/          # the same through python3-build

What it does:
  1. libkh: builds the `kh` target of this repository's CMake project (Release, no tests, no
     kernels) in $KH_WHEEL_BUILD_DIR (default build/wheel); $KH_WHEEL_LIBKH names an existing
     libkh.so instead; $KH_WHEEL_CMAKE_ARGS adds configure arguments.
  2. The extension kh/_kh.abi3.so from python/src/_kh.c, against the CPython limited API of 3.11
     (one build loads on 3.11 and later), with $CC (default cc) and this interpreter's headers.
  3. The package kh/: the Python modules, the extension, libkh.so and every library libkh needs
     that a manylinux platform does not promise (libcurl, libarchive, OpenSSL and what they need),
     each renamed <name>-<8 hex of its sha256>.so.<n> (a process that loaded the system's copy
     keeps it; ours cannot be taken for it), with DT_NEEDED rewritten and RUNPATH $ORIGIN: libkh
     is found beside kh/__init__.py and its libraries beside it (patchelf does the rewriting).
  4. The platform tag: manylinux_2_<N>_<arch>, N the newest GLIBC_2.N any ELF file of the package
     needs, raised until the policy of that floor admits the libstdc++/libgcc symbol versions too
     (PLATFORM_POLICY); anything needed outside the package and PLATFORM_LIBRARIES stops the build.
     The Python tag is cp311-abi3.
  5. A reproducible zip: sorted entries, fixed times ($SOURCE_DATE_EPOCH, else 1980-01-01), RECORD.
No console script is installed (Hugging Face's `kernels` package owns a `kernels` command):
`kernels` itself comes with a kh install (cmake --install), and Python has kh.trust().
"""
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kh_elf  # noqa: E402  pylint: disable=wrong-import-position

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(PYTHON_DIR)
DIST_NAME = "kh_kernel_hub"  # the distribution; the import name is kh
PYTHON_TAG = "cp311-abi3"
LIMITED_API = "0x030B0000"

# Libraries every manylinux platform provides (PEP 600: glibc's own, libgcc_s, libstdc++); any
# other library a file of the package needs is bundled.
PLATFORM_LIBRARIES = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0", "libresolv.so.2", "libutil.so.1",
    "libnsl.so.1", "libanl.so.1", "ld-linux-x86-64.so.2", "libgcc_s.so.1", "libstdc++.so.6",
}

# glibc floor -> the newest GLIBCXX, CXXABI and GCC symbol versions the manylinux policy of that
# floor admits (the toolchains of its reference distributions: CentOS 7 gcc 4.8, Debian 9 gcc 6,
# Ubuntu 18.04/AlmaLinux 8 gcc 7-8, Ubuntu 20.04 gcc 9-10, AlmaLinux 9 gcc 11, Ubuntu 22.04 and
# Debian 12 gcc 12, Ubuntu 24.04 gcc 14).
PLATFORM_POLICY = [
    ((2, 17), {"GLIBCXX": (3, 4, 19), "CXXABI": (1, 3, 7), "GCC": (4, 8, 0)}),
    ((2, 24), {"GLIBCXX": (3, 4, 22), "CXXABI": (1, 3, 10), "GCC": (4, 8, 0)}),
    ((2, 28), {"GLIBCXX": (3, 4, 24), "CXXABI": (1, 3, 11), "GCC": (7, 0, 0)}),
    ((2, 31), {"GLIBCXX": (3, 4, 28), "CXXABI": (1, 3, 12), "GCC": (7, 0, 0)}),
    ((2, 34), {"GLIBCXX": (3, 4, 29), "CXXABI": (1, 3, 13), "GCC": (7, 0, 0)}),
    ((2, 35), {"GLIBCXX": (3, 4, 30), "CXXABI": (1, 3, 13), "GCC": (12, 0, 0)}),
    ((2, 36), {"GLIBCXX": (3, 4, 30), "CXXABI": (1, 3, 13), "GCC": (12, 0, 0)}),
    ((2, 39), {"GLIBCXX": (3, 4, 33), "CXXABI": (1, 3, 15), "GCC": (14, 0, 0)}),
]


class BuildError(RuntimeError):
    pass


def _log(message):
    print(f"kh_wheel: {message}", file=sys.stderr, flush=True)


def _run(cmd, **kwargs):
    _log(" ".join(cmd))
    result = subprocess.run(cmd, check=False, **kwargs)
    if result.returncode != 0:
        raise BuildError(f"{' '.join(cmd)} failed with status {result.returncode}")


def version():
    """kh's version, from project(kh VERSION x.y.z) in the top-level CMakeLists.txt."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(kh\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise BuildError("CMakeLists.txt: no project(kh VERSION ...)")
    return m.group(1)


# ---- 1. libkh ------------------------------------------------------------------------------------
def build_libkh():
    given = os.environ.get("KH_WHEEL_LIBKH")
    if given:
        if not os.path.isfile(given):
            raise BuildError(f"KH_WHEEL_LIBKH={given}: no such file")
        return os.path.realpath(given)
    build = os.environ.get("KH_WHEEL_BUILD_DIR") or os.path.join(ROOT, "build", "wheel")
    if not shutil.which("cmake"):
        raise BuildError("cmake is needed to build libkh (apt-get install cmake; scripts/install-deps.sh "
                         "installs every package kh builds with), or set KH_WHEEL_LIBKH to a built libkh.so")
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        cmd = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DKH_BUILD_TESTS=OFF",
               "-DKH_BUILD_KERNELS=OFF", "-DKH_SANITIZE=OFF"]
        if shutil.which("ninja"):
            cmd += ["-G", "Ninja"]
        cmd += os.environ.get("KH_WHEEL_CMAKE_ARGS", "").split()
        _run(cmd)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    _run(["cmake", "--build", build, "--target", "kh", "-j", jobs])
    for name in ("libkh.so.0", "libkh.so"):
        path = os.path.join(build, "loader", name)
        if os.path.exists(path):
            return os.path.realpath(path)
    raise BuildError(f"{build}/loader: no libkh.so after the build")


# ---- 2. the extension ----------------------------------------------------------------------------
def build_extension(out_dir):
    include = sysconfig.get_paths()["include"]
    if not os.path.isfile(os.path.join(include, "Python.h")):
        raise BuildError(f"{include}/Python.h is missing: install this Python's headers (Debian: python3-dev)")
    out = os.path.join(out_dir, "_kh.abi3.so")
    cc = os.environ.get("CC", "cc")
    _run([cc, "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-missing-field-initializers",
          "-Wno-cast-function-type", f"-DPy_LIMITED_API={LIMITED_API}", f"-ffile-prefix-map={ROOT}=.",
          "-I", include, "-I", os.path.join(ROOT, "abi", "include"),
          os.path.join(PYTHON_DIR, "src", "_kh.c"), "-o", out, "-Wl,--as-needed", "-Wl,-z,noexecstack"])
    return out


# ---- 3. the libraries libkh needs ------------------------------------------------------------------
def dependency_closure(path):
    """{soname: resolved path} of every library `path` needs, transitively (ldd's view)."""
    out = subprocess.run(["ldd", path], check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(\S+)\s+\(", line)
        if m:
            found[m.group(1)] = m.group(2)
        elif "not found" in line:
            raise BuildError(f"{path}: {line.strip()}")
    return found


def bundled_name(soname, path):
    """libcurl.so.4 -> libcurl-<8 hex of its sha256>.so.4."""
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:8]
    stem, dot, rest = soname.partition(".so")
    return f"{stem}-{digest}{dot}{rest}"


def patchelf():
    exe = shutil.which("patchelf")
    if not exe:
        raise BuildError("patchelf is needed to bundle libkh's libraries (apt-get install patchelf)")
    return exe


def bundle(libkh, pkg):
    """Copies libkh and the libraries it needs that a manylinux platform lacks into pkg/, renamed,
    with DT_NEEDED rewritten and RUNPATH $ORIGIN. Returns {original soname: bundled name}."""
    deps = {so: p for so, p in dependency_closure(libkh).items() if so not in PLATFORM_LIBRARIES}
    renamed = {so: bundled_name(so, p) for so, p in sorted(deps.items())}
    target = os.path.join(pkg, "libkh.so")
    shutil.copyfile(libkh, target)
    files = [(target, None)]
    for so, p in sorted(deps.items()):
        dest = os.path.join(pkg, renamed[so])
        shutil.copyfile(p, dest)
        files.append((dest, renamed[so]))
    strip = shutil.which("strip")
    tool = patchelf()
    for path, soname in files:
        os.chmod(path, 0o755)
        if strip and soname is None:
            _run([strip, "--strip-unneeded", path])
        info = kh_elf.read(path)
        # One change per patchelf run: 0.14 (Debian 12) mixes up strings when --replace-needed
        # and --set-soname/--set-rpath share a run.
        replace = [a for n in info.needed if n in renamed for a in ("--replace-needed", n, renamed[n])]
        if replace:
            _run([tool] + replace + [path])
        if soname:
            _run([tool, "--set-soname", soname, path])
        _run([tool, "--set-rpath", "$ORIGIN", path])
        done = kh_elf.read(path)
        want_needed = [renamed.get(n, n) for n in info.needed]
        if done.needed != want_needed or done.runpath != "$ORIGIN" or (soname and done.soname != soname):
            raise BuildError(f"patchelf left {path} with NEEDED {done.needed}, SONAME {done.soname}, RUNPATH "
                             f"{done.runpath}; wanted {want_needed}, {soname or info.soname}, $ORIGIN")
    return renamed


# ---- 4. the platform tag ---------------------------------------------------------------------------
def platform_tag(pkg):
    """manylinux_2_N_<arch> for the ELF files under pkg; BuildError if one needs a library that is
    neither in the package nor a platform library, or a symbol version no policy admits."""
    inside = set()
    elves = []
    for dirpath, _, names in os.walk(pkg):
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            if kh_elf.is_elf(path):
                info = kh_elf.read(path)
                elves.append((path, info))
                inside.add(info.soname or name)
    glibc = (2, 17)
    newest = {}
    for path, info in elves:
        for needed in info.needed:
            if needed not in inside and needed not in PLATFORM_LIBRARIES:
                raise BuildError(f"{os.path.relpath(path, pkg)} needs {needed}, which is neither bundled nor a "
                                 "manylinux platform library")
        for lib, names in info.versions.items():
            if lib in inside:
                continue
            for name in names:
                parsed = kh_elf.version_tuple(name)
                if parsed is None:
                    raise BuildError(f"{os.path.relpath(path, pkg)} needs {lib}'s private symbol version {name}")
                prefix, number = parsed
                if prefix == "GLIBC":
                    glibc = max(glibc, number)
                elif prefix in ("GLIBCXX", "CXXABI", "GCC"):
                    newest[prefix] = max(newest.get(prefix, ()), number)
    for floor, caps in PLATFORM_POLICY:
        if floor >= glibc and all(newest.get(k, ()) <= caps[k] for k in caps):
            arch = sysconfig.get_platform().split("-")[-1]
            return f"manylinux_{floor[0]}_{floor[1]}_{arch}", glibc, newest
    raise BuildError(f"no manylinux policy admits GLIBC {glibc} with {newest}")


# ---- 5. the wheel ----------------------------------------------------------------------------------
def _metadata(ver):
    return (f"Metadata-Version: 2.1\nName: {DIST_NAME.replace('_', '-')}\nVersion: {ver}\n"
            "Summary: kh, the kernel hub: load verified prebuilt GPU kernels and call them from Python "
            "(NumPy, PyTorch with torch.library and torch.compile, CuPy)\n"
            "Requires-Python: >=3.11\nLicense: see the kh repository\n")


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(stage, wheel_directory, ver, tag):
    name = f"{DIST_NAME}-{ver}-{PYTHON_TAG}-{tag}.whl"
    info = f"{DIST_NAME}-{ver}.dist-info"
    files = {}
    for dirpath, _, names in os.walk(stage):
        for n in names:
            full = os.path.join(dirpath, n)
            files[os.path.relpath(full, stage).replace(os.sep, "/")] = full
    extra = {
        f"{info}/METADATA": _metadata(ver).encode(),
        f"{info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: kh_wheel {ver}\nRoot-Is-Purelib: false\n"
                          f"Tag: {PYTHON_TAG}-{tag}\n").encode(),
        f"{info}/top_level.txt": b"kh\n",
    }
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    import time  # pylint: disable=import-outside-toplevel
    stamp = time.gmtime(max(epoch, 315532800))[:6]
    record = []
    os.makedirs(wheel_directory, exist_ok=True)
    path = os.path.join(wheel_directory, name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        def add(arcname, data, mode):
            zi = zipfile.ZipInfo(arcname, stamp)
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data, compresslevel=9)
            record.append(f"{arcname},{_record_hash(data)},{len(data)}")
        for arcname in sorted(files):
            with open(files[arcname], "rb") as f:
                data = f.read()
            add(arcname, data, 0o755 if arcname.endswith(".so") or ".so." in arcname else 0o644)
        for arcname in sorted(extra):
            add(arcname, extra[arcname], 0o644)
        record.append(f"{info}/RECORD,,")
        add_record = "\n".join(record) + "\n"
        zi = zipfile.ZipInfo(f"{info}/RECORD", stamp)
        zi.external_attr = (0o100644) << 16
        zf.writestr(zi, add_record, compress_type=zipfile.ZIP_DEFLATED)
    return name


# ---- PEP 517 hooks ---------------------------------------------------------------------------------
def get_requires_for_build_wheel(config_settings=None):  # pylint: disable=unused-argument
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):  # pylint: disable=unused-argument
    """The .dist-info without building anything (pip asks for it before the wheel)."""
    info = f"{DIST_NAME}-{version()}.dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(version()))
    with open(os.path.join(metadata_directory, info, "top_level.txt"), "w", encoding="utf-8") as f:
        f.write("kh\n")
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):  # pylint: disable=unused-argument
    ver = version()
    libkh = build_libkh()
    with tempfile.TemporaryDirectory(prefix="kh-wheel-") as stage:
        pkg = os.path.join(stage, "kh")
        os.makedirs(pkg)
        for n in sorted(os.listdir(os.path.join(PYTHON_DIR, "kh"))):
            if n.endswith(".py"):
                shutil.copyfile(os.path.join(PYTHON_DIR, "kh", n), os.path.join(pkg, n))
        build_extension(pkg)
        renamed = bundle(libkh, pkg)
        tag, glibc, newest = platform_tag(pkg)
        _log(f"bundled {len(renamed)} libraries: {', '.join(sorted(renamed))}")
        _log(f"newest symbol versions needed: GLIBC {'.'.join(map(str, glibc))}, "
             + ", ".join(f"{k} {'.'.join(map(str, v))}" for k, v in sorted(newest.items())) + f" -> {tag}")
        name = write_wheel(stage, wheel_directory, ver, tag)
    _log(f"wrote {os.path.join(wheel_directory, name)}")
    return name
