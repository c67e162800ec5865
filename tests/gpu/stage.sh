#!/usr/bin/env bash
# tests/gpu/stage.sh <stage> [<kh build>]: the GPU run's host half (tests/gpu/run.sh), into
# <stage>: libkh, `kernels` and the CPU kernel libraries (copied from <kh build>, else from a
# release build made here, of $KH_GPU_KH_SRC when set, else of this checkout; kept when staged
# already), the package list, dlpack.h, bench_call_overhead, and the shared libraries they need:
# a GPU machine may have none of them; and kh installed in <stage>/kh (for `kernels build`).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
stage="$1" from="${2:-}"
cpu="$stage/kernels/cpu-$(uname -m)"
mkdir -p "$stage/bin" "$stage/lib" "$stage/include/dlpack" "$stage/syslib" "$cpu"

# The packages with a CPU and a CUDA backend (their manifests say so), recorded for a GPU
# machine without cmake, which list-packages.sh needs.
"$root/kernels-src/list-packages.sh" | awk '$4 ~ /(^|,)cpu(,|$)/ && $4 ~ /(^|,)cuda(,|$)/ {print $1}' >"$stage/packages.txt"
mapfile -t pkgs <"$stage/packages.txt"
[[ ${#pkgs[@]} -gt 0 ]] || { echo "stage: kernels-src/list-packages.sh lists no package with cpu and cuda" >&2; exit 1; }

# dlpack.h, which the GPU machine may lack (kernel builds and the bench include it).
h="$(echo '#include <dlpack/dlpack.h>' | "${CXX:-c++}" -x c++ -E -M - 2>/dev/null | tr ' ' '\n' | grep 'dlpack/dlpack.h$' | head -1)" || true
[[ -n "$h" ]] && cp "$h" "$stage/include/dlpack/"
[[ -f "$stage/include/dlpack/dlpack.h" ]] || { echo "stage: no dlpack/dlpack.h here (apt-get install libdlpack-dev)" >&2; exit 1; }

staged() {
  [[ -x "$stage/bin/kernels" && -f "$stage/lib/libkh.so.0" && -x "$stage/kh/bin/kernels" ]] || return 1
  for p in "${pkgs[@]}"; do [[ -f "$cpu/libkh_${p//-/_}_cpu.so" ]] || return 1; done
}
if [[ -z "$from" ]] && staged; then
  echo "(libkh, kernels and the CPU kernel libraries are staged already)"
else
  if [[ -z "$from" ]]; then
    from="$root/build/gpu-release"
    printf '\n== building kh (release) and the CPU kernels in %s\n' "$from"
    gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S "${KH_GPU_KH_SRC:-$root}" -B "$from" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DKH_BUILD_TESTS=OFF >/dev/null
    cmake --build "$from" -j "$(nproc 2>/dev/null || echo 2)"
  fi
  cp -L "$from/cli/kernels" "$stage/bin/kernels"
  cp -L "$from/loader/libkh.so" "$stage/lib/libkh.so.0"
  cp -L "$from/loader/libkh.so" "$stage/lib/libkh.so"
  for p in "${pkgs[@]}"; do
    cp "$from/kernels-src/$p/libkh_${p//-/_}_cpu.so" "$cpu/" ||
      { echo "stage: $from has no CPU kernel libraries (configure with KH_BUILD_KERNELS=ON)" >&2; exit 1; }
  done
  # kh installed as an author has it (kh/bin/kernels, the author kit, khConfig.cmake, headers and
  # dlpack.h): `kernels build` runs only from an installation (check_load_refusal.py).
  cmake --install "$from" --prefix "$stage/kh" --strip >/dev/null
  mkdir -p "$stage/kh/include/dlpack" && cp "$stage/include/dlpack/dlpack.h" "$stage/kh/include/dlpack/"
fi
"$here/bench.sh" --build "$stage"

# The non-glibc shared libraries libkh and kernels need, used there only where missing.
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
describe="$(git -C "$root" describe --always --dirty 2>/dev/null)" && echo "$describe" >"$stage/SOURCE" || true
