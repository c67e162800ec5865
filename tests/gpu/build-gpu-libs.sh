#!/usr/bin/env bash
# tests/gpu/build-gpu-libs.sh <stage> <build-dir> <cuda target>...: for each target the stage
# lacks, the CUDA kernel libraries of the staged packages, built, ABI-checked (`kernels
# check-abi`) and packed by build-matrix/build.sh into <build-dir>/gpu-<target>/out, then copied
# into <stage>/kernels/<target>/ (a GPU machine may have no zstd to unpack the archives with).
# build.sh's environment applies (KH_KERNELS, KH_MATRIX_MAX_GLIBC, KH_MATRIX_CMAKE_ARGS, ...).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
stage="$1" builds="$2"
shift 2
mapfile -t pkgs <"$stage/packages.txt"
for target in "$@"; do
  dst="$stage/kernels/$target" staged=1
  for p in "${pkgs[@]}"; do [[ -f "$dst/libkh_${p//-/_}_cuda.so" ]] || staged=0; done
  [[ $staged == 1 ]] && continue
  printf '\n== building the %s kernel libraries (build-matrix/build.sh)\n' "$target"
  "$root/build-matrix/build.sh" "$target" "$builds/gpu-$target/out"
  mkdir -p "$dst"
  for p in "${pkgs[@]}"; do
    lib="$(find "${KH_MATRIX_BUILD_ROOT:-$root/build/matrix}/$target/install/$p" -name "libkh_${p//-/_}_cuda.so" 2>/dev/null | head -1)" || true
    [[ -n "$lib" ]] || { echo "build-matrix/build.sh installed no $target library of $p" >&2; exit 1; }
    cp "$lib" "$dst/"
  done
done
