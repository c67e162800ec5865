#!/usr/bin/env bash
# tests/lint_python.sh: pylint's error checks (-E: calls with the wrong arguments, undefined
# names, bad attributes) over the repository's Python: python/kh, the GPU checks, the GPU
# benchmark and the development probes (dev/). Those scripts need a CUDA GPU and PyTorch, so
# no CPU-only CI run executes them; this is what catches a broken call there before a device
# run does (it would have caught both crashes the 2026-11-30 refactor of tests/gpu/norms left
# behind). Imports pylint cannot resolve here (torch) are not errors. Exit status: pylint's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
command -v pylint >/dev/null ||
  { echo "lint_python.sh: pylint is not installed (scripts/install-deps.sh installs it)" >&2; exit 1; }
mapfile -t files < <(find python tests dev -name '*.py' -not -path '*/__pycache__/*' | sort)
[[ ${#files[@]} -gt 0 ]] || { echo "lint_python.sh: no Python files found under python/, tests/ and dev/" >&2; exit 1; }
echo "pylint -E over ${#files[@]} files"
# The scripts put these folders on sys.path themselves; pylint needs them to follow imports.
# kh._kh is the compiled extension (python/src/_kh.c), which a source tree does not hold.
PYTHONPATH="python:tests/gpu:tests/gpu/attention:tests/gpu/norms:tests/gpu/pointwise:tests/bench:dev/attention${PYTHONPATH:+:$PYTHONPATH}" \
  pylint -E --disable=import-error --generated-members=kh._kh --persistent=n --score=n "${files[@]}"
