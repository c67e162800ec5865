#!/usr/bin/env bash
# run_sass_probe.sh: where a decode call's instructions go, per SASS instruction, for sm90a
# attention libraries built elsewhere (as run_ab_probe.sh takes them), from the repo root:
#   dev/attention/run_sass_probe.sh LABEL=LIB.so.xz LABEL2=LIB2.so.xz ...
# For each library, Nsight Compute's source counters (each SASS instruction with the times it was
# executed, warp-level) of one decode split kernel on the first of KH_AB_SHAPES / KH_AB_HEAD_DIMS
# (default b64x8192, 80; KH_SASS_KERNEL, a regex, picks the kernel: default the staged or balanced
# split kernel), as CSV: $OUT/sass_LABEL.csv.xz. This machine's CPU side has no SASS
# disassembler; the GPU machine's Nsight Compute has one (cuda/NOTES.md "Decode", bad block ids).
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
[[ $# -ge 1 ]] || { echo "usage: $0 LABEL=LIB.so.xz ..." >&2; exit 2; }
command -v ncu >/dev/null || { echo "$0: no ncu on this machine" >&2; exit 2; }
shapes=${KH_AB_SHAPES:-b64x8192} dims=${KH_AB_HEAD_DIMS:-80}
work=$(mktemp -d)
rc=0
for arg in "$@"; do
  label=${arg%%=*} src=${arg#*=}
  [[ -f "$src" ]] || { echo "$0: no library $src" >&2; rc=2; continue; }
  xz -dc "$src" >"$work/$label.so" || { rc=1; continue; }
  timeout 200 ncu --clock-control none --kernel-name "regex:${KH_SASS_KERNEL:-decode_(staged|balanced)_kernel}" --launch-skip 4 --launch-count 1 \
    --section SourceCounters --section LaunchStats -o "$work/$label" -f \
    python3 dev/attention/decode_probe.py --module "$work/$label.so" --shapes "${shapes%%,*}" \
    --head-dims "${dims%%,*}" >"$LOG/sass_$label.log" 2>&1 || { tail -20 "$LOG/sass_$label.log"; rc=1; continue; }
  ncu -i "$work/$label.ncu-rep" --page source --csv --print-source sass >"$work/sass_$label.csv" 2>>"$LOG/sass_$label.log" ||
    { tail -20 "$LOG/sass_$label.log"; rc=1; }
  ncu -i "$work/$label.ncu-rep" --page details --section LaunchStats >>"$LOG/sass_$label.log" 2>&1
  echo "== $label: $(wc -l <"$work/sass_$label.csv") rows"
  head -c 600 "$work/sass_$label.csv"; echo
  xz -9c "$work/sass_$label.csv" >"$LOG/sass_$label.csv.xz"
done
rm -rf "$work"
echo "== exit $rc"
exit $rc
