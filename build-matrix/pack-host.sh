#!/usr/bin/env bash
# Packs the host-CPU builds of every package in kernels-src/ with a CPU backend
# (kernels-src/list-packages.sh) from a kh build tree.
# Usage: pack-host.sh <kernels-exe> <build-dir> <dist-dir>
set -euo pipefail
kernels="$1" build="$2" dist="$3"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$dist"
# Sanitizer builds link the sanitizer runtimes and a shared libstdc++: they are never
# published, so they skip the ABI check (advisory here: no --target), whose warnings would
# only be noise. build-matrix/build.sh packs with --target, which enforces it.
pack_flags=()
grep -qs '^KH_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" && pack_flags+=(--no-abi-check)
for pkg in $("$src/kernels-src/list-packages.sh" --backend cpu --field dir); do
  pkg_dir="$src/kernels-src/$pkg"
  ident="${pkg//-/_}"
  lib="$build/kernels-src/$pkg/libkh_${ident//./_}_cpu.so"
  if [ ! -f "$lib" ]; then
    echo "pack-host: $lib is missing; build the kernels first (cmake --build $build)" >&2
    exit 1
  fi
  "$kernels" pack "$lib" --package "$pkg_dir/kernel.json" --out "$dist" ${pack_flags[@]+"${pack_flags[@]}"}
done
