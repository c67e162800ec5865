#!/usr/bin/env bash
# run_attention_dev.sh: build (if needed), check and time the CUDA attention forward on a GPU
# machine, in one go. Usage (from the repo root):
#   tests/gpu/attention/run_attention_dev.sh [build-dir]      default build-dir: build-attn-dev
# Env: KH_ATTN_MODULE=path/to/libattention.so  also checks the packaged op through the
#      kernel ABI (kh_kernel_negotiate + invoke); KH_ATTN_BENCH=0 skips the speed table;
#      KH_ATTN_HEAD_DIMS=64,128,256 picks the head dims checked.
# The development library (kernel TUs + a raw-pointer shim) is built with nvcc directly for
# the sm80 variant's flags: SASS for sm_80 + compute_80 PTX (the H200 JIT-compiles the PTX).
set -euo pipefail
KH_ATTN_PREBUILT=${KH_ATTN_PREBUILT:-0}
cd "$(dirname "$0")/../../.."
BUILD=${1:-build-attn-dev}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
SRC=kernels-src/attention/cuda
GENCODE="-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_80,code=compute_80"
FLAGS="-std=c++17 -O3 -Xcompiler -fPIC,-fvisibility=hidden --expt-relaxed-constexpr -Xptxas -v"
mkdir -p "$BUILD"
build_one() {  # $1 = source; object goes to $BUILD/<name>.o; rebuilt when the source is newer
  local obj="$BUILD/$(basename "${1%.*}").o"
  # KH_ATTN_PREBUILT=1 trusts existing objects (carried builds arrive with fresh mtimes).
  if [[ ! -f "$obj" ]] || { [[ "${KH_ATTN_PREBUILT:-0}" != 1 ]] &&
       [[ "$1" -nt "$obj" || $SRC/attention_fwd_sm80.cuh -nt "$obj" || $SRC/attention_fwd_sm80.hpp -nt "$obj" ]]; }; then
    $NVCC $FLAGS $GENCODE -c "$1" -o "$obj" 2> "$obj.log" || { cat "$obj.log"; return 1; }
    grep -E "spill|registers" "$obj.log" | sed "s|^|$(basename "$1"): |" | sort -u
  fi
}
export -f build_one; export BUILD NVCC SRC GENCODE FLAGS KH_ATTN_PREBUILT
ls $SRC/attention_fwd_sm80*.cu tests/gpu/attention/attention_sm80_shim.cu | xargs -P "$(nproc)" -I{} bash -c 'build_one {}'
LIB="$BUILD/libkh_attention_sm80_dev.so"
$NVCC -shared -cudart static $GENCODE -o "$LIB" "$BUILD"/*.o
echo "exported symbols:"; nm -D --defined-only "$LIB" | grep -v " [wWUV] " || true
[[ -n "${OUT:-}" ]] && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
BENCH_FLAG=--bench; [[ "${KH_ATTN_BENCH:-1}" == 0 ]] && BENCH_FLAG=
HD=${KH_ATTN_HEAD_DIMS:-64,128,256}
export PYTHONUNBUFFERED=1
rc=0
python3 tests/gpu/attention/attention_dev_check.py --dev-lib "$LIB" --head-dims "$HD" --expect-reject 96 $BENCH_FLAG \
  2>&1 | tee ${OUT:+$OUT/dev_check.log} || rc=1
if [[ -n "${KH_ATTN_MODULE:-}" ]]; then
  python3 tests/gpu/attention/attention_dev_check.py --module "$KH_ATTN_MODULE" --head-dims "$HD" --expect-reject 96 \
    2>&1 | tee ${OUT:+$OUT/module_check.log} || rc=1
fi
exit $rc
