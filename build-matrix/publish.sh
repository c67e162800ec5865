#!/usr/bin/env bash
# The CI half of kh in one command: build every target of build-matrix/matrix.json, check and
# pack each library (build.sh), run the CPU kernel tests on the freshly built CPU libraries,
# and publish the packages to a hub.
#
# Usage: build-matrix/publish.sh <hub-url> [out-dir]
#   hub-url  file:///path (what `kernels publish` writes to)
#   out-dir  where the package archives go (default: build/matrix/dist)
#
# Environment:
#   KH_BUILD_DIR    a kh build tree holding cli/kernels and the test_matrix_cpu_* tests (default:
#                   configure and build those, Release, in <build root>/host)
#   KH_KERNELS      the `kernels` executable (default: $KH_BUILD_DIR/cli/kernels)
#   KH_SIGNING_KEY  a minisign secret key file: `kernels publish` signs every index it writes
#                   with it (the hub's root decides whether signatures are required)
#   KH_MATRIX_TARGETS  which targets to build (default: all)
#   and build.sh's: KH_MATRIX_BUILD_ROOT, KH_MATRIX_JOBS, KH_MATRIX_REQUIRE, KH_MATRIX_CMAKE_ARGS
set -euo pipefail

[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 <hub-url> [out-dir]" >&2; exit 2; }
hub="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
root="${KH_MATRIX_BUILD_ROOT:-$repo/build/matrix}"
out="${2:-$root/dist}"
jobs="${KH_MATRIX_JOBS:-$(nproc)}"
step() { printf '\n== publish: %s\n' "$*"; }

# 1. The host tools: kernels, and the CPU kernel tests that take their libraries at run time
#    (test_matrix_cpu_<pkg>: one per package, tests/build_matrix/CMakeLists.txt; the target
#    matrix_cpu_tests builds them all and matrix_cpu_tests.txt lists them).
build="${KH_BUILD_DIR:-}"
if [ -z "$build" ]; then
  build="$root/host"
  step "building kernels and the CPU kernel tests (Release) in $build"
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DKH_BUILD_TESTS=ON \
    -DKH_BUILD_KERNELS=OFF >/dev/null
  cmake --build "$build" -j "$jobs" --target kernels matrix_cpu_tests >/dev/null
fi
export KH_KERNELS="${KH_KERNELS:-$build/cli/kernels}"
tests_list="$build/tests/build_matrix/matrix_cpu_tests.txt"
[ -f "$tests_list" ] || { echo "publish: $tests_list is missing: build the target matrix_cpu_tests in $build" >&2; exit 1; }
mapfile -t tests <"$tests_list"

# 2. Build, check and pack every target (a fresh dist: no archive from an earlier run slips in).
rm -rf "$out"
mkdir -p "$out"
for target in ${KH_MATRIX_TARGETS:-all}; do
  step "build-matrix/build.sh $target"
  "$here/build.sh" "$target" "$out"
done

# 3. The CPU kernel tests on the CPU libraries just built (the cpu targets of matrix.json; an
# x86-64 level above this CPU's, as kh's own probe sees it, is packed but not tested here).
level="$("$KH_KERNELS" doctor --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["host"]["x86_isa_level"])')"
while read -r kind target backend arch _; do
  [ "$kind" = target ] && [ "$backend" = cpu ] || continue
  install="$root/$target/install"
  [ -d "$install" ] || continue
  need="${arch#x86_64_v}"  # x86_64_vN needs level N; x86_64 and other CPUs' baseline, none
  if [[ "$need" =~ ^[0-9]+$ ]] && [ "$need" -gt "$level" ]; then
    echo "publish: this CPU cannot run $arch: the $target libraries are packed but not tested here"
    continue
  fi
  variant="$(basename "$(dirname "$(ls "$install"/*/*/lib*.so | head -n 1)")")"
  step "CPU kernel tests on $target ($variant)"
  for t in "${tests[@]}"; do
    KH_MATRIX_CPU_DIR="$install" KH_MATRIX_CPU_VARIANT="$variant" "$t"
  done
done < <(cmake -DKH_MATRIX="$here/matrix.json" -P "$here/matrix.cmake")

# 4. Publish. Signing: `kernels publish` signs with $KH_SIGNING_KEY when it is set.
if [ -n "${KH_SIGNING_KEY:-}" ]; then
  step "publishing $(ls "$out"/*.tar.zst | wc -l) packages to $hub, signed with \$KH_SIGNING_KEY"
else
  step "publishing $(ls "$out"/*.tar.zst | wc -l) packages to $hub (unsigned: KH_SIGNING_KEY is not set)"
fi
"$KH_KERNELS" publish "$out" --hub "$hub"
