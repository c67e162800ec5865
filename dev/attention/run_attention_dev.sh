#!/usr/bin/env bash
# run_attention_dev.sh: build (if needed), check and time the CUDA attention forward on a GPU
# machine in one go, from the repo root:
#   dev/attention/run_attention_dev.sh [sm80|sm90a]...       default: sm80 sm90a
# For each variant it builds kh_attention_cuda (op table, shared argument rules, CUDA backend)
# with dev/attention/standalone (the development build: KH_ATTENTION_EXPERIMENTS=ON) into
# build-attn-cuda (sm80) / build-attn-cuda90 (sm90a)
# unless the library is there (build it on the CPU machine and carry the folder to save GPU
# time), then, through the kernel ABI (kh_kernel_negotiate + the op's invoke on DLTensors and
# the caller's stream):
#   1. the correctness sweep against float64 (attention_dev_check.py): head dims 64/128/256,
#      bf16/fp16, causal or not, odd lengths, sq != sk, GQA/MQA, packed (strided) q/k/v;
#   2. compute-sanitizer memcheck (+ racecheck for sm80) on a few small shapes
#      (KH_ATTN_SANITIZE=0 skips);
#   3. a speed table against PyTorch SDPA's flash and cuDNN backends (KH_ATTN_BENCH=0 skips);
#      for sm90a also with KH_ATTENTION_FORCE_SM80=1 (the same library's sm80 kernel;
#      KH_ATTN_BENCH_SM80_KERNEL=0 skips that table).
# Logs go to $OUT when it is set (the device tool's output folder), else /tmp.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
VARIANTS=("$@"); [[ ${#VARIANTS[@]} -eq 0 ]] && VARIANTS=(sm80 sm90a)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
rc=0
for variant in "${VARIANTS[@]}"; do
  build=build-attn-cuda; [[ $variant == sm90a ]] && build=build-attn-cuda90
  lib=$build/attention/libkh_attention_cuda.so
  if [[ ! -f "$lib" ]]; then
    echo "== building $lib"
    cmake -S dev/attention/standalone -B "$build" -G Ninja -DKH_BUILD_TARGET=cuda-$variant -DKH_ATTENTION_EXPERIMENTS=ON > "$LOG/cmake_$variant.log" 2>&1 &&
      cmake --build "$build" -j "$(nproc)" >> "$LOG/cmake_$variant.log" 2>&1 || { tail -40 "$LOG/cmake_$variant.log"; rc=1; continue; }
  fi
  check="dev/attention/attention_dev_check.py --module $lib"
  echo "== $variant: correctness"
  timeout 300 python3 $check --expect-reject 96 > "$LOG/correctness_$variant.log" 2>&1 || rc=1
  grep -E "FAIL|REJECTED|rejected|ACCEPTED|CORRECTNESS|variant|Error|error" "$LOG/correctness_$variant.log" | head -30
  if [[ "${KH_ATTN_SANITIZE:-1}" != 0 ]] && command -v compute-sanitizer > /dev/null; then
    tools=(memcheck); [[ $variant == sm80 ]] && tools+=(racecheck)
    for tool in "${tools[@]}"; do
      echo "== $variant: compute-sanitizer --tool $tool (quick shapes, d=64,128, bf16)"
      timeout 150 compute-sanitizer --tool $tool --kernel-name kns=attention_fwd --print-limit 20 \
        python3 $check --quick --head-dims 64,128 --dtypes bf16 > "$LOG/sanitize_${variant}_$tool.log" 2>&1 || rc=1
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Invalid|hazard|CORRECTNESS" "$LOG/sanitize_${variant}_$tool.log" | head -8
    done
  fi
  if [[ "${KH_ATTN_BENCH:-1}" != 0 ]]; then
    timeout 200 python3 $check --head-dims "" --bench --label "kh $variant" 2>&1 | tee "$LOG/bench_$variant.log" | sed -n '/^speed/,$p'
    if [[ $variant == sm90a && "${KH_ATTN_BENCH_SM80_KERNEL:-1}" != 0 ]]; then
      KH_ATTENTION_FORCE_SM80=1 timeout 200 python3 $check --head-dims "" --bench --label "kh sm90a library, sm80 kernel" \
        2>&1 | tee "$LOG/bench_${variant}_force_sm80.log" | sed -n '/^speed/,$p'
    fi
  fi
done
echo "== exit $rc"
exit $rc
