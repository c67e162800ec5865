#!/usr/bin/env bash
# Installs kh into a scratch prefix and builds the example hosts out of tree against it,
# with find_package(kh) and with pkg-config; then runs them against a freshly published hub.
# Usage: consumer.sh <source-dir> <build-dir> <work-dir> [extra C/C++ flags, e.g. sanitizers]
set -euo pipefail
src="$1" build="$2" work="$3" flags="${4:-}"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
kernels="$work/prefix/bin/kernels"
export KH_HUB="file://$work/hub" KH_CACHE="$work/cache"
export LD_LIBRARY_PATH="$work/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

"$src/build-matrix/pack-host.sh" "$kernels" "$build" "$work/dist" >/dev/null
# A signed hub, as users meet it: key, root of trust, pinned root, signed publish.
"$kernels" hub init "$work/hub" --keys "$work/keys" --pin >/dev/null
"$kernels" publish "$work/dist" --hub "$KH_HUB" --key "$work/keys/kh.key" >/dev/null

for host in c-host cpp-host; do
  cmake -S "$src/examples/$host" -B "$work/$host" -DCMAKE_PREFIX_PATH="$work/prefix" \
    ${flags:+-DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags"} >/dev/null
  cmake --build "$work/$host" >/dev/null
done
"$work/c-host/c_host" | tee "$work/c_host.log"
grep -q "rms_norm ok" "$work/c_host.log"
"$work/cpp-host/cpp_host" | tee "$work/cpp_host.log"
grep -q "rms_norm ok" "$work/cpp_host.log"
# The engine-shaped decode loop over a paged KV cache (attention_decode_paged).
"$work/c-host/decode_host" | tee "$work/decode_host.log"
grep -q "attention_decode_paged ok" "$work/decode_host.log"
grep -q "refused as expected: .*workspace" "$work/decode_host.log"

# pkg-config finds the same installation.
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
# shellcheck disable=SC2046,SC2086
cc -std=c99 $flags "$src/examples/c-host/main.c" "$src/examples/c-host/cuda_device.c" $(pkg-config --cflags --libs kh) -lm -ldl -o "$work/c_host_pkgconfig"
# pkg-config's Libs set the run path: the program finds libkh.so with no LD_LIBRARY_PATH.
env -u LD_LIBRARY_PATH "$work/c_host_pkgconfig" | grep "rms_norm ok"
echo "consumer: find_package and pkg-config hosts both ok"
