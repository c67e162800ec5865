#!/usr/bin/env bash
# tests/gpu/bench.sh <stage> <logs>: the GPU run's benchmarks against $KH_HUB and $KH_CACHE:
# bench_call_overhead (kh_op_call against the op's raw invoke) and tests/bench/gpu_bench.py (kh
# against PyTorch; <logs>/gpu_bench.json; KH_GPU_BENCH_ARGS adds its arguments, e.g. "--only norms").
# tests/gpu/bench.sh --build <stage>: builds <stage>/bin/bench_call_overhead against the staged libkh.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build_only=0
[[ "${1:-}" == --build ]] && { build_only=1; shift; }
stage="$1" status=0
step() { printf '\n== %s\n' "$*"; }
fail() { echo "FAIL: $*"; status=1; }
build_call_overhead() {
  # shellcheck disable=SC2016  # $ORIGIN is the loader's, not the shell's
  "${CXX:-c++}" -std=c++17 -O2 -I "$root/abi/include" -I "$stage/include" "$root/tests/bench/bench_call_overhead.cpp" \
    -o "$stage/bin/bench_call_overhead" -L "$stage/lib" -l:libkh.so.0 -ldl -Wl,-rpath,'$ORIGIN/../lib'
}
[[ $build_only == 1 ]] && { build_call_overhead; exit; }

step "bench_call_overhead (kh_op_call against the op's raw invoke)"
[[ -x "$stage/bin/bench_call_overhead" ]] || build_call_overhead || fail "bench_call_overhead build"
"$stage/bin/bench_call_overhead" "$KH_HUB" "$KH_CACHE" || fail "bench_call_overhead"
step "gpu_bench.py (kh against PyTorch)"
# shellcheck disable=SC2086  # KH_GPU_BENCH_ARGS is a list of arguments
timeout "${KH_GPU_BENCH_TIMEOUT:-300}" python3 "$root/tests/bench/gpu_bench.py" --hub "$KH_HUB" --cache "$KH_CACHE" \
  --out "$2" ${KH_GPU_BENCH_ARGS:-} || fail "gpu_bench.py"
exit $status
