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
lib=$build/attention-cuda/libkh_attention_cuda.so
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
if [[ ! -f "$lib" ]]; then
  start=$SECONDS
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S tests/gpu/attention/standalone -B "$build" "${gen[@]}" -DKH_TARGET=cuda-sm90a ${KH_DLPACK_INCLUDE_DIR:+-DKH_DLPACK_INCLUDE_DIR=$KH_DLPACK_INCLUDE_DIR} >"$LOG/probe_cmake.log" 2>&1 &&
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
# Run 6 (cuda/NOTES.md "Decode"): P V on the tensor cores against the default, same run.
run "tensor-core P V" KH_ATTENTION_DECODE_VARIANT=tcpv -- --check --sdpa
run "defaults (CUDA-core P V)" KH_PROBE=1 --
run "tensor-core P V + dependent combine" KH_ATTENTION_DECODE_VARIANT=tcpv KH_ATTENTION_DECODE_PDL=1 --
run "tensor-core P V, block size 256" KH_ATTENTION_DECODE_VARIANT=tcpv -- --block-size 256 --shapes b1x32768,b16x32768,b128x4096
if [[ "${KH_PROBE_NCU:-1}" != 0 ]] && command -v ncu >/dev/null; then
  for shape in b128x4096; do
    KH_ATTENTION_DECODE_VARIANT=tcpv timeout 200 ncu --clock-control none --kernel-name regex:decode_mma_kernel --launch-skip 5 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
      --section SchedulerStats $probe --label "ncu $shape" --shapes "$shape" >"$LOG/ncu_$shape.txt" 2>&1 || rc=1
    grep -E "DRAM Throughput|Memory Throughput|Duration|Achieved Occupancy|Theoretical Occupancy|Issued Warp|No Eligible|Stall|L2 Hit|Mem Busy|Max Bandwidth|Registers Per" \
      "$LOG/ncu_$shape.txt" | head -40
  done
fi
echo "== exit $rc"
exit $rc
