#!/usr/bin/env bash
# The whole path on this machine: install what is missing, build kh and the reference
# kernels, publish them to a local hub, `kernels get` one, then run a C host that loads it
# with kh_load_kernel() and calls it on the best device present. Where a CUDA GPU is (kh's
# own probe: libcuda.so.1 loads and sees a device) and nvcc is, the cuda-sm90a and
# cuda-sm80 builds (build-matrix/build.sh) are published beside the CPU builds, kh selects
# the one for the GPU, and the C host runs the op on it; elsewhere the CPU build runs. A
# second C host then runs attention_decode_paged as an engine's decode loop, on the same device.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$(pwd)"

scripts/install-deps.sh
step() { printf '\n== %s\n' "$*"; }

step "Building kh (release)"
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" >/dev/null
kernels="$repo/build/release/cli/kernels"

# A CUDA GPU, as kh's selection will see it, and the compiler for its builds.
cuda_gpu=0
facts="$("$kernels" doctor --json 2>/dev/null || true)"
if grep -q '"backend": "cuda"' <<<"$facts"; then
  if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || [ -n "${CUDACXX:-}" ]; then
    cuda_gpu=1
  else
    echo "demo: a CUDA GPU is here but no nvcc: publishing the CPU builds only" >&2
  fi
fi

work="$repo/build/demo"
rm -rf "$work"
mkdir -p "$work"
export KH_HUB="file://$work/hub"   # the demo's local hub is the default hub
export KH_CACHE="$work/cache"

step "Making a signing key and a root of trust for the local hub, pinned as a user pins it"
"$kernels" hub init "$work/hub" --keys "$work/keys" --pin

step "Packing and publishing the reference kernels to $KH_HUB (signed)"
build-matrix/pack-host.sh "$kernels" "$repo/build/release" "$work/dist"
if [ "$cuda_gpu" = 1 ]; then
  # Every package for both CUDA targets, ABI-checked and packed by the build matrix (minutes
  # of nvcc on a cold build; the trees under build/matrix/ make a second run quick).
  for target in cuda-sm90a cuda-sm80; do
    step "Building the $target variants (build-matrix/build.sh)"
    KH_KERNELS="$kernels" build-matrix/build.sh "$target" "$work/dist"
  done
fi
"$kernels" publish "$work/dist" --hub "$KH_HUB" --key "$work/keys/kh.key"

step "kernels info kernels-community/rms-norm"
"$kernels" info kernels-community/rms-norm

step "kernels info kernels-community/rms-norm --op rms_norm (an op's reference, from the package's manifest)"
"$kernels" info kernels-community/rms-norm --op rms_norm

step "kernels doctor kernels-community/rms-norm (which build fits this machine, and why)"
"$kernels" doctor kernels-community/rms-norm

step "kernels get kernels-community/rms-norm@1"
"$kernels" get kernels-community/rms-norm@1

step "Installing kh into $work/prefix and building the C host against it"
cmake --install build/release --prefix "$work/prefix" >/dev/null
cmake -S examples/c-host -B "$work/c-host" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/c-host" >/dev/null

step "Running the C host"
"$work/c-host/c_host" kernels-community/rms-norm@1   # finds libkh.so through its run path

step "Running the decode host (attention_decode_paged over a paged KV cache, as an engine's decode loop)"
"$work/c-host/decode_host" kernels-community/attention@1

step "The README's walkthrough, as written (README.md, 'The kernels command')"
# The shell blocks between the walkthrough markers, run from the repository's root with a
# cache of their own: a README that no longer matches what kh does fails the demo.
sed -n '/<!-- walkthrough: start -->/,/<!-- walkthrough: end -->/p' README.md |
  awk '/^```sh$/ {on = 1; next} /^```$/ {on = 0} on' >"$work/walkthrough.sh"
[ -s "$work/walkthrough.sh" ] || { echo "demo: no walkthrough found in README.md" >&2; exit 1; }
rm -rf build/my-cache
env -u KH_HUB -u KH_CACHE bash -euo pipefail "$work/walkthrough.sh"
