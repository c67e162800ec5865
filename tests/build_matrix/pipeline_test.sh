#!/usr/bin/env bash
# ctest build_matrix_pipeline: build-matrix/publish.sh into a fresh file hub, then
# `kernels info --json` must show every package with every expected variant, and the
# published index must give every variant its glibc floor.
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
for repo in $("$src/kernels-src/list-packages.sh" --field name); do
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
  # Every build in the published index carries its glibc floor (pack records it from the
  # ABI check, publish copies it): one "glibc" per "sha256", each a version like "2.36".
  index="$work/hub/repos/$repo/index.json"
  builds="$(grep -c '"sha256":' "$index" || true)"
  floors="$(grep -cE '"glibc": "[0-9]+\.[0-9]+(\.[0-9]+)?"' "$index" || true)"
  if [ "$builds" -gt 0 ] && [ "$floors" = "$builds" ]; then
    echo "pipeline: $repo: all $builds builds record their glibc floor ($(grep -o '"glibc": "[^"]*"' "$index" | sort -u | cut -d'"' -f4 | tr '\n' ' ')in the index)"
  else
    echo "pipeline: $repo: $floors of $builds builds in $index record a glibc floor" >&2
    status=1
  fi
done
[ "$status" = 0 ] && echo "pipeline: every package has all ${#expected[@]} variants"
exit "$status"
