#!/usr/bin/env bash
# sanitize_decode_bad_ids.sh: attention_decode_paged's bad block ids under compute-sanitizer
# memcheck, on the GPU machine, after tests/gpu/run.sh has published the builds to its hub.
# check_decode.py's "bad block ids" section (ids -1, num_blocks, INT32_MIN and INT32_MAX inside
# the lengths and past them, on every GPU kernel path) checks the values; this shows that no
# kernel reads outside the caches for them, which the values alone cannot (a stray read of other
# memory need not fault or change a masked result).
#
#   tests/gpu/attention/sanitize_decode_bad_ids.sh [WORK [STAGE]]
#     WORK:  tests/gpu/run.sh's work folder (KH_GPU_WORK; default /tmp/kh-gpu-run): its hub/ and cache/
#     STAGE: the staged outputs (default .gpu-stage): lib/libkh.so.0
# Exit status: compute-sanitizer's (non-zero on any memory error) or the check's.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="${1:-${KH_GPU_WORK:-/tmp/kh-gpu-run}}"
stage="$(cd "${2:-.gpu-stage}" && pwd)"
command -v compute-sanitizer >/dev/null || { echo "SKIP: no compute-sanitizer"; exit 77; }
[[ -d "$work/hub" && -d "$work/cache" ]] || { echo "no hub/cache in $work: run tests/gpu/run.sh first"; exit 2; }
export KH_HUB="file://$work/hub" KH_CACHE="$work/cache" KH_LIBRARY="$stage/lib/libkh.so.0"
# The system libraries run.sh linked from the stage's syslib/ for what this machine lacks.
export LD_LIBRARY_PATH="$stage/lib:$work/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KH_GPU_CHECK_ONLY="attention decode bad block ids"
out="${OUT:-$work}/sanitize"
mkdir -p "$out"
# Only the decode kernels are instrumented (the rest of the process runs at full speed).
exec timeout "${KH_SANITIZE_TIMEOUT:-300}" compute-sanitizer --tool memcheck --error-exitcode 3 --print-limit 20 \
  --kernel-name kns=decode python3 "$here/../check_through_kh.py" --hub "$KH_HUB" --cache "$KH_CACHE" \
  --out "$out"
