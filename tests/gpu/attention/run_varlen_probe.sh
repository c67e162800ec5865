#!/usr/bin/env bash
# run_varlen_probe.sh: the causal varlen comparison run of cuda/NOTES.md (the varlen sections) on a
# GPU machine, from the repo root: builds the sm90a attention library (tests/gpu/attention/
# standalone, unless build-attn-cuda90 holds one), then, per case (lengths : head dim), checks that
# every head grouping of the causal list gives bit-identical output and times attention_varlen_fwd
# under each grouping setting in turn (varlen_probe.py --settings) beside attention_fwd on equal
# lengths with the same tokens.
#   KH_PROBE_VARLEN_CASES="2048,1024:128 8192,1024:64"  KH_PROBE_VARLEN_SETTINGS="0,auto,1"
# Output: the table on stdout; logs under $OUT (or /tmp).
set -uo pipefail
cd "$(dirname "$0")/../../.."
LOG=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
build=build-attn-cuda90
lib=$build/attention/libkh_attention_cuda.so
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
. tests/gpu/attention/build_standalone.sh
start=$SECONDS
build_attention_lib . "$build" || exit 1
echo "built in $((SECONDS - start)) s"
mix2k=2048,1024,4096,1024,3072,1024,2048,2048
cases=${KH_PROBE_VARLEN_CASES:-"$mix2k:128 8192,1024,5120,2048:128 16384,8192,4096,4096:128 $mix2k:64 $mix2k:96 $mix2k:192 $mix2k:256"}
settings=${KH_PROBE_VARLEN_SETTINGS:-0,auto,1,2}
rc=0
echo "| case | setting | varlen ms | TF/s | attention_fwd equal ms | TF/s | vs equal |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for c in $cases; do
  lens=${c%%:*} d=${c#*:}
  timeout 240 python3 tests/gpu/attention/varlen_probe.py --module "$lib" --lens "$lens" --head-dim "$d" --causal \
    --check-groups --settings "$settings" --rounds 2 2>&1 | tee -a "$LOG/varlen_probe.log" |
    grep -E '^\||head groups|Error|error' || rc=1
  grep -q DIFFERENT "$LOG/varlen_probe.log" && rc=1
done
echo "== exit $rc"
exit $rc
