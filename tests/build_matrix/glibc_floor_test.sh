#!/usr/bin/env bash
# ctest pack_publish_glibc_floor: `kernels pack` records the library's glibc floor in the
# package manifest (checked or not: --target and --no-abi-check), and `kernels publish`
# copies it into the index entry, where selection reads it.
# Usage: glibc_floor_test.sh <kernels> <library> <kernel.json> <variant-key> <work-dir>
set -euo pipefail
kernels="$1" lib="$2" package="$3" key="$4" work="$5"
rm -rf "$work" && mkdir -p "$work"
fail() { echo "glibc_floor_test: $*" >&2; exit 1; }

# The floor the ABI check reads from the library's .gnu.version_r (reported whether or not
# the library passes: a sanitizer build of the ci preset fails on its libasan).
floor="$("$kernels" check-abi "$lib" --target "$key" --json | sed -n 's/^ *"glibc": "\([0-9.]*\)".*/\1/p' || true)"
[[ "$floor" =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || fail "check-abi reports no glibc version for $lib"
checked=(--target "$key")
"$kernels" check-abi "$lib" --target "$key" >/dev/null 2>&1 || checked=()  # advisory: packs with a warning

for mode in checked unchecked; do
  flags=(${checked[@]+"${checked[@]}"}); [[ $mode == unchecked ]] && flags=(--no-abi-check)
  "$kernels" pack "$lib" --package "$package" --out "$work/dist-$mode" ${flags[@]+"${flags[@]}"} >/dev/null 2>&1 ||
    fail "$mode pack of $lib failed"
  archive="$(ls "$work/dist-$mode"/*.tar.zst)"
  manifest="$(tar --zstd -xOf "$archive" kh-manifest.json)"
  grep -q "\"glibc\": \"$floor\"" <<<"$manifest" || fail "$mode pack: the manifest lacks \"glibc\": \"$floor\":"$'\n'"$manifest"
  echo "glibc_floor_test: $mode pack records glibc $floor in the manifest"
done

"$kernels" publish "$work/dist-checked" --hub "file://$work/hub" >/dev/null
index="$(find "$work/hub/repos" -name index.json)"
grep -q "\"glibc\": \"$floor\"" "$index" || fail "publish: $index lacks \"glibc\": \"$floor\""
echo "glibc_floor_test: publish copies glibc $floor into the index entry"
