#!/usr/bin/env bash
# examples/c-host/run_on_gpu.sh: the C host on a GPU machine that has neither kh's build
# dependencies nor network: stage here, run there.
#
#   examples/c-host/run_on_gpu.sh stage [DIR]   here, after scripts/demo.sh (which builds
#       build/release): copy into DIR (default .gpu-stage-demo, which .git/info/exclude
#       should list) `kernels`, libkh and its headers (dlpack.h too), the rms-norm kernel
#       libraries for cpu-x86_64, cuda-sm90a and cuda-sm80 (from build-matrix trees:
#       $KH_MATRIX_BUILD_ROOT, default build/matrix; built with build-matrix/build.sh when
#       missing), and syslib/: this machine's copies of the non-glibc libraries libkh and
#       `kernels` need, used there only for what that machine lacks.
#   examples/c-host/run_on_gpu.sh [DIR]         there: pack the staged libraries
#       (`kernels pack --target`, which ABI-checks them), publish them to a signed local hub,
#       `kernels doctor`, build the C host with the system C compiler against the staged
#       libkh, and run it. kh should choose sm90a on an H200 and the host run rms_norm on
#       the GPU. Logs go to $OUT when set. Exit status non-zero on any failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
mode=run
[[ "${1:-}" == stage ]] && { mode=stage; shift; }
stage="${1:-.gpu-stage-demo}"
mkdir -p "$stage"
stage="$(cd "$stage" && pwd)"
step() { printf '\n== %s\n' "$*"; }
die() { echo "run_on_gpu: $*" >&2; exit 1; }

if [[ $mode == stage ]]; then
  release="$root/build/release"
  [[ -x "$release/cli/kernels" && -f "$release/loader/libkh.so" ]] || die "no release build: run scripts/demo.sh first"
  rm -rf "$stage" && mkdir -p "$stage"/{bin,lib,include/kh,include/dlpack,syslib}
  cp -L "$release/cli/kernels" "$stage/bin/"
  cp -L "$release/loader/libkh.so" "$stage/lib/libkh.so.0"
  cp abi/include/kh/*.h "$stage/include/kh/"
  dlpack="$(echo '#include <dlpack/dlpack.h>' | ${CC:-cc} -E -M -x c - | tr ' \\' '\n\n' | grep 'dlpack/dlpack\.h$' | head -1)"
  [[ -f "$dlpack" ]] || die "dlpack/dlpack.h not found (apt-get install libdlpack-dev)"
  cp "$dlpack" "$stage/include/dlpack/"

  # The rms-norm builds, in folders named by variant key (what `pack --target` checks them
  # against there): the CPU one of kh's release build (baseline x86-64), and the CUDA ones
  # the build matrix made for each target.
  cpu_key=cpu-x86_64-abi1-x86_64-linux
  mkdir -p "$stage/kernels/$cpu_key"
  cp "$release/kernels-src/rms-norm/libkh_rms_norm_cpu.so" "$stage/kernels/$cpu_key/"
  matrix="${KH_MATRIX_BUILD_ROOT:-$root/build/matrix}"
  for target in cuda-sm90a cuda-sm80; do
    lib="$(find "$matrix/$target/install/rms-norm" -name libkh_rms_norm_cuda.so 2>/dev/null | head -1)"
    if [[ -z "$lib" ]]; then
      step "building the $target variants (build-matrix/build.sh)"
      KH_KERNELS="$release/cli/kernels" build-matrix/build.sh "$target" "$root/build/gpu-demo-dist"
      lib="$(find "$matrix/$target/install/rms-norm" -name libkh_rms_norm_cuda.so | head -1)"
    fi
    key="$(basename "$(dirname "$lib")")"  # install/<package>/<variant key>/<library>
    mkdir -p "$stage/kernels/$key"
    cp "$lib" "$stage/kernels/$key/"
  done

  # What the GPU machine may lack: everything libkh and `kernels` link but glibc and the
  # compiler runtime. ICU's 30 MB data library travels xz-compressed.
  ldd "$stage/lib/libkh.so.0" "$stage/bin/kernels" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    while read -r so; do
      case "$(basename "$so")" in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
        libicudata.so*) xz -6 -c "$so" >"$stage/syslib/$(basename "$so").xz" ;;
        *) cp -L "$so" "$stage/syslib/" ;;
      esac
    done
  git describe --always --dirty >"$stage/SOURCE" 2>/dev/null || true
  step "staged in $stage ($(du -sh "$stage" | cut -f1)); carry it to the GPU machine"
  find "$stage" -type f -printf '%9s  %P\n' | sort -k2
  exit 0
fi

# --- on the GPU machine -----------------------------------------------------------------
[[ -x "$stage/bin/kernels" ]] || die "nothing staged in $stage: run '$0 stage' where kh is built"
work="${KH_DEMO_WORK:-/tmp/kh-gpu-demo}"
rm -rf "$work" && mkdir -p "$work/syslib"
logs="${OUT:-$work}"

# Libraries this machine lacks come from syslib/; one it has is used as is.
export LD_LIBRARY_PATH="$stage/lib:$work/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for _ in 1 2 3 4; do  # a staged library may itself need another staged one
  missing="$(ldd "$stage/lib/libkh.so.0" "$stage/bin/kernels" | awk '/not found/ {print $1}' | sort -u)"
  [[ -z "$missing" ]] && break
  for so in $missing; do
    if [[ -f "$stage/syslib/$so" ]]; then ln -sf "$stage/syslib/$so" "$work/syslib/$so"
    elif [[ -f "$stage/syslib/$so.xz" ]]; then
      python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
        "$stage/syslib/$so.xz" "$work/syslib/$so"
    else die "$so is missing here and was not staged"
    fi
  done
done
[[ -n "$(ls "$work/syslib")" ]] && echo "using staged copies of: $(ls "$work/syslib" | tr '\n' ' ')"
kernels="$stage/bin/kernels"
export KH_HUB="file://$work/hub" KH_CACHE="$work/cache"
echo "staged build: $(cat "$stage/SOURCE" 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"

step "Packing the staged rms-norm builds (kernels pack --target: ABI-checked)"
for dir in "$stage"/kernels/*/; do
  key="$(basename "$dir")"
  "$kernels" pack "$dir"/libkh_rms_norm_*.so --package kernels-src/rms-norm/kernel.json --out "$work/dist" --target "$key"
done

step "Publishing them to a signed local hub, $KH_HUB"
"$kernels" hub init "$work/hub" --keys "$work/keys" --pin >/dev/null
"$kernels" publish "$work/dist" --hub "$KH_HUB" --key "$work/keys/kh.key"
grep -h '"glibc"' "$work"/hub/repos/kernels-community/rms-norm/index.json | sort | uniq -c

step "kernels doctor kernels-community/rms-norm"
"$kernels" doctor kernels-community/rms-norm | tee "$logs/doctor.txt"

step "Building the C host with ${CC:-cc} against the staged libkh"
"${CC:-cc}" -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra -Werror -I "$stage/include" \
  examples/c-host/main.c examples/c-host/cuda_device.c -L "$stage/lib" -l:libkh.so.0 -lm -ldl -o "$work/c_host"

step "Running the C host"
"$work/c_host" kernels-community/rms-norm@1 | tee "$logs/c_host.txt"

# With a GPU, the other CUDA build too: KH_TARGET forces it (on an H200 the sm80 build runs
# through its compute_80 PTX, JIT-compiled at load).
if grep -q '^  chosen   cuda' "$logs/doctor.txt"; then
  for key in $(ls "$stage/kernels" | grep '^cuda'); do
    grep -q "^  chosen   $key" "$logs/doctor.txt" && continue
    step "Running the C host on $key (KH_TARGET)"
    KH_TARGET="$key" "$work/c_host" kernels-community/rms-norm@1 | tee -a "$logs/c_host.txt"
  done
fi
