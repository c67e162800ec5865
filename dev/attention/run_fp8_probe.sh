#!/usr/bin/env bash
# run_fp8_probe.sh: on the GPU machine, with a stage of tests/gpu/run.sh (libkh and its system
# libraries): builds the attention library for cuda-sm90a (and cuda-sm80 with --sm80), then runs
# every case of check_fp8.py's decode grid, the head dims, the cache write, varlen and graph checks
# in a process of its own (fp8_probe.py), and compute-sanitizer on the first case that failed.
# --prefill: the FP8 prefill instead (sm90a): its grid (check_fp8.PREFILL_CASES) in one process,
# each case in its own under compute-sanitizer if that one died, then fp8_prefill_bench.py's table.
# --record: the record run of docs/benchmarks.md (both builds): the decode grid and the cache
# write's check of each build, each in one process, the prefill grid (sm90a), fp8_decode_ab.py
# (decode against the copy floor and bf16 SDPA), fp8_read_floor_probe.py (a pure read of the same
# bytes), fp8_prefill_bench.py's table, cache_write_ab.py (the cache write against the copy rate),
# sustained_prefill_probe.py (the prefill held under load, FP8 beside bf16); each step under a
# time limit, its result printed as it ends.
#   dev/attention/run_fp8_probe.sh [--sm80 | --prefill | --record] [STAGE, default .gpu-stage]
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
targets=(cuda-sm90a)
prefill=0
[[ "${1:-}" == --sm80 ]] && { targets+=(cuda-sm80); shift; }
[[ "${1:-}" == --prefill ]] && { prefill=1; shift; }
record=0
[[ "${1:-}" == --record ]] && { record=1; targets+=(cuda-sm80); shift; }
stage="$(cd "${1:-$root/.gpu-stage}" && pwd)"
work="${TMPDIR:-/tmp}/kh-fp8-probe"
# shellcheck source=../../tests/gpu/staged_libs.sh
source "$root/tests/gpu/staged_libs.sh"
use_staged_system_libraries "$stage" "$work" || exit 1
export KH_LIBRARY="$stage/lib/libkh.so.0"
libs=()
for t in "${targets[@]}"; do
  b="$work/build-$t"
  cmake -S "$root/kernels-src" -B "$b" -DKH_BUILD_TARGET="$t" -DCMAKE_BUILD_TYPE=Release \
    -DKH_DLPACK_INCLUDE_DIR="$stage/include" >/dev/null || exit 1
  cmake --build "$b" --target kh_attention_cuda -j "$(nproc)" 2>&1 | grep -E "error|warning" | cut -c1-400
  mkdir -p "$work/$t"
  cp "$(find "$b" -name libkh_attention_cuda.so | head -1)" "$work/$t/" || exit 1
  libs+=("$work/$t/libkh_attention_cuda.so")
done
sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)"
if [[ $record == 1 ]]; then
  count() { echo "ok $(grep -c '^ok' "$1") FAIL $(grep -c '^FAIL' "$1")"; grep '^FAIL' "$1" | cut -c1-250 | head -4; }
  for lib in "${libs[@]}"; do
    timeout 120 python3 "$here/fp8_probe.py" "$lib" decode-all > "$work/record-decode.log" 2>&1
    echo "decode grid $(basename "$(dirname "$lib")"): $(count "$work/record-decode.log")"
    timeout 60 python3 "$here/fp8_probe.py" "$lib" write > "$work/record-write.log" 2>&1
    echo "write check $(basename "$(dirname "$lib")"): $(count "$work/record-write.log")"
  done
  timeout 120 python3 "$here/fp8_probe.py" "${libs[0]}" prefill > "$work/record-prefill.log" 2>&1
  echo "prefill grid cuda-sm90a: $(count "$work/record-prefill.log")"
  timeout 200 python3 "$here/fp8_decode_ab.py" "${libs[@]}"
  # What any kernel needs just to read 16 x 4k's bytes, beside the op and SDPA (the row that misses).
  timeout 150 python3 "$here/fp8_read_floor_probe.py" "${libs[0]}" --shapes 16x4096,16x32768 2>&1 | grep -v -i warn
  timeout 150 python3 "$here/fp8_probe.py" "${libs[0]}" prefill-bench 2>&1 | cut -c1-400
  timeout 100 python3 "$here/cache_write_ab.py" "${libs[0]}"
  # The prefill held under load beside bf16 (the bench's rows above are bursts; both run at the
  # board's power cap once under load: cuda/NOTES.md "The prefill at the power cap").
  timeout 120 python3 "$here/sustained_prefill_probe.py" "${libs[0]}" \
    256:16384:0:randn:fp8,256:16384:0:randn:bf16,256:8192:0:randn:fp8,256:8192:0:randn:bf16,128:8192:0:randn:fp8,128:8192:0:randn:bf16 \
    --seconds 3 2>&1 | sed -n '/^| shape/,$p'
  exit 0
fi
if [[ $prefill == 1 ]]; then
  lib="${libs[0]}"
  python3 "$here/fp8_probe.py" "$lib" prefill 2>&1 | cut -c1-400 | tee "$work/prefill.log"
  if ! grep -q "fp8 prefill graph" "$work/prefill.log"; then  # the process died: find the case
    n="$(PYTHONPATH="$root/python:$root/tests/gpu/attention" python3 -c 'import check_fp8; print(len(check_fp8.PREFILL_CASES))')"
    for i in $(seq 0 $((n - 1))); do
      python3 "$here/fp8_probe.py" "$lib" prefill "$i" >/dev/null 2>&1 && continue
      echo "== case $i failed; compute-sanitizer:"
      "$sanitizer" --print-limit 5 python3 "$here/fp8_probe.py" "$lib" prefill "$i" 2>&1 | grep -v "Host Frame" | head -40
      break
    done
  fi
  python3 "$here/fp8_probe.py" "$lib" prefill-bench 2>&1 | cut -c1-400
  exit 0
fi
first_fail=""
probe() {  # one fp8_probe.py run; remembers the first that failed
  local out st
  out="$(python3 "$here/fp8_probe.py" "$@" 2>&1)"; st=$?
  grep -E "^(ok|FAIL)" <<<"$out" | cut -c1-300
  if [[ $st -ne 0 ]]; then
    grep -qE "^(ok|FAIL)" <<<"$out" || tail -5 <<<"$out"
    [[ -z "$first_fail" ]] && first_fail="$*"
  fi
}
n="$(PYTHONPATH="$root/python:$root/tests/gpu/attention" python3 -c 'import check_fp8; print(len(check_fp8.DECODE_CASES))')"
for lib in "${libs[@]}"; do
  for i in $(seq 0 $((n - 1))); do
    for dt in bf16 f16; do
      probe "$lib" decode "$i" "$dt"
    done
  done
  for what in dims write varlen graph; do
    probe "$lib" "$what"
  done
done
if [[ -n "$first_fail" && -n "$sanitizer" ]]; then
  echo "== compute-sanitizer on: $first_fail"
  "$sanitizer" --print-limit 5 python3 "$here/fp8_probe.py" $first_fail 2>&1 | grep -v "^=========     Host Frame" | head -60
fi
