#!/usr/bin/env bash
# tests/gpu/run.sh: the GPU acceptance run of kh, end to end, as users meet it: pack and
# publish every variant (cpu and every cuda target of build-matrix/matrix.json) of every package
# to a local file:// hub, `kernels doctor` + `kernels get`, then tests/gpu/check_through_kh.py
# loads each package with kh.load_kernel() (kh_load_kernel: hub -> cache -> hash-verified ->
# dlopen) and checks every op x target x dtype x shape class against float64 references.
# Its jobs, one script each beside it: stage.sh, build-gpu-libs.sh, publish.sh, checks.sh, bench.sh.
#
#   tests/gpu/run.sh stage [DIR]   here (CPU machine, nvcc present): build libkh, `kernels`, the
#       cpu and CUDA kernel libraries (the matrix's cuda targets) and copy them into DIR (default
#       .gpu-stage, which .git/info/exclude should list) with the shared libraries they need, for
#       a GPU machine that has none of them. KH_GPU_STAGE_GPU_LIBS=0 stages libkh, `kernels`, the
#       CPU libraries and dlpack.h only: the GPU machine then builds the CUDA libraries itself
#       (seconds on its 16 cores).
#   tests/gpu/run.sh [DIR]   on the GPU machine: use DIR's staged outputs (build what is missing:
#       needs cmake, a compiler and nvcc there), pack, publish, doctor, get, check. Exit status
#       non-zero on any failure.
#   tests/gpu/run.sh --bench [DIR]   the same, then the benchmarks: tests/bench/gpu_bench.py (kh
#       against PyTorch; $OUT/gpu_bench.json) and bench_call_overhead (kh_op_call against the raw
#       invoke), which `stage` builds into DIR/bin. KH_GPU_BENCH_ARGS adds gpu_bench.py arguments
#       (e.g. "--only norms"); KH_GPU_CHECK=0 skips check_through_kh.py (bench-only runs).
#   tests/gpu/run.sh --from-build BUILD   the same, with libkh, `kernels` and the CPU kernel
#       libraries of an existing kh build tree (ctest label gpu); prints SKIP and exits 77
#       (ctest: skipped) where no CUDA GPU or PyTorch is.
#
# With the device tool: stage here (KH_GPU_TARGETS="cuda-sm90a cuda-sm80" for an H200: about 51 MB:
# 6 CUDA libraries, libkh, `kernels`, and syslib/, this machine's copies of libarchive, libcurl and
# their dependencies, used there only for what that machine lacks), then `run` with carry
# [".gpu-stage"] and the command   set -o pipefail; tests/gpu/run.sh 2>&1 | tee $OUT/run.log
# Logs (doctor.txt, get.txt, summary.txt, summary.json; with --bench gpu_bench.json) go to $OUT
# when set, else to the work folder, $KH_GPU_WORK or /tmp/kh-gpu-run (recreated on every run).
# KH_GPU_KH_SRC=<dir> builds libkh/`kernels` from another source tree (e.g. a `git archive`
# export of a commit) when the checkout is mid-change.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root" || exit 1
step() { printf '\n== %s\n' "$*"; }
die() { echo "run.sh: $*" >&2; exit 1; }

mode=run
stage=".gpu-stage"
from_build=""
bench=0
[[ "${1:-}" == --bench ]] && { bench=1; shift; }
case "${1:-}" in
  stage) mode=stage; stage="${2:-$stage}" ;;
  --from-build) from_build="${2:?--from-build needs a kh build directory}"; stage="$from_build/gpu-stage" ;;
  "") ;;
  -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
  *) stage="$1" ;;
esac
stage="$(mkdir -p "$stage" && cd "$stage" && pwd)"
builds="${from_build:-$root/build}"  # where the CUDA libraries get built
cpu_target="cpu-$(uname -m)"          # the baseline CPU target kh's own build makes

# Which cuda targets to stage and run: $KH_GPU_TARGETS (e.g. "cuda-sm90a cuda-sm80": what a
# Hopper machine runs, and what fits the device tool's 64 MiB carry; all four CUDA targets stage
# ~92 MB), else what `stage` recorded in the stage, else every cuda target of the matrix, as the
# staged `kernels targets` reads build-matrix/matrix.json.
select_gpu_targets() {
  local matrix t
  matrix="$(KH_AUTHOR_KIT="$root" "$stage/bin/kernels" targets --json | python3 -c 'import json, sys
print(*(t["key"] for t in json.load(sys.stdin)["targets"] if t["backend"] == "cuda"))')" &&
    [[ -n "$matrix" ]] || die "no cuda targets: \`kernels targets --json\` failed or listed none"
  GPU_TARGETS="${KH_GPU_TARGETS:-}"
  [[ -z "$GPU_TARGETS" && $mode != stage && -f "$stage/GPU_TARGETS" ]] && GPU_TARGETS="$(cat "$stage/GPU_TARGETS")"
  for t in ${GPU_TARGETS:=$matrix}; do
    [[ " $matrix " == *" $t "* ]] || { echo "run.sh: '$t' is not a cuda target of build-matrix/matrix.json ($matrix)" >&2; exit 2; }
  done
}

if [[ $mode == stage ]]; then
  "$here/stage.sh" "$stage" || die "staging kh failed"
  select_gpu_targets
  # KH_GPU_STAGE_GPU_LIBS=0: the GPU machine builds its CUDA libraries itself, in seconds.
  if [[ ${KH_GPU_STAGE_GPU_LIBS:-1} != 0 ]]; then
    # shellcheck disable=SC2086  # GPU_TARGETS is a list of targets
    "$here/build-gpu-libs.sh" "$stage" "$builds" $GPU_TARGETS || die "build failed"
  fi
  echo "$GPU_TARGETS" > "$stage/GPU_TARGETS"
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

# Shared libraries this machine lacks come from the stage's syslib/ (staged_libs.sh).
# shellcheck source=staged_libs.sh
source "$here/staged_libs.sh"

# libkh, `kernels` and the CPU libraries: the stage's, else (or with --from-build) staged now.
if [[ -n "$from_build" || ! -x "$stage/bin/kernels" || ! -f "$stage/lib/libkh.so.0" || ! -s "$stage/packages.txt" ]]; then
  "$here/stage.sh" "$stage" ${from_build:+"$from_build"} || die "staging kh failed"
fi
use_staged_system_libraries "$stage" "$work" || die "shared libraries missing"
# The build matrix checks and packs the CUDA libraries it builds here with the staged `kernels`.
export KH_KERNELS="${KH_KERNELS:-$stage/bin/kernels}"
# The kernel builds find dlpack.h in the stage when this machine has none.
if [[ -f "$stage/include/dlpack/dlpack.h" ]] && ! echo '#include <dlpack/dlpack.h>' | "${CXX:-c++}" -x c++ -E - >/dev/null 2>&1; then
  export KH_MATRIX_CMAKE_ARGS="${KH_MATRIX_CMAKE_ARGS:-} -DKH_DLPACK_INCLUDE_DIR=$stage/include"
fi
# Built on this machine for this run only: held to its own glibc, not the build image's.
glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
[[ -n "$glibc" ]] && export KH_MATRIX_MAX_GLIBC="$glibc"
select_gpu_targets
# shellcheck disable=SC2086  # GPU_TARGETS is a list of targets
"$here/build-gpu-libs.sh" "$stage" "$builds" $GPU_TARGETS || die "build failed"

export KH_HUB="file://$work/hub" KH_CACHE="$work/cache" KH_LIBRARY="$stage/lib/libkh.so.0"
step "pack + publish every variant to $KH_HUB"
# shellcheck disable=SC2086  # GPU_TARGETS is a list of targets
"$here/publish.sh" "$stage" "$work" "$cpu_target" $GPU_TARGETS || fail "publish.sh"
"$here/checks.sh" "$stage" "$logs" || fail "checks.sh"
if [[ $bench == 1 ]]; then
  "$here/bench.sh" "$stage" "$logs" || fail "bench.sh"
fi

step "exit $status"
exit $status
