#!/usr/bin/env bash
# ctest hip_shim_loader: the rms-norm library of the rocm-gfx942 build (tests/hip's
# hip_gfx942_mfma builds it), packed with the ABI check enforced (no hard HIP runtime soname;
# the runtime and code-object floors recorded), published to a file hub, and loaded through
# kh by test_hip_shim_loader in four runtime settings, each its own process:
#   standin6    the stand-in runtime as libamdhip64.so.6
#   standin5    the stand-in only as libamdhip64.so.5 (the shim falls back past .so.7 and .so.6)
#   no-device   Debian's HIP 5.2 runtime (libamdhip64.so.5), no AMD GPU   [when installed]
#   no-runtime  no runtime: the real one hidden by a bind mount of /dev/null  [where unshare -m works]
# Usage: shim_loader_test.sh <kernels> <test_hip_shim_loader> <rocm-gfx942 build dir> <stand-in .so> <work dir>
# Exit 77 (skipped) when the rocm-gfx942 build is not there (no clang-19).
set -uo pipefail
kernels="$1" test_bin="$2" hip_build="$3" standin="$4" work="$5"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"

lib="$(find "$hip_build" -name libkh_rms_norm_hip.so -type f 2>/dev/null | head -n1)"
if [[ -z "$lib" ]]; then
  echo "SKIP: no libkh_rms_norm_hip.so under $hip_build (hip_gfx942_mfma builds it; it needs clang-19)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work/dist" "$work/so6" "$work/so5" || exit 1
variant="$(grep -aoE -m1 'rocm[0-9]+\.[0-9]+-gfx942-abi[0-9]+-[a-z0-9_]+-linux' "$lib" | head -n1)"
[[ -n "$variant" ]] || { echo "FAIL: $lib names no rocm gfx942 variant"; exit 1; }

# Packed as the build matrix packs: --target enforces the ABI check (a DT_NEEDED libamdhip64
# would be refused) and records the floors the check finds.
"$kernels" pack "$lib" --package "$root/kernels-src/rms-norm/kernel.json" --target "$variant" --max-glibc 2.36 \
  --out "$work/dist" || { echo "FAIL: kernels pack refused $lib"; exit 1; }
"$kernels" publish "$work/dist" --hub "file://$work/hub" || { echo "FAIL: kernels publish"; exit 1; }
index="$work/hub/repos/kernels-community/rms-norm/index.json"
grep -q '"runtime": "5.0"' "$index" && grep -q '"code_object": 4' "$index" ||
  { echo "FAIL: $index records no runtime 5.0 / code_object 4 for $variant"; cat "$index"; exit 1; }
echo "packed and published $variant (runtime 5.0, code-object v4)"

cp "$standin" "$work/so6/libamdhip64.so.6"
ln -s "$(readlink -f "$standin")" "$work/so5/libamdhip64.so.5"
cat >"$work/mi300x.json" <<'JSON'
{"cpu": "x86_64", "os": "linux", "x86_isa_level": 3, "glibc": "2.39", "rocm": "6.2",
 "gpus": [{"backend": "rocm", "index": 0, "name": "AMD Instinct MI300X", "arch": "gfx942"}]}
JSON
export KH_HUB="file://$work/hub" KH_CACHE="$work/cache" KH_ALLOW_UNSIGNED=1 KH_TEST_HOST_FACTS="$work/mi300x.json"
unset KH_TARGET KH_OFFLINE

status=0
run_mode() {  # $1 mode, then the command prefix (env settings, unshare ...)
  local mode="$1"
  shift
  echo "== $mode"
  rm -f "$work/$mode.log"
  if KH_SHIM_EXPECT="$mode" KH_HIP_STANDIN_LOG="$work/$mode.log" "$@" "$test_bin"; then
    [[ -f "$work/$mode.log" ]] && sed 's/^/  stand-in: /' "$work/$mode.log"
  else
    echo "FAIL: $mode"
    [[ -f "$work/$mode.log" ]] && sed 's/^/  stand-in: /' "$work/$mode.log"
    status=1
  fi
}
run_mode standin6 env LD_LIBRARY_PATH="$work/so6"
run_mode standin5 env LD_LIBRARY_PATH="$work/so5"

# The real runtime files of this machine (Debian's libamdhip64.so.5, ROCm's under /opt/rocm).
mapfile -t real < <(ldconfig -p | awk '/libamdhip64\.so/ {print $NF}' | xargs -r readlink -f | sort -u)
if [[ ${#real[@]} -gt 0 ]]; then
  run_mode no-device env -u LD_LIBRARY_PATH
else
  echo "== no-device: skipped (no HIP runtime installed here: apt-get install libamdhip64-5)"
fi
hide=""
for f in "${real[@]}"; do hide+="mount --bind /dev/null '$f' && "; done
if unshare -m true 2>/dev/null; then
  run_mode no-runtime unshare -m sh -c "${hide}exec \"\$0\" \"\$@\"" env -u LD_LIBRARY_PATH
else
  echo "== no-runtime: skipped (unshare -m is not allowed here)"
fi
exit "$status"
