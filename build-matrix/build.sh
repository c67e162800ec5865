#!/usr/bin/env bash
# Builds kernels-src/ for one target of build-matrix/matrix.json (or all of them), checks every
# library's ABI (`kernels check-abi`) and packs it (`kernels pack`, which checks again and
# stores the report in the package) into <out-dir>.
#
# Usage: build-matrix/build.sh <target|all> <out-dir>
#   target: a "key" of matrix.json: cpu-x86_64, cpu-x86_64_v3, cuda-sm80, cuda-sm90a, rocm-gfx942
#
# Each target configures kernels-src standalone in $KH_MATRIX_BUILD_ROOT/<target> (default
# build/matrix/<target>) with Ninja when present, ccache when present, and installs into
# <that>/install/<package>/<variant>/. A GPU target whose toolchain is missing (nvcc; clang-19
# and ld.lld-19) is skipped with a message, unless KH_MATRIX_REQUIRE=1 makes that an error.
#
# Environment:
#   KH_KERNELS            the `kernels` executable (default: build one, Release, in <build root>/host)
#   KH_MATRIX_BUILD_ROOT  where the per-target build trees go (default: <repo>/build/matrix)
#   KH_MATRIX_JOBS        parallel jobs (default: nproc)
#   KH_MATRIX_REQUIRE=1   a missing toolchain fails the build instead of skipping the target
#   KH_MATRIX_CMAKE_ARGS  extra arguments for every target's cmake configure (space-separated)
#   KH_MATRIX_MAX_GLIBC   the newest GLIBC_ a library may need, instead of matrix.json's (for builds
#                         that are tested where they are built and never published)
set -euo pipefail

usage() { echo "usage: $0 <target|all> <out-dir>   (targets: see build-matrix/matrix.json)" >&2; exit 2; }
[ $# -eq 2 ] || usage
want="$1"
mkdir -p "$2"
out="$(cd "$2" && pwd)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
root="${KH_MATRIX_BUILD_ROOT:-$repo/build/matrix}"
jobs="${KH_MATRIX_JOBS:-$(nproc)}"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
log() { printf 'build-matrix: %s\n' "$*"; }

# The table, through CMake's JSON reader.
max_glibc=""
targets=()
declare -A kh_target variant_glob requires
while read -r kind a b c rest; do
  case "$kind" in
    max_glibc) max_glibc="$a" ;;
    target) targets+=("$a"); kh_target[$a]="$b"; variant_glob[$a]="$c"; requires[$a]="$rest" ;;
  esac
done < <(cmake -DKH_MATRIX="$here/matrix.json" -P "$here/matrix.cmake")
# A build that is not published (the GPU test machine builds on its own, newer glibc) may hold
# its libraries to that machine's glibc instead.
max_glibc="${KH_MATRIX_MAX_GLIBC:-$max_glibc}"

selected=()
if [ "$want" = all ]; then
  selected=("${targets[@]}")
else
  [ -n "${kh_target[$want]:-}" ] || { echo "build-matrix: unknown target '$want' (known: ${targets[*]})" >&2; exit 2; }
  selected=("$want")
fi

# The `kernels` executable that checks and packs.
kernels="${KH_KERNELS:-}"
if [ -z "$kernels" ]; then
  host="$root/host"
  log "building the kernels tool (Release) in $host"
  cmake -S "$repo" -B "$host" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DKH_BUILD_TESTS=OFF \
    -DKH_BUILD_KERNELS=OFF >/dev/null
  cmake --build "$host" --target kernels -j "$jobs" >/dev/null
  kernels="$host/cli/kernels"
fi
[ -x "$kernels" ] || { echo "build-matrix: '$kernels' is not an executable kernels tool" >&2; exit 1; }

# The first required program that is missing, as "program (what to install)"; requires
# entries are program=Debian package (nvcc counts when CUDACXX or /usr/local/cuda has it).
missing_tool() {
  local req prog pkg
  for req in $1; do
    prog="${req%%=*}" pkg=""
    [ "$prog" != "$req" ] && pkg="${req#*=}"
    if [ "$prog" = nvcc ]; then
      [ -n "${CUDACXX:-}" ] && [ -x "$CUDACXX" ] && continue
      command -v nvcc >/dev/null && continue
      [ -x /usr/local/cuda/bin/nvcc ] && continue
      echo "nvcc (the CUDA toolkit: /usr/local/cuda, or set CUDACXX)"
      return
    fi
    command -v "$prog" >/dev/null && continue
    echo "$prog (apt-get install ${pkg:-$prog})"
    return
  done
}

build_target() {
  local t="$1" dir="$root/$1" tool
  tool="$(missing_tool "${requires[$t]}")"
  if [ -n "$tool" ]; then
    if [ "${KH_MATRIX_REQUIRE:-0}" = 1 ]; then
      echo "build-matrix: $t needs $tool, which is not installed (KH_MATRIX_REQUIRE=1)" >&2
      return 1
    fi
    log "SKIPPED $t: needs $tool; see build-matrix/matrix.json for its toolchain"
    skipped+=("$t")
    return 0
  fi
  mkdir -p "$root"
  log "$t: configuring kernels-src (KH_TARGET=${kh_target[$t]}) in $dir"
  # shellcheck disable=SC2086
  cmake -S "$repo/kernels-src" -B "$dir" "${generator[@]}" -DKH_TARGET="${kh_target[$t]}" \
    -DCMAKE_BUILD_TYPE=Release ${KH_MATRIX_CMAKE_ARGS:-} >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log" >&2; return 1; }
  log "$t: building (-j$jobs)"
  local start=$SECONDS
  cmake --build "$dir" -j "$jobs" || return 1
  log "$t: built in $((SECONDS - start)) s"
  rm -rf "$dir/install"
  cmake --install "$dir" --prefix "$dir/install" >/dev/null || return 1
  mkdir -p "$dir/abi"
  local lib pkg_dir variant pkg n=0
  for lib in "$dir"/install/*/*/lib*.so; do
    [ -f "$lib" ] || continue
    pkg_dir="$(dirname "$lib")"
    variant="$(basename "$pkg_dir")"
    pkg="$(basename "$(dirname "$pkg_dir")")"
    # shellcheck disable=SC2053
    if [[ "$variant" != ${variant_glob[$t]} ]]; then
      echo "build-matrix: $t built variant '$variant', which does not match '${variant_glob[$t]}' in matrix.json" >&2
      return 1
    fi
    "$kernels" check-abi "$lib" --target "$variant" --max-glibc "$max_glibc" --json >"$dir/abi/$pkg.json" ||
      { echo "build-matrix: $pkg ($variant) fails the ABI check:" >&2
        "$kernels" check-abi "$lib" --target "$variant" --max-glibc "$max_glibc" || true; return 1; }
    "$kernels" check-abi "$lib" --target "$variant" --max-glibc "$max_glibc" || return 1
    "$kernels" pack "$lib" --package "$pkg_dir/kernel.json" --target "$variant" --max-glibc "$max_glibc" \
      --out "$out" || return 1
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || { echo "build-matrix: $t installed no kernel library under $dir/install" >&2; return 1; }
  built+=("$t")
}

built=() skipped=() failed=()
for t in "${selected[@]}"; do
  build_target "$t" || failed+=("$t")
done
log "built: ${built[*]:-none}; skipped: ${skipped[*]:-none}; failed: ${failed[*]:-none}; packages in $out"
[ ${#failed[@]} -eq 0 ]
