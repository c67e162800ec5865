#!/usr/bin/env bash
# Installs what is missing, builds kh with AddressSanitizer + UndefinedBehaviorSanitizer
# (the `ci` preset) and runs every test. GPU tests skip cleanly without a GPU.
# Usage: scripts/test.sh            (KH_PRESET=dev for a build without sanitizers)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-deps.sh
preset="${KH_PRESET:-ci}"
# Let ccache reuse objects compiled in another checkout of the repo (CI clones afresh).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
jobs="$(nproc)"

cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
ctest --preset "$preset" -j "$jobs"
