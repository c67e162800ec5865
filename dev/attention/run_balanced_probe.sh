#!/usr/bin/env bash
# run_balanced_probe.sh: the length-balanced decode grid (cuda/attention_decode_balanced.cuh)
# against the plain grid of the same library (KH_ATTENTION_DECODE_BALANCED=0; one process per
# setting: the library reads its switches once), on a GPU machine from the repo root: first
# check_decode.py's cases against float64 with the grid on, then mixed-length batches (lengths
# spread over 1/16 x KV .. KV) and the equal batches of the same keys, and the uniform shapes of
# gpu_bench, in alternating rounds (KH_PROBE_ROUNDS, default 2). KH_PROBE_LIB: the library
# (default: the standalone build of dev/attention/build_standalone.sh in build/pr-bal).
# The shapes (bBxKV lists): KH_PROBE_MIXED (spread lengths), KH_PROBE_SKEWED (one KV-long sequence
# among KV / 32 ones; none by default), KH_PROBE_UNIFORM (equal lengths).
# Output: the tables on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
lib=${KH_PROBE_LIB:-build/pr-bal/attention/libkh_attention_cuda.so}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
rc=0
run() {  # label, env assignments..., -- probe arguments...
  local label="$1"; shift
  local envs=()
  while [[ $# -gt 0 && "$1" != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 300 python3 dev/attention/decode_probe.py --module "$lib" --label "$label" "$@" 2>&1 |
    tee -a "$LOG/balanced_probe.log" | grep -E '^(##|\|)|Error|error|correctness|FAIL' || rc=1
}
run "check, balanced" -- --check --shapes b16x4096 || exit 1
grep -q "correctness: .* 0 failed" "$LOG/balanced_probe.log" || { echo "correctness failed"; exit 1; }
mixed=${KH_PROBE_MIXED-b16x32768,b64x16384}
skewed=${KH_PROBE_SKEWED-}
uniform=${KH_PROBE_UNIFORM-b16x4096,b16x32768,b64x8192,b128x4096,b16x17408,b64x8704}
both() {  # label, probe arguments...: the default rule's process, then the plain grid's
  local label="$1"; shift
  run "default rule, $label" -- "$@"
  run "plain, $label" KH_ATTENTION_DECODE_BALANCED=0 -- "$@"
}
for round in $(seq 1 "${KH_PROBE_ROUNDS:-2}"); do
  [[ -n "$mixed" ]] && both "round $round" --mixed 0.0625 --shapes "$mixed"
  [[ -n "$skewed" ]] && both "round $round" --mixed 0.03125 --one-long --shapes "$skewed"
  [[ -n "$uniform" ]] && both "round $round" --shapes "$uniform"
done
exit $rc
