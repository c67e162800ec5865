#!/usr/bin/env bash
# run_grid_profile.sh: where the length-balanced decode grid's 0-4% on equal lengths goes
# (cuda/NOTES.md "Decode"), on a GPU machine from the repo root. For each shape (KH_PROBE_SHAPES,
# default b16x32768,b128x4096), the split kernel of the balanced grid (the default rule) and of
# the plain grid (KH_ATTENTION_DECODE_BALANCED=0) under Nsight Compute, one process each, then
# the metrics side by side: time, DRAM and L2 traffic, how evenly the SMs were busy, instructions,
# registers and the warps' stall reasons. Also the SASS of both d128 TMA kernels (cuobjdump) in
# $OUT (from the library's build directory), for a diff of their key loops. KH_PROBE_LIB: the
# library (default build/pr-bal).
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
lib=${KH_PROBE_LIB:-build/pr-bal/attention/libkh_attention_cuda.so}
shapes=${KH_PROBE_SHAPES:-b16x32768,b128x4096}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
command -v ncu >/dev/null || { echo "no ncu"; exit 1; }
metrics="gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed"
metrics+=",lts__t_sectors_op_read.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum"
metrics+=",sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,sm__cycles_elapsed.avg"
metrics+=",smsp__inst_executed.sum,launch__registers_per_thread,launch__grid_size,launch__shared_mem_per_block_dynamic"
metrics+=",l1tex__m_xbar2l1tex_read_bytes.sum,smsp__warps_active.avg.per_cycle_active"
metrics+=",regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
rc=0
for shape in ${shapes//,/ }; do
  for setting in balanced plain; do
    envs=()
    [[ $setting == plain ]] && envs=(KH_ATTENTION_DECODE_BALANCED=0)
    out="$LOG/ncu_${setting}_$shape.txt"
    env "${envs[@]}" timeout 200 ncu --clock-control none --kernel-name regex:"decode_(balanced|staged)_kernel" \
      --launch-skip 4 --launch-count 1 --metrics "$metrics" \
      python3 dev/attention/decode_probe.py --module "$lib" --shapes "$shape" >"$out" 2>&1 || rc=1
  done
  echo "== $shape: balanced | plain (split kernel only)"
  python3 - "$LOG/ncu_balanced_$shape.txt" "$LOG/ncu_plain_$shape.txt" <<'PY'
import re, sys
def read(path):
    vals = {}
    for line in open(path, errors="replace"):
        m = re.match(r"\s{4}(\S+)\s+(\S+)?\s+([-\d.,e+]+)\s*$", line)
        if m:
            vals[m.group(1)] = (m.group(2) or "", m.group(3))
    return vals
a, b = read(sys.argv[1]), read(sys.argv[2])
for k in sorted(set(a) | set(b)):
    va, vb = a.get(k, ("", "-")), b.get(k, ("", "-"))
    if va[1] in ("0", "0.00") and vb[1] in ("0", "0.00"):
        continue
    print(f"{k:<88} {va[0]:>8} {va[1]:>16} {vb[1]:>16}")
PY
done
if command -v cuobjdump >/dev/null; then
  obj=$(find "$(dirname "$(dirname "$lib")")" -name "attention_decode_bf16_tpr16.cu.o" | head -1)
  if [[ -n "$obj" ]]; then
    cuobjdump -sass "$obj" >"$LOG/decode_bf16_tpr16.sass" 2>&1 || rc=1
    cuobjdump -res-usage "$obj" >"$LOG/decode_bf16_tpr16.res" 2>&1 || rc=1
    echo "SASS of $obj in \$OUT/decode_bf16_tpr16.sass"
  fi
fi
exit $rc
