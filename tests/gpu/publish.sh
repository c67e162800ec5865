#!/usr/bin/env bash
# tests/gpu/publish.sh <stage> <work> <target>...: packs the staged library of every staged
# package for each target and publishes them, signed, to a hub made in <work>/hub (keys in
# <work>/keys) whose root is pinned in $KH_CACHE, as users meet a hub.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
stage="$1" work="$2"
shift 2
kernels="$stage/bin/kernels" status=0
mapfile -t pkgs <"$stage/packages.txt"
for target in "$@"; do
  backend=cuda
  [[ $target == cpu-* ]] && backend=cpu
  for p in "${pkgs[@]}"; do
    "$kernels" pack "$stage/kernels/$target/libkh_${p//-/_}_$backend.so" --package "$root/kernels-src/$p/kernel.json" \
      --out "$work/dist" || { echo "FAIL: kernels pack $target $p"; status=1; }
  done
done
"$kernels" hub init "$work/hub" --keys "$work/keys" --pin >/dev/null || { echo "FAIL: kernels hub init"; exit 1; }
"$kernels" publish "$work/dist" --hub "file://$work/hub" --key "$work/keys/kh.key" || { echo "FAIL: kernels publish"; exit 1; }
exit $status
