#!/usr/bin/env bash
# ctest build_matrix_pipeline: build-matrix/publish.sh into a fresh file hub, then
# `kernels info --json` must show every package with every expected variant.
# Usage: pipeline_test.sh <source-dir> <kh-build-dir> <work-dir>
# Environment (set by tests/build_matrix/CMakeLists.txt): KH_KERNELS, and
#   KH_MATRIX_EXPECT_GFX942=1|0  whether rocm*-gfx942 is expected (flip it there, option
#                                KH_MATRIX_EXPECT_GFX942, or in the environment)
set -euo pipefail
src="$1" build="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"

# The expectation, one glob per variant every package must have.
expected=(
  "cpu-x86_64-abi1-x86_64-linux"
  "cpu-x86_64_v3-abi1-x86_64-linux"
  "cuda13.0-sm80-abi1-x86_64-linux"
  "cuda13.0-sm90a-abi1-x86_64-linux"
)
targets="cpu-x86_64 cpu-x86_64_v3 cuda-sm80 cuda-sm90a"
if [ "${KH_MATRIX_EXPECT_GFX942:-1}" = 1 ]; then
  expected+=("rocm*-gfx942-abi1-x86_64-linux")
  targets="$targets rocm-gfx942"
fi

# Every expected target must build here: a missing toolchain is a failure, not a skip.
KH_BUILD_DIR="$build" KH_MATRIX_REQUIRE=1 KH_MATRIX_TARGETS="$targets" \
  "$src/build-matrix/publish.sh" "file://$work/hub" "$work/dist"

export KH_CACHE="$work/cache"
# The test hub is unsigned (no KH_SIGNING_KEY here): reading it needs the development opt-in.
export KH_ALLOW_UNSIGNED=1
status=0
for pkg_dir in "$src"/kernels-src/*/; do
  [ -f "$pkg_dir/kernel.json" ] || continue
  repo="kernels-community/$(basename "$pkg_dir")"
  "$KH_KERNELS" info "$repo" --hub "file://$work/hub" --json >"$work/info.json"
  have="$(grep -o '"variant": "[^"]*"' "$work/info.json" | sed 's/.*": "//; s/"$//' | sort -u)"
  for want in "${expected[@]}"; do
    found=0
    for v in $have; do
      # shellcheck disable=SC2053
      [[ "$v" == $want ]] && found=1
    done
    if [ "$found" = 1 ]; then
      echo "pipeline: $repo has $want"
    else
      echo "pipeline: $repo lacks a variant matching $want (has: $(echo $have))" >&2
      status=1
    fi
  done
done
[ "$status" = 0 ] && echo "pipeline: every package has all ${#expected[@]} variants"
exit "$status"
