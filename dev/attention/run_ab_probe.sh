#!/usr/bin/env bash
# run_ab_probe.sh: sm90a attention libraries built elsewhere (the CPU machine: build_standalone.sh
# from two or more source trees, xz-compressed to fit the device tool's carry) timed side by side
# on a GPU machine, from the repo root (the A/B tables of cuda/NOTES.md "Decode").
#   dev/attention/run_ab_probe.sh LABEL=LIB.so.xz LABEL2=LIB2.so.xz ...
# Every library but the first is checked first (decode_probe.py --check: check_decode.py's cases
# against float64; KH_AB_UNCHECKED="label ..." skips controls that would fail them); then
# decode_probe.py times each library in its own process, alternating, for two rounds.
# KH_AB_SHAPES (default b16x4096,b64x8192) and KH_AB_HEAD_DIMS (default 80,96) pick the calls;
# KH_AB_NCU=1 adds Nsight Compute metrics of each library's decode kernels on the first
# shape and head dim (time, instructions, DRAM bytes, warp stalls). Logs under $OUT (or /tmp).
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
. dev/attention/build_standalone.sh  # KH_PREFILL_NCU_METRICS
[[ $# -ge 2 ]] || { echo "usage: $0 LABEL=LIB.so.xz LABEL2=LIB2.so.xz ..." >&2; exit 2; }
shapes=${KH_AB_SHAPES:-b16x4096,b64x8192} dims=${KH_AB_HEAD_DIMS:-80,96}
work=$(mktemp -d)
labels=() libs=()
for arg in "$@"; do
  label=${arg%%=*} src=${arg#*=}
  [[ -f "$src" ]] || { echo "$0: no library $src" >&2; exit 2; }
  xz -dc "$src" >"$work/$label.so" || exit 1
  labels+=("$label") libs+=("$work/$label.so")
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
rc=0
probe=dev/attention/decode_probe.py
for i in "${!libs[@]}"; do
  [[ $i == 0 || " ${KH_AB_UNCHECKED:-} " == *" ${labels[$i]} "* ]] && continue
  timeout 240 python3 $probe --module "${libs[$i]}" --label "check ${labels[$i]}" --check --shapes b16x4096 \
    --head-dims "$dims" 2>&1 | grep -E "correctness|passed|FAIL|Error" || rc=1
done
for round in 1 2; do
  for i in "${!libs[@]}"; do
    timeout 240 python3 $probe --module "${libs[$i]}" --label "${labels[$i]}, round $round" --shapes "$shapes" \
      --head-dims "$dims" 2>&1 | tee -a "$LOG/ab_probe.log" | grep -E '^(##|\|)|Error|error' || rc=1
  done
done
if [[ "${KH_AB_NCU:-0}" != 0 ]] && command -v ncu >/dev/null; then
  for i in "${!libs[@]}"; do
    out="$LOG/ncu_ab_${labels[$i]}.txt"
    timeout 150 ncu --clock-control none --kernel-name regex:decode_ --launch-skip 4 --launch-count 2 \
      --metrics "$KH_PREFILL_NCU_METRICS" python3 $probe --module "${libs[$i]}" --shapes "${shapes%%,*}" \
      --head-dims "${dims%%,*}" >"$out" 2>&1 || rc=1
    echo "== ncu ${labels[$i]} ${shapes%%,*} d${dims%%,*}"
    grep -E "^  [^ ].*\(|^    [a-z]" "$out" | awk '$NF != "0" && $NF != "0.00"' | head -60
  done
fi
rm -rf "$work"
echo "== exit $rc"
exit $rc
