#!/usr/bin/env bash
# run_norms_dev.sh: the dev loop of the CUDA norms: build (if needed) and correctness.
#
#   dev/norms/run_norms_dev.sh build          # here: both arches, into build-norms/
#   dev/norms/run_norms_dev.sh [check] [check80]   # on the GPU machine (KH_LIBRARY: libkh.so)
#
# build    configures kernels-src for cuda-sm90a and cuda-sm80 (the release build), builds the
#          two packages' libraries and copies them to build-norms/lib/<arch>/. Other steps build
#          first only when those are missing, so a GPU run can carry build-norms/lib from a
#          build made elsewhere.
# check    tests/gpu/norms/check_norms.py on the sm90a libraries (full sweep).
# check80  check_norms.py --quick on the sm80 libraries (run on an H200 through their PTX).
# The benchmark is tests/bench/gpu_bench.py (tests/gpu/run.sh --bench), through a hub as users load.
# With no step: check check80. Exit status: non-zero when any step fails.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${KH_NORMS_BUILD:-$root/build-norms}"
arches=(sm90a sm80)

build_arch() {
  local arch="$1"
  local dir="$out/$arch"
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$root/kernels-src" -B "$dir" "${gen[@]}" -DKH_BUILD_TARGET="cuda-$arch" \
        -DCMAKE_CUDA_COMPILER="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}" >/dev/null || return 1
  cmake --build "$dir" -j "$(nproc)" --target kh_rms_norm_cuda kh_layer_norm_cuda || return 1
  mkdir -p "$out/lib/$arch"
  cp "$dir"/rms-norm/libkh_rms_norm_cuda.so "$dir"/layer-norm/libkh_layer_norm_cuda.so "$out/lib/$arch/"
}

have_libs() { [[ -f "$out/lib/$1/libkh_rms_norm_cuda.so" && -f "$out/lib/$1/libkh_layer_norm_cuda.so" ]]; }

ensure_built() {
  have_libs "$1" && return 0
  echo "== building $1 (no libraries in $out/lib/$1)"
  build_arch "$1"
}

run_py() {  # script arch [args...]
  local script="$1" arch="$2"
  shift 2
  ensure_built "$arch" || return 1
  (cd "$root/tests/gpu/norms" && PYTHONUNBUFFERED=1 python3 "$script" --rms "$out/lib/$arch/libkh_rms_norm_cuda.so" \
      --layer "$out/lib/$arch/libkh_layer_norm_cuda.so" "$@")
}

steps=("$@")
[[ ${#steps[@]} -eq 0 ]] && steps=(check check80)
status=0
for step in "${steps[@]}"; do
  echo "== $step"
  case "$step" in
    build) for a in "${arches[@]}"; do build_arch "$a" || status=1; done ;;
    check) run_py check_norms.py sm90a || status=1 ;;
    check80) run_py check_norms.py sm80 --quick || status=1 ;;
    *) echo "unknown step '$step' (build, check, check80)"; status=2 ;;
  esac
done
exit $status
