#!/usr/bin/env bash
# run_variant_probe.sh: builds of this tree's sm90a attention library that differ only in
# compile-time probe switches, timed side by side on a GPU machine, from the repo root
# (cuda/NOTES.md: the probe runs of the prefill and decode sections).
#   KH_PROBE_VARIANTS="label:-DA=1 -DB=2;label2:-DC=0" dev/attention/run_variant_probe.sh
# The first variant is the reference (give it no switches to compare against the defaults).
# prefill_probe.py times attention_fwd of every build in one process (KH_PROBE_PREFILL_SHAPES);
# decode_probe.py times attention_decode_paged once per build and round, after checking the
# decode cases of every build but the first against float64. KH_PROBE_NCU=1 adds Nsight Compute
# metrics of the first build's attention_fwd on KH_PROBE_NCU_SHAPES (comma-separated). Logs under $OUT (or /tmp).
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
. dev/attention/build_standalone.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
IFS=';' read -r -a specs <<<"${KH_PROBE_VARIANTS:-ref:}"
labels=() libs=() pids=()
start=$SECONDS
for spec in "${specs[@]}"; do
  label=${spec%%:*} flags=${spec#*:}
  dir=build-attn-cuda90-$label
  labels+=("$label") libs+=("$dir/attention/libkh_attention_cuda.so")
  build_attention_lib . "$dir" "-DCMAKE_CUDA_FLAGS=$flags" & pids+=($!)
  echo "variant $label: ${flags:-(defaults)}"
done
for pid in "${pids[@]}"; do wait "$pid" || exit 1; done
echo "built ${#libs[@]} libraries in $((SECONDS - start)) s"
rc=0
mods=()
for i in "${!libs[@]}"; do mods+=(--module "${labels[$i]}=${libs[$i]}"); done
if [[ "${KH_PROBE_PREFILL:-1}" != 0 ]]; then
  echo "== attention_fwd (bf16), medians of 2 rounds, libraries alternating"
  timeout 300 python3 dev/attention/prefill_probe.py "${mods[@]}" \
    ${KH_PROBE_PREFILL_SHAPES:+--shapes $KH_PROBE_PREFILL_SHAPES} 2>&1 | tee "$LOG/prefill_probe.log" || rc=1
fi
if [[ "${KH_PROBE_DECODE:-1}" != 0 ]]; then
  all=b1x4096,b1x32768,b16x4096,b16x32768,b64x8192,b128x4096
  for i in "${!libs[@]}"; do
    [[ $i == 0 ]] && continue
    timeout 240 python3 dev/attention/decode_probe.py --module "${libs[$i]}" --label "check ${labels[$i]}" \
      --check --shapes b16x4096 2>&1 | grep -E "correctness|FAIL|Error" || rc=1
  done
  for round in 1 2; do
    for i in "${!libs[@]}"; do
      timeout 240 python3 dev/attention/decode_probe.py --module "${libs[$i]}" \
        --label "${labels[$i]}, round $round" --shapes $all 2>&1 | tee -a "$LOG/decode_probe.log" |
        grep -E '^(##|\|)|Error|error' || rc=1
    done
  done
fi
if [[ "${KH_PROBE_NCU:-0}" != 0 ]] && command -v ncu >/dev/null; then
  IFS=',' read -r -a shapes <<<"${KH_PROBE_NCU_SHAPES:-b4s4096h16d192c,b4s4096h16d192f}"
  for shape in "${shapes[@]}"; do
    timeout 200 ncu --clock-control none --kernel-name regex:attention_fwd_sm90 --launch-skip 1 --launch-count 1 \
      --metrics "$KH_PREFILL_NCU_METRICS" python3 dev/attention/prefill_probe.py --module "${labels[0]}=${libs[0]}" --rounds 1 \
      --shapes "$shape" >"$LOG/ncu_prefill_$shape.txt" 2>&1 || rc=1
    echo "== ncu ${labels[0]} $shape"
    grep -E "^  [^ ].*\(|^    [a-z]" "$LOG/ncu_prefill_$shape.txt" | awk '$NF != "0" && $NF != "0.00"' | head -40
  done
fi
echo "== exit $rc"
exit $rc
