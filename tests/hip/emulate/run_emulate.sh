#!/usr/bin/env bash
# run_emulate.sh: builds and runs attention_emulate.cpp (the gfx942 attention kernel on the
# host SIMT emulator, checked against float64). Needs clang-19 (the kernel uses clang vector
# extensions and _Float16). Exit 77 (skipped) without it.
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
"$clang" -x c++ -std=c++17 -O2 -Wall -Wextra -Wno-unknown-attributes \
  -isystem "$here/include" -I "$root/kernels-src/attention/hip" \
  "$here/attention_emulate.cpp" -o "$out/attention_emulate" -lstdc++ -lm || { echo "FAIL: build"; exit 1; }
"$out/attention_emulate" "${args[@]}"
