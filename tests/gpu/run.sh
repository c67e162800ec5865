#!/usr/bin/env bash
# tests/gpu/run.sh: the GPU acceptance run of kh, end to end, as users meet it: pack and
# publish every variant (cpu and every cuda target of build-matrix/matrix.json) of every package to a local file://
# hub, `kernels doctor` + `kernels get`, then tests/gpu/check_through_kh.py loads each
# package with kh.load_kernel() (kh_load_kernel: hub -> cache -> hash-verified -> dlopen)
# and checks every op x target x dtype x shape class against float64 references.
#
#   tests/gpu/run.sh stage [DIR]    here (CPU machine, nvcc present): build libkh, `kernels`,
#                                   and the cpu and CUDA kernel libraries (the matrix's cuda targets),
#                                   and copy them into DIR (default .gpu-stage, which
#                                   .git/info/exclude should list) with the shared libraries
#                                   they need, for a GPU machine that has none of them.
#                                   KH_GPU_STAGE_GPU_LIBS=0 stages libkh, `kernels`, the CPU
#                                   libraries and dlpack.h only: the GPU machine then builds
#                                   the CUDA libraries itself (seconds on its 16 cores).
#   tests/gpu/run.sh [DIR]          on the GPU machine: use DIR's staged outputs (build what
#                                   is missing: needs cmake, a compiler and nvcc there), pack,
#                                   publish, doctor, get, check. Exit status non-zero on any
#                                   failure.
#   tests/gpu/run.sh --bench [DIR]  the same, then the benchmarks: tests/bench/gpu_bench.py
#                                   (kh against PyTorch; $OUT/gpu_bench.json) and
#                                   bench_call_overhead (kh_op_call against the raw invoke),
#                                   which `stage` builds into DIR/bin. KH_GPU_BENCH_ARGS adds
#                                   gpu_bench.py arguments (e.g. "--only norms");
#                                   KH_GPU_CHECK=0 skips check_through_kh.py (bench-only runs).
#   tests/gpu/run.sh --from-build BUILD   the same, with libkh, `kernels` and the CPU kernel
#                                   libraries of an existing kh build tree (ctest label gpu);
#                                   prints SKIP and exits 77 (ctest: skipped) where no CUDA
#                                   GPU or PyTorch is.
#
# With the device tool: stage here (KH_GPU_TARGETS="cuda-sm90a cuda-sm80" for an H200: about
# 51 MB: 6 CUDA libraries, libkh, `kernels`, and
# syslib/, this machine's copies of libarchive, libcurl and their dependencies, used there
# only for what that machine lacks: an Ubuntu 24.04 H200 machine lacked libarchive.so.13
# alone), then `run` with carry [".gpu-stage"] and the command
#   set -o pipefail; tests/gpu/run.sh 2>&1 | tee $OUT/run.log
# Logs (doctor.txt, get.txt), summary.txt and summary.json (and with --bench gpu_bench.json)
# go to $OUT when set (else to
# the work folder, $KH_GPU_WORK or /tmp/kh-gpu-run, which is recreated on every run).
# Kernel builds: build-matrix/build.sh <target> <out> when it exists (the libraries are
# taken out of the archives it packs), else the standalone kernels-src build (cmake -S
# kernels-src -DKH_BUILD_TARGET=<target>).
# KH_GPU_KH_SRC=<dir> builds libkh/`kernels` from another source tree (e.g. a `git archive`
# export of a commit) when the checkout is mid-change.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

ORG=kernels-community
# The cuda targets of build-matrix/matrix.json ("key arch" pairs), through CMake's JSON reader
# where cmake is, else python3's (the GPU machine may lack cmake).
declare -A GPU_ARCH
GPU_TARGETS=()
while read -r key arch; do
  GPU_TARGETS+=("$key")
  GPU_ARCH[$key]="$arch"
done < <(cmake -DKH_MATRIX="$root/build-matrix/matrix.json" -P "$root/build-matrix/matrix.cmake" 2>/dev/null |
           awk '$1 == "target" && $3 == "cuda" { print $2, $4 }' |
         grep . || python3 -c 'import json, sys
for t in json.load(open(sys.argv[1]))["targets"]:
    if t["backend"] == "cuda": print(t["key"], t["arch"])' "$root/build-matrix/matrix.json")
[[ ${#GPU_TARGETS[@]} -gt 0 ]] || { echo "run.sh: no cuda targets read from build-matrix/matrix.json" >&2; exit 1; }
mode=run
stage=".gpu-stage"
from_build=""
bench=0
[[ "${1:-}" == --bench ]] && { bench=1; shift; }
case "${1:-}" in
  stage) mode=stage; stage="${2:-$stage}" ;;
  --from-build) from_build="${2:?--from-build needs a kh build directory}"; stage="$from_build/gpu-stage" ;;
  "") ;;
  -h|--help) sed -n '2,44p' "$0"; exit 0 ;;
  *) stage="$1" ;;
esac
stage="$(mkdir -p "$stage" && cd "$stage" && pwd)"
# Which of them to stage and run: $KH_GPU_TARGETS (e.g. "cuda-sm90a cuda-sm80": what a Hopper
# machine runs, and what fits the device tool's 64 MiB carry; all four CUDA targets stage
# ~92 MB), else what `stage` recorded in the stage, else every cuda target of the matrix.
wanted="${KH_GPU_TARGETS:-}"
[[ -z "$wanted" && $mode != stage && -f "$stage/GPU_TARGETS" ]] && wanted="$(cat "$stage/GPU_TARGETS")"
if [[ -n "$wanted" ]]; then
  for t in $wanted; do
    [[ -n "${GPU_ARCH[$t]:-}" ]] || { echo "run.sh: '$t' is not a cuda target of build-matrix/matrix.json (${GPU_TARGETS[*]})" >&2; exit 2; }
  done
  read -r -a GPU_TARGETS <<<"$wanted"
fi
builds="${from_build:-$root/build}"  # where missing pieces get built
jobs="$(nproc 2>/dev/null || echo 2)"
step() { printf '\n== %s\n' "$*"; }
die() { echo "run.sh: $*" >&2; exit 1; }

# The packages: those kernels-src/list-packages.sh lists with a CPU and a CUDA backend (their
# manifests say so). The stage records the list (packages.txt), so that a GPU machine without
# cmake, which list-packages.sh needs, runs what was staged.
if [[ $mode != stage && -z "$from_build" && -s "$stage/packages.txt" ]]; then
  mapfile -t PKGS <"$stage/packages.txt"
else
  mapfile -t PKGS < <("$root/kernels-src/list-packages.sh" | awk '$4 ~ /(^|,)cpu(,|$)/ && $4 ~ /(^|,)cuda(,|$)/ {print $1}') ||
    true
fi
[[ ${#PKGS[@]} -gt 0 ]] || die "no packages: kernels-src/list-packages.sh failed (it needs cmake) and $stage/packages.txt is missing"

cpu_target() {  # the baseline CPU target kh's own build makes (cpu-x86_64 on x86-64)
  case "$(uname -m)" in x86_64) echo cpu-x86_64 ;; aarch64) echo cpu-aarch64 ;; *) echo "cpu-$(uname -m)" ;; esac
}
lib_name() { local pkg="$1" backend="$2"; echo "libkh_${pkg//-/_}_${backend}.so"; }

# --- building -------------------------------------------------------------------------

build_kh() {  # libkh.so, kernels and the CPU kernel libraries: kh's release build
  # (of $KH_GPU_KH_SRC when set, e.g. a `git archive HEAD` export, else of this checkout)
  local src="${KH_GPU_KH_SRC:-$root}" b="$builds/gpu-release"
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$src" -B "$b" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DKH_BUILD_TESTS=OFF >/dev/null || return 1
  cmake --build "$b" -j "$jobs" || return 1
  mkdir -p "$stage/bin" "$stage/lib" "$stage/kernels/$(cpu_target)"
  cp -L "$b/cli/kernels" "$stage/bin/kernels"
  cp -L "$b/loader/libkh.so" "$stage/lib/libkh.so.0"
  cp -L "$b/loader/libkh.so" "$stage/lib/libkh.so"
  for pkg in "${PKGS[@]}"; do
    cp "$b/kernels-src/$pkg/$(lib_name "$pkg" cpu)" "$stage/kernels/$(cpu_target)/"
  done
}

build_gpu_target() {  # $1: a cuda target of the matrix (cuda-sm90a) -> $stage/kernels/$1/libkh_<pkg>_cuda.so
  local target="$1" dst="$stage/kernels/$1" b="$builds/gpu-$1"
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  mkdir -p "$dst"
  if [[ -x build-matrix/build.sh ]]; then
    echo "(build-matrix/build.sh $target)"
    # Built on the GPU machine for this run only: held to its own glibc, not the build image's.
    local glibc=""
    [[ $mode == run ]] && glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
    KH_MATRIX_MAX_GLIBC="${glibc:-${KH_MATRIX_MAX_GLIBC:-}}" build-matrix/build.sh "$target" "$b/out" || return 1
    # It checks (`kernels check-abi`) and packs each library it installs; stage those (a GPU
    # machine may have no zstd to unpack the archives with).
    for pkg in "${PKGS[@]}"; do
      local f; f="$(find "${KH_MATRIX_BUILD_ROOT:-$root/build/matrix}/$target/install/$pkg" -name "$(lib_name "$pkg" cuda)" | head -1)"
      [[ -n "$f" ]] || { echo "build-matrix/build.sh installed no $target library of $pkg"; return 1; }
      cp "$f" "$dst/" || return 1
    done
    return 0
  fi
  echo "(kernels-src standalone build, KH_BUILD_TARGET=$target)"
  cmake -S kernels-src -B "$b" "${gen[@]}" -DKH_BUILD_TARGET="$target" >"$b.configure.log" 2>&1 ||
    { tail -20 "$b.configure.log"; return 1; }
  cmake --build "$b" -j "$jobs" || return 1
  for pkg in "${PKGS[@]}"; do
    local f; f="$(find "$b/$pkg" -name "$(lib_name "$pkg" cuda)" | head -1)"
    [[ -n "$f" ]] && cp "$f" "$dst/" || { echo "no $(lib_name "$pkg" cuda) under $b/$pkg"; return 1; }
  done
}

stage_system_libraries() {  # the non-glibc shared libraries libkh and kernels need, as a fallback
  mkdir -p "$stage/syslib"
  ldd "$stage/lib/libkh.so.0" "$stage/bin/kernels" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    while read -r so; do
      case "$(basename "$so")" in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libutil.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) continue ;;  # glibc, the compiler runtime
        libicudata.so*)  # 30 MB of ICU data (through libarchive -> libxml2): staged xz-compressed
          python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(open(sys.argv[1], "rb"), lzma.open(sys.argv[2], "wb", preset=6))' \
            "$so" "$stage/syslib/$(basename "$so").xz"
          continue ;;
      esac
      cp -L "$so" "$stage/syslib/$(basename "$so")"
    done
}

stage_headers() {  # dlpack.h, which the GPU machine may lack (kernel builds and the bench include it)
  local h; h="$(echo '#include <dlpack/dlpack.h>' | "${CXX:-c++}" -x c++ -E -M - 2>/dev/null | tr ' ' '\n' | grep 'dlpack/dlpack.h$' | head -1)"
  [[ -n "$h" ]] || { echo "no dlpack/dlpack.h here (apt-get install libdlpack-dev)"; return 1; }
  mkdir -p "$stage/include/dlpack" && cp "$h" "$stage/include/dlpack/"
}

build_call_overhead_bench() {  # tests/bench/bench_call_overhead.cpp against the staged libkh
  "${CXX:-c++}" -std=c++17 -O2 -I abi/include -I "$stage/include" tests/bench/bench_call_overhead.cpp -o "$stage/bin/bench_call_overhead" \
    -L "$stage/lib" -l:libkh.so.0 -ldl -Wl,-rpath,'$ORIGIN/../lib'
}

have_kh() { [[ -x "$stage/bin/kernels" && -f "$stage/lib/libkh.so.0" ]]; }
have_target() {
  local t="$1" backend=cuda; [[ $t == cpu-* ]] && backend=cpu
  for pkg in "${PKGS[@]}"; do [[ -f "$stage/kernels/$t/$(lib_name "$pkg" $backend)" ]] || return 1; done
}

ensure_built() {  # builds whatever the stage lacks
  if [[ -n "$from_build" ]]; then
    mkdir -p "$stage/bin" "$stage/lib" "$stage/kernels/$(cpu_target)"
    cp -L "$from_build/cli/kernels" "$stage/bin/kernels" && cp -L "$from_build/loader/libkh.so" "$stage/lib/libkh.so.0" &&
      cp -L "$from_build/loader/libkh.so" "$stage/lib/libkh.so" || die "no kernels/libkh.so in $from_build"
    for pkg in "${PKGS[@]}"; do
      cp "$from_build/kernels-src/$pkg/$(lib_name "$pkg" cpu)" "$stage/kernels/$(cpu_target)/" ||
        die "$from_build has no CPU kernel libraries (configure with KH_BUILD_KERNELS=ON)"
    done
  elif ! have_kh || ! have_target "$(cpu_target)"; then
    step "building kh (release) and the CPU kernels"
    build_kh || return 1
  fi
  # KH_GPU_STAGE_GPU_LIBS=0 (stage mode): leave the GPU kernel libraries to the GPU machine,
  # which builds them in seconds (the stage then needs no CUDA build here).
  [[ $mode == stage && ${KH_GPU_STAGE_GPU_LIBS:-1} == 0 ]] && return 0
  for t in "${GPU_TARGETS[@]}"; do
    if ! have_target "$t"; then
      step "building the $t kernel libraries"
      build_gpu_target "$t" || return 1
    fi
  done
}

if [[ $mode == stage ]]; then
  printf '%s\n' "${PKGS[@]}" >"$stage/packages.txt"
  stage_headers || die "dlpack.h missing"
  ensure_built || die "build failed"
  build_call_overhead_bench || die "bench_call_overhead build failed"
  stage_system_libraries
  git -C "$root" describe --always --dirty > "$stage/SOURCE" 2>/dev/null || true
  echo "${GPU_TARGETS[*]}" > "$stage/GPU_TARGETS"
  step "staged in $stage ($(du -sh "$stage" | cut -f1)); carry it to the GPU machine"
  find "$stage" -type f -printf '%8s  %P\n' | sort -k2
  exit 0
fi

# --- on the GPU machine ---------------------------------------------------------------

no_gpu_reason() {
  command -v nvidia-smi >/dev/null || ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' || { echo "no nvidia-smi or libcuda"; return; }
  python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    { echo "no PyTorch with a CUDA device"; return; }
}
reason="$(no_gpu_reason)"
if [[ -z "$reason" && -n "$from_build" ]] && grep -qs '^KH_SANITIZE:BOOL=ON' "$from_build/CMakeCache.txt"; then
  reason="a sanitizer build's libkh cannot be loaded into python3 without preloading its runtime"
fi
if [[ -n "$reason" ]]; then
  # Exit 77: ctest reports the test as skipped (SKIP_RETURN_CODE), not as passed.
  if [[ -n "$from_build" ]]; then echo "SKIP: $reason; the GPU check runs only where a CUDA GPU and PyTorch are"; exit 77; fi
  die "$reason"
fi

work="${KH_GPU_WORK:-/tmp/kh-gpu-run}"
rm -rf "$work" && mkdir -p "$work" || die "cannot create $work"
logs="${OUT:-$work}"
mkdir -p "$logs"
export PYTHONUNBUFFERED=1
status=0
fail() { echo "FAIL: $*"; status=1; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
command -v nvcc >/dev/null && nvcc --version | tail -2 | head -1
[[ -f "$stage/SOURCE" ]] && echo "staged build of $(cat "$stage/SOURCE")"

# Shared libraries this machine lacks come from the stage's syslib/ (only those: a library
# that is present here is used as is).
use_staged_system_libraries() {
  mkdir -p "$work/syslib"
  export LD_LIBRARY_PATH="$stage/lib:$work/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  for _ in 1 2 3 4; do
    missing="$(ldd "$stage/lib/libkh.so.0" "$stage/bin/kernels" 2>/dev/null | awk '/not found/ {print $1}' | sort -u)"
    [[ -z "$missing" ]] && break
    for so in $missing; do
      if [[ -f "$stage/syslib/$so" ]]; then
        ln -sf "$stage/syslib/$so" "$work/syslib/$so"
      elif [[ -f "$stage/syslib/$so.xz" ]]; then
        python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
          "$stage/syslib/$so.xz" "$work/syslib/$so"
      else
        echo "missing here and not staged: $so"
      fi
    done
  done
  [[ -n "$(ls "$work/syslib")" ]] && echo "using staged copies of: $(ls "$work/syslib" | tr '\n' ' ')"
  missing="$(ldd "$stage/lib/libkh.so.0" "$stage/bin/kernels" 2>/dev/null | awk '/not found/ {print $1}' | sort -u)"
  [[ -z "$missing" ]] || die "shared libraries missing: $missing"
}

# With libkh and `kernels` staged, the GPU kernel libraries can be built here (the build matrix
# checks and packs them with the staged `kernels`), so set up its libraries first.
if have_kh; then
  use_staged_system_libraries
  export KH_KERNELS="${KH_KERNELS:-$stage/bin/kernels}"
fi
# The kernel builds find dlpack.h in the stage when this machine has none.
if [[ -f "$stage/include/dlpack/dlpack.h" ]] && ! echo '#include <dlpack/dlpack.h>' | "${CXX:-c++}" -x c++ -E - >/dev/null 2>&1; then
  export KH_MATRIX_CMAKE_ARGS="${KH_MATRIX_CMAKE_ARGS:-} -DKH_DLPACK_INCLUDE_DIR=$stage/include"
fi
ensure_built || die "build failed"
use_staged_system_libraries

kernels="$stage/bin/kernels"
export KH_HUB="file://$work/hub" KH_CACHE="$work/cache" KH_LIBRARY="$stage/lib/libkh.so.0"

step "pack + publish every variant to $KH_HUB"
mkdir -p "$work/dist"
for t in "$(cpu_target)" "${GPU_TARGETS[@]}"; do
  backend=cuda; [[ $t == cpu-* ]] && backend=cpu
  for pkg in "${PKGS[@]}"; do
    "$kernels" pack "$stage/kernels/$t/$(lib_name "$pkg" $backend)" --package "kernels-src/$pkg/kernel.json" \
      --out "$work/dist" || fail "kernels pack $t $pkg"
  done
done
# Signed, as users meet a hub: key, root of trust, signed publish, pinned root.
"$kernels" keys generate "$work/keys" >/dev/null || fail "kernels keys generate"
"$kernels" trust init --hub "$KH_HUB" --key "$work/keys/kh.pub" --sign "$work/keys/kh.key" >/dev/null ||
  fail "kernels trust init"
"$kernels" publish "$work/dist" --hub "$KH_HUB" --key "$work/keys/kh.key" || fail "kernels publish"
"$kernels" trust "$work/hub/root/1.root.json" --hub "$KH_HUB" >/dev/null || fail "kernels trust"

step "kernels doctor kernels-community/attention@1"
"$kernels" doctor kernels-community/attention@1 | tee "$logs/doctor.txt" || fail "kernels doctor"
"$kernels" doctor kernels-community/attention@1 --json > "$work/doctor.json" || fail "kernels doctor --json"
python3 - "$work/doctor.json" <<'EOF' || fail "doctor: sm90a must be chosen with sm80 and cpu as compatible fallbacks"
import json, sys
doc = json.load(open(sys.argv[1]))
pkgs = doc["packages"] if isinstance(doc, dict) and "packages" in doc else doc
sel = pkgs[0] if isinstance(pkgs, list) else pkgs
builds = sel["builds"]
chosen = sel["chosen"] or ""
fallback = {b["variant"].split("-")[0 if b["variant"].startswith("cpu") else 1] for b in builds
            if b["compatible"] and not b["chosen"]}
print(f"doctor: chosen {chosen}; compatible fallbacks {sorted(fallback)}")
ok = "-sm90a-" in chosen and "sm80" in fallback and "cpu" in fallback
print("doctor assertion:", "ok" if ok else "FAILED")
sys.exit(0 if ok else 1)
EOF

step "kernels get"
for pkg in "${PKGS[@]}"; do
  "$kernels" get "kernels-community/$pkg@1" | tee -a "$logs/get.txt" || fail "kernels get $pkg"
done

step "check_through_kh.py"
[[ ${KH_GPU_CHECK:-1} == 0 ]] && echo "(skipped: KH_GPU_CHECK=0)" ||
timeout "${KH_GPU_CHECK_TIMEOUT:-480}" python3 "$here/check_through_kh.py" --hub "$KH_HUB" --cache "$KH_CACHE" --out "$logs" \
  --packages "${PKGS[*]}" || fail "check_through_kh.py"

step "check_two_gpus.py (one package for each of two GPUs; skipped with fewer)"
python3 "$here/check_two_gpus.py" --hub "$KH_HUB" --cache "$KH_CACHE" | tee "$logs/two_gpus.txt"
case "${PIPESTATUS[0]}" in
  0) ;;
  77) echo "(skipped: this machine has fewer than two CUDA GPUs)" ;;
  *) fail "check_two_gpus.py" ;;
esac

if [[ $bench == 1 ]]; then
  step "bench_call_overhead (kh_op_call against the op's raw invoke)"
  [[ -x "$stage/bin/bench_call_overhead" ]] || build_call_overhead_bench || fail "bench_call_overhead build"
  "$stage/bin/bench_call_overhead" "$KH_HUB" "$KH_CACHE" || fail "bench_call_overhead"
  step "gpu_bench.py (kh against PyTorch)"
  # shellcheck disable=SC2086  # KH_GPU_BENCH_ARGS is a list of arguments
  timeout "${KH_GPU_BENCH_TIMEOUT:-300}" python3 "$root/tests/bench/gpu_bench.py" --hub "$KH_HUB" --cache "$KH_CACHE" \
    --out "$logs" ${KH_GPU_BENCH_ARGS:-} || fail "gpu_bench.py"
fi

step "exit $status"
exit $status
