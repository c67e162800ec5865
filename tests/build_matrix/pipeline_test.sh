#!/usr/bin/env bash
# ctest build_matrix_pipeline: build-matrix/publish.sh into a fresh file hub, then
# `kernels info --json` must show every package with every variant of build-matrix/matrix.json,
# the published index must give every variant its glibc floor, and the ROCm builds their HIP
# runtime and code-object floors.
# Usage: pipeline_test.sh <source-dir> <kh-build-dir> <work-dir>
# Environment (set by tests/build_matrix/CMakeLists.txt): KH_KERNELS, and
#   KH_MATRIX_EXPECT_GFX942=1|0  whether rocm*-gfx942 is expected (flip it there, option
#                                KH_MATRIX_EXPECT_GFX942, or in the environment)
set -euo pipefail
src="$1" build="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"

# The expectation, one glob per variant every package must have: every target of the matrix
# (its variant glob), the rocm ones only when expected.
expected=()
targets=""
while read -r kind key backend _arch glob _; do
  [ "$kind" = target ] || continue
  [ "$backend" = rocm ] && [ "${KH_MATRIX_EXPECT_GFX942:-1}" != 1 ] && continue
  expected+=("$glob")
  targets="$targets $key"
done < <(cmake -DKH_MATRIX="$src/build-matrix/matrix.json" -P "$src/build-matrix/matrix.cmake")
[ ${#expected[@]} -gt 0 ] || { echo "pipeline: no targets read from build-matrix/matrix.json" >&2; exit 1; }

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
  # ROCm builds record the oldest HIP runtime and their code-object version (what selection
  # holds the host's runtime to), and need no HIP runtime to be packed or published.
  if [ "${KH_MATRIX_EXPECT_GFX942:-1}" = 1 ]; then
    if grep -qE '"runtime": "[0-9]+\.[0-9]+"' "$index" && grep -qE '"code_object": [0-9]+' "$index"; then
      echo "pipeline: $repo: the ROCm build records runtime $(grep -o '"runtime": "[^"]*"' "$index" | cut -d'"' -f4) and code object v$(grep -o '"code_object": [0-9]*' "$index" | grep -o '[0-9]*$')"
    else
      echo "pipeline: $repo: the ROCm build in $index records no runtime / code_object floor" >&2
      status=1
    fi
  fi
done
[ "$status" = 0 ] && echo "pipeline: every package has all ${#expected[@]} variants"
exit "$status"
