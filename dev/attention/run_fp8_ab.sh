#!/usr/bin/env bash
# run_fp8_ab.sh: on the GPU machine, A/B builds of the attention package's FP8 paths in one run.
# Each VARIANT is NAME=SOURCE_ROOT[:CUDA_FLAGS] (SOURCE_ROOT: a copy of the repository's kernels-src,
# abi, cmake and build-matrix folders, e.g. a branch exported with `git archive BRANCH kernels-src
# abi cmake build-matrix | tar -x -C DIR`; CUDA_FLAGS: probe macros such as -DKH_DEV_FP8_QK_SS).
# Builds every variant's sm90a release library (in parallel), then for each but the first (the
# baseline, a tree already checked) the checks of KH_AB_CHECKS (fp8_probe.py modes, or "none"; default
# "prefill decode-all write": the FP8 prefill grid, the decode grid, the cache-write check), and
# across all, in one process each, the A/B tables of KH_AB_TABLES (default "prefill decode write":
# fp8_prefill_ab.py, fp8_decode_ab.py, cache_write_ab.py; also "bf16": prefill_probe.py on the
# 16-bit attention_fwd; "none": no table). Every step is time-limited and prints as it ends; keep a
# call within the GPU machine's 600 s (a build takes ~40 s alone, a check 10-40 s).
# KH_AB_SASS=REGEX: also sass_waits.py on every variant's library (the prefill instances matching REGEX).
#   KH_AB_CHECKS=prefill KH_AB_TABLES=prefill dev/attention/run_fp8_ab.sh STAGE base=. q=/tmp/src-q qss=/tmp/src-q:-DKH_DEV_FP8_QK_SS
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
stage="$(cd "$1" && pwd)"; shift
work="${TMPDIR:-/tmp}/kh-fp8-ab"
# shellcheck source=../../tests/gpu/staged_libs.sh
source "$root/tests/gpu/staged_libs.sh"
use_staged_system_libraries "$stage" "$work" || exit 1
export KH_LIBRARY="$stage/lib/libkh.so.0"
t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 )) s"; }
build() {  # name source flags
  local b="$work/build-$1" src
  src="$(cd "$2" && pwd)"
  cmake -S "$src/kernels-src" -B "$b" -G Ninja -DKH_BUILD_TARGET=cuda-sm90a -DCMAKE_BUILD_TYPE=Release \
    -DKH_DLPACK_INCLUDE_DIR="$stage/include" "-DCMAKE_CUDA_FLAGS=$3" > "$work/$1.configure.log" 2>&1 ||
    { echo "$1: configure failed"; tail -5 "$work/$1.configure.log"; return; }
  timeout 480 cmake --build "$b" --target kh_attention_cuda -j "$(nproc)" > "$work/$1.build.log" 2>&1 ||
    { echo "$1: build failed or timed out"; grep -E "error" "$work/$1.build.log" | head -5; return; }
  mkdir -p "$work/$1" && cp "$(find "$b" -name libkh_attention_cuda.so | head -1)" "$work/$1/"
}
names=(); libs=()
for v in "$@"; do
  name="${v%%=*}"; rest="${v#*=}"; src="${rest%%:*}"; flags=""
  [[ "$rest" == *:* ]] && flags="${rest#*:}"
  names+=("$name"); libs+=("$work/$name/libkh_attention_cuda.so")
  rm -rf "${work:?}/${name:?}"
  build "$name" "$src" "$flags" &
done
wait
echo "built in $(elapsed)"
ok=()
for i in "${!names[@]}"; do
  lib="${libs[$i]}"
  [[ -f "$lib" ]] || { echo "${names[$i]}: no library"; continue; }
  ok+=("$lib")
  [[ $i -eq 0 ]] && continue
  for what in ${KH_AB_CHECKS:-prefill decode-all write}; do
    [[ "$what" == none ]] && continue
    timeout 150 python3 "$here/fp8_probe.py" "$lib" $what > "$work/${names[$i]}.$what.log" 2>&1
    echo "${names[$i]} $what: ok $(grep -c '^ok' "$work/${names[$i]}.$what.log") FAIL $(grep -c '^FAIL' "$work/${names[$i]}.$what.log") ($(elapsed))"
    grep '^FAIL' "$work/${names[$i]}.$what.log" | cut -c1-250 | head -4
  done
done
[[ ${#ok[@]} -gt 0 ]] || exit 1
if [[ -n "${KH_AB_SASS:-}" ]]; then  # where each variant's prefill instances wait for P V
  PATH="$PATH:/usr/local/cuda/bin"
  for i in "${!names[@]}"; do
    [[ -f "${libs[$i]}" ]] || continue
    echo "== ${names[$i]}: waits for P V"
    timeout 120 python3 "$here/sass_waits.py" "${libs[$i]}" "$KH_AB_SASS" | sort -u
  done
fi
for table in ${KH_AB_TABLES:-prefill decode write}; do
  case "$table" in
    prefill) timeout 150 python3 "$here/fp8_prefill_ab.py" "${ok[@]}" ;;
    decode) timeout 200 python3 "$here/fp8_decode_ab.py" "${ok[@]}" ;;
    write) timeout 150 python3 "$here/cache_write_ab.py" "${ok[@]}" ;;
    bf16)  # the 16-bit attention_fwd of every variant (prefill probes that also touch the 16-bit instances)
      mods=(); for i in "${!names[@]}"; do [[ -f "${libs[$i]}" ]] && mods+=(--module "${names[$i]}=${libs[$i]}"); done
      timeout 200 python3 "$here/prefill_probe.py" "${mods[@]}" --shapes b2s8192h16d128f,b2s8192h16d128c,b2s8192h8d256f,b2s8192h8d256c ;;
  esac
done
echo "total $(elapsed)"
