#!/usr/bin/env bash
# run_profile_probe.sh: where the remaining time goes in two of issue 12's misses, on a GPU machine,
# from the repo root (cuda/NOTES.md, runs 12 of "Decode" and the varlen sections):
#  - attention_varlen_fwd on mixed lengths against attention_fwd on equal ones (varlen_probe.py),
#    timed, then both kernels under Nsight Compute (speed of light, warp stalls);
#  - attention_decode_paged at batch 1 x 4k: both kernels' durations with warm caches (Nsight
#    Compute, --cache-control none) and the timeline of back-to-back calls (Nsight Systems).
# Builds the sm90a library first (build_standalone.sh). Logs under $OUT (or /tmp).
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
. dev/attention/build_standalone.sh
build=build-attn-cuda90
lib=$build/attention/libkh_attention_cuda.so
# KH_PROBE_BASE=<dir>: a source tree (e.g. `git archive HEAD` unpacked) whose library is built
# beside it and timed in the varlen table too; KH_PROBE_NCU=0 skips the profilers.
start=$SECONDS
base=${KH_PROBE_BASE:-}
build_attention_lib . "$build" & pid=$!
[[ -n "$base" ]] && { build_attention_lib "$base" "$build-base" || exit 1; }
wait $pid || exit 1
echo "built in $((SECONDS - start)) s"
rc=0
vp="python3 dev/attention/varlen_probe.py --module $lib"
echo "| call | env | varlen ms | TF/s | equal ms | TF/s | ratio |"
for round in 1 2; do
  for lens in 2048,1024,4096,1024,3072,1024,2048,2048 8192,1024,5120,2048 2048,2048,2048,2048,2048,2048,2048,2048; do
    for c in "" --causal; do
      [[ -n "$base" ]] && { python3 dev/attention/varlen_probe.py --module "$build-base/attention/libkh_attention_cuda.so" --label base --lens $lens $c || rc=1; }
      $vp --label new --lens $lens $c || rc=1
      [[ $round == 1 ]] && { KH_ATTENTION_VARLEN_PERSISTENT=0 $vp --label new --lens $lens $c || rc=1; }
    done
  done
done
if [[ "${KH_PROBE_NCU:-1}" != 0 ]] && command -v ncu >/dev/null; then
  # The same work both ways (8 x 2k, full): where the varlen instance's warps wait longer.
  for only in varlen fixed; do
    timeout 150 ncu --clock-control none --kernel-name regex:attention_fwd_sm90 --launch-skip 2 --launch-count 1 \
      --metrics "$KH_PREFILL_NCU_METRICS" $vp --lens 2048,2048,2048,2048,2048,2048,2048,2048 --only $only >"$LOG/ncu_varlen_$only.txt" 2>&1 || rc=1
    echo "== ncu $only (8 x 2k full)"
    grep -E "^  [^ ].*\(|^    [a-z]" "$LOG/ncu_varlen_$only.txt" | awk '$NF != "0" && $NF != "0.00"' | head -40
  done
  timeout 120 ncu --cache-control none --clock-control none --kernel-name regex:decode_ --launch-skip 10 --launch-count 4 \
    --metrics gpu__time_duration.sum python3 dev/attention/decode_probe.py --module "$lib" --shapes b1x4096 \
    >"$LOG/ncu_b1_warm.txt" 2>&1 || rc=1
  echo "== ncu decode b1 x 4k, warm caches"
  grep -E "^  [^ ].*\(|gpu__time" "$LOG/ncu_b1_warm.txt" | head -12
fi
if [[ "${KH_PROBE_NCU:-1}" != 0 ]] && command -v nsys >/dev/null; then
  timeout 150 nsys profile -o "$LOG/decode_b1" --force-overwrite true -t cuda \
    python3 dev/attention/decode_probe.py --module "$lib" --shapes b1x4096 >"$LOG/nsys_b1.txt" 2>&1 || rc=1
  nsys stats -r cuda_gpu_trace -f csv -o "$LOG/decode_b1" "$LOG/decode_b1.nsys-rep" >/dev/null 2>&1 || rc=1
  echo "== nsys decode b1 x 4k: the last 12 GPU operations (start ns, duration ns, name)"
  f=$(ls "$LOG"/decode_b1*cuda_gpu_trace*.csv 2>/dev/null | head -1)
  [[ -n "$f" ]] && python3 - "$f" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
rows = [r for r in rows if "decode" in r.get("Name", "") or "Event" in r.get("Name", "")][-12:]
prev = None
for r in rows:
    s, d = int(r["Start (ns)"]), int(r["Duration (ns)"])
    gap = "" if prev is None else f" gap {s - prev} ns"
    print(f"{s} {d} {r['Name'][:60]}{gap}")
    prev = s + d
PY
else
  echo "(no nsys)"
fi
echo "== exit $rc"
exit $rc
