#!/usr/bin/env bash
# run_decode_probe.sh: the decode comparison run of cuda/NOTES.md "Decode" on a GPU machine, from
# the repo root: builds the sm90a attention library (tests/gpu/attention/standalone, unless
# build-attn-cuda90 holds one), then times attention_decode_paged with decode_probe.py once per
# setting of the kernel's comparison switches (one process each: the library reads them once),
# and profiles two shapes with Nsight Compute when it is there (KH_PROBE_NCU=0 skips).
# Output: the tables on stdout; logs under $OUT (or /tmp).
set -uo pipefail
cd "$(dirname "$0")/../../.."
LOG=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
build=build-attn-cuda90
lib=$build/attention/libkh_attention_cuda.so
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
if [[ ! -f "$lib" ]]; then
  start=$SECONDS
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S tests/gpu/attention/standalone -B "$build" "${gen[@]}" -DKH_BUILD_TARGET=cuda-sm90a ${KH_DLPACK_INCLUDE_DIR:+-DKH_DLPACK_INCLUDE_DIR=$KH_DLPACK_INCLUDE_DIR} >"$LOG/probe_cmake.log" 2>&1 &&
    cmake --build "$build" -j "$(nproc)" >>"$LOG/probe_cmake.log" 2>&1 || { tail -30 "$LOG/probe_cmake.log"; exit 1; }
  echo "built $lib in $((SECONDS - start)) s"
fi
probe="python3 tests/gpu/attention/decode_probe.py --module $lib"
rc=0
run() {  # label, env assignments..., -- probe arguments...
  local label="$1"; shift
  local envs=()
  while [[ $# -gt 0 && "$1" != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 240 $probe --label "$label" "$@" 2>&1 | tee -a "$LOG/decode_probe.log" | grep -E '^(##|\|)|Error|error|correctness|FAIL' || rc=1
}
# Run 8 (cuda/NOTES.md "Decode"): K and V staged through shared memory in whole lines
# (staged, the default since) against both products from registers (tcpv).
run "check, staged" KH_ATTENTION_DECODE_VARIANT=staged -- --check --shapes b16x4096
for v in staged tcpv; do
  run "$v, heads 32/8" KH_ATTENTION_DECODE_VARIANT=$v -- --shapes b1x4096,b1x32768,b16x4096,b16x32768,b64x8192,b128x4096
done
run "staged, heads 64/8" KH_ATTENTION_DECODE_VARIANT=staged -- --heads 64/8 --shapes b16x4096,b16x32768,b128x4096
run "staged, q_len 2" KH_ATTENTION_DECODE_VARIANT=staged -- --q-len 2 --shapes b16x8192,b64x8192
run "staged, block size 256" KH_ATTENTION_DECODE_VARIANT=staged -- --block-size 256 --shapes b1x32768,b16x32768,b128x4096
run "SDPA" KH_ATTENTION_DECODE_VARIANT=staged -- --sdpa --shapes b1x4096,b1x32768,b16x4096,b16x32768,b64x8192,b128x4096
if [[ "${KH_PROBE_NCU:-1}" != 0 ]] && command -v ncu >/dev/null; then
  m=lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum
  m=$m,gpu__time_duration.sum,breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed
  KH_ATTENTION_DECODE_VARIANT=staged timeout 200 ncu --clock-control none --kernel-name regex:decode_staged \
    --launch-skip 5 --launch-count 1 --metrics "$m" --section Occupancy --section SchedulerStats \
    $probe --shapes b128x4096 >"$LOG/ncu_staged.txt" 2>&1 || rc=1
  grep -E "^  [^ ].*\(|lts__t_req|lts__t_sec|ltcfabric|dram__|gpu__time|Achieved Occ|Issued Warp|No Eligible" \
    "$LOG/ncu_staged.txt" | head -20
fi
echo "== exit $rc"
exit $rc
