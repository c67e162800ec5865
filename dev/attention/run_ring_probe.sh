#!/usr/bin/env bash
# run_ring_probe.sh: standalone sm90a attention libraries built with different wide-CTA shapes
# (KH_DECODE_WIDE_WARPS / KH_DECODE_WIDE_STAGES: the same 192 KiB ring spent as more stages for
# fewer warps; cuda/NOTES.md "Decode") timed against each other, on a GPU machine from the repo
# root. Each library is first checked (check_decode.py's cases against float64), then all are
# timed in alternating processes, KH_PROBE_ROUNDS rounds (default 2), on KH_PROBE_UNIFORM (equal
# lengths) and KH_PROBE_MIXED (lengths spread over 1/16 x KV .. KV).
#   KH_PROBE_LIBS="label=path label=path ..."   (required)
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
uniform=${KH_PROBE_UNIFORM-b16x4096,b16x32768,b64x8192,b128x4096}
mixed=${KH_PROBE_MIXED-b16x32768}
rc=0
probe() {  # label, library, probe arguments...
  local label="$1" lib="$2"; shift 2
  timeout 300 python3 dev/attention/decode_probe.py --module "$lib" --label "$label" "$@" 2>&1 |
    tee -a "$LOG/ring_probe.log" | grep -E '^(##|\|)|Error|error|correctness|FAIL' || rc=1
}
for entry in ${KH_PROBE_LIBS:?KH_PROBE_LIBS: label=path ...}; do
  probe "check, ${entry%%=*}" "${entry#*=}" --check --shapes b16x4096
done
for round in $(seq 1 "${KH_PROBE_ROUNDS:-2}"); do
  for entry in $KH_PROBE_LIBS; do
    [[ -n "$uniform" ]] && probe "${entry%%=*}, round $round" "${entry#*=}" --shapes "$uniform"
    [[ -n "$mixed" ]] && probe "${entry%%=*}, round $round" "${entry#*=}" --mixed 0.0625 --shapes "$mixed"
  done
done
grep -c "correctness: .* 0 failed" "$LOG/ring_probe.log"
exit $rc
