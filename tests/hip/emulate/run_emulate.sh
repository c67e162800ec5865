#!/usr/bin/env bash
# run_emulate.sh: builds and runs attention_emulate.cpp, decode_emulate.cpp, norms_emulate.cpp and
# pointwise_emulate.cpp (the gfx942 attention, paged-decode, row-norm, activation and rotary
# kernels on the host SIMT emulator, checked against float64). Needs
# clang-19 (the kernels use clang vector extensions and _Float16). Exit 77 (skipped) without it.
# --quick runs the attention set's short list (the norm set is short already).
#   tests/hip/emulate/run_emulate.sh [--quick] [build dir, default: a temporary one]
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
args=()
if [[ "${1:-}" == "--quick" ]]; then
  args+=(--quick)
  shift
fi
clang="$(command -v clang++-19 || command -v clang-19 || true)"
if [[ -z "$clang" ]]; then
  echo "SKIP: clang-19 is needed (apt-get install clang-19)"
  exit 77
fi
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
flags=(-x c++ -std=c++17 -O2 -Wall -Wextra -isystem "$here/include")
"$clang" "${flags[@]}" -I "$root/kernels-src/attention/hip" \
  "$here/attention_emulate.cpp" -o "$out/attention_emulate" -lstdc++ -lm || { echo "FAIL: build"; exit 1; }
"$clang" "${flags[@]}" -I "$root/kernels-src/attention/hip" -I "$root/kernels-src/attention/src" \
  "$here/decode_emulate.cpp" -o "$out/decode_emulate" -lstdc++ -lm || { echo "FAIL: build"; exit 1; }
dlpack="$(echo '#include <dlpack/dlpack.h>' | "$clang" -x c++ -E -H - 2>&1 >/dev/null | sed -n 's|^\. \(.*\)/dlpack/dlpack.h$|\1|p')"
"$clang" "${flags[@]}" -I "$root/kernels-src/rms-norm/hip" -I "$root/kernels-src/common/include" \
  -I "$root/abi/include" ${dlpack:+-I "$dlpack"} \
  "$here/norms_emulate.cpp" -o "$out/norms_emulate" -lstdc++ -lm || { echo "FAIL: build"; exit 1; }
"$clang" "${flags[@]}" -I "$root/kernels-src/activation/hip" -I "$root/kernels-src/activation/src" \
  -I "$root/kernels-src/rotary/hip" -I "$root/kernels-src/rotary/src" -I "$root/kernels-src/common/include" \
  -I "$root/abi/include" ${dlpack:+-I "$dlpack"} \
  "$here/pointwise_emulate.cpp" -o "$out/pointwise_emulate" -lstdc++ -lm || { echo "FAIL: build"; exit 1; }
status=0
"$out/attention_emulate" "${args[@]}" || status=1
"$out/decode_emulate" || status=1
"$out/norms_emulate" || status=1
"$out/pointwise_emulate" || status=1
exit $status
