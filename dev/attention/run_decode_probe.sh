#!/usr/bin/env bash
# run_decode_probe.sh: the decode comparison run of cuda/NOTES.md "Decode" on a GPU machine, from
# the repo root: builds the sm90a attention library (dev/attention/standalone, unless
# build-attn-cuda90 holds one), then times attention_decode_paged with decode_probe.py once per
# setting of the kernel's comparison switches (one process each: the library reads them once),
# and profiles two shapes with Nsight Compute when it is there (KH_PROBE_NCU=0 skips).
# KH_PROBE_BASE=<dir>: a source tree to compare against (e.g. `git archive HEAD` unpacked), built
# beside it (build-attn-cuda90-base) and timed with the same settings.
# Output: the tables on stdout; logs under $OUT (or /tmp).
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
build=build-attn-cuda90
lib=$build/attention/libkh_attention_cuda.so
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
. dev/attention/build_standalone.sh
start=$SECONDS
base=${KH_PROBE_BASE:-}
pids=()
build_attention_lib . "$build" & pids+=($!)
[[ -n "$base" ]] && { build_attention_lib "$base" "$build-base" & pids+=($!); }
for pid in "${pids[@]}"; do wait "$pid" || exit 1; done
echo "built in $((SECONDS - start)) s"
rc=0
run() {  # label, library, env assignments..., -- probe arguments...
  local label="$1" module="$2"; shift 2
  local envs=()
  while [[ $# -gt 0 && "$1" != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 240 python3 dev/attention/decode_probe.py --module "$module" --label "$label" "$@" 2>&1 |
    tee -a "$LOG/decode_probe.log" | grep -E '^(##|\|)|Error|error|correctness|FAIL' || rc=1
}
so=attention/libkh_attention_cuda.so
new=$build/$so old=$build-base/$so
all=b1x4096,b1x32768,b16x4096,b16x32768,b64x8192,b128x4096
# Run 11 (cuda/NOTES.md "Decode"): the combine kernel with 1, 2 or 4 warps a row by split count
# and every load of a batch in flight at once, and the split kernel's block ids read an iteration
# ahead (new), against the previous commit (base).
run "check, new" "$new" -- --check --shapes b16x4096
run "check, new, 64 splits" "$new" KH_ATTENTION_DECODE_SPLITS=64 -- --check --shapes b1x32768
run "check, new, 12 splits" "$new" KH_ATTENTION_DECODE_SPLITS=12 -- --check --shapes b1x4096
for round in 1 2; do
  [[ -n "$base" ]] && run "base, round $round" "$old" -- --shapes $all
  run "new, round $round" "$new" -- --shapes $all
done
run "SDPA" "$new" -- --sdpa --shapes $all
if [[ "${KH_PROBE_NCU:-1}" != 0 ]] && command -v ncu >/dev/null; then
  # Batch 1 x 4k: how the call's time divides between the split kernel and the combine.
  timeout 120 ncu --clock-control none --kernel-name regex:"decode_" --launch-skip 6 --launch-count 4 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum \
    python3 dev/attention/decode_probe.py --module "$new" --shapes b1x4096 >"$LOG/ncu_b1.txt" 2>&1 || rc=1
  grep -E "^  [^ ].*\(|gpu__time|dram__bytes" "$LOG/ncu_b1.txt" | head -24
fi
echo "== exit $rc"
exit $rc
