#!/usr/bin/env bash
# check_gfx942.sh: evidence that the rocm-gfx942 kernel libraries are what they claim, on a
# machine without an AMD GPU: the code objects inside them are gfx942, the attention kernels
# run on MFMA matrix cores, and each library exports only kh_kernel_negotiate.
#
#   tests/hip/check_gfx942.sh [--build] <dir>
#
# <dir> holds the built libraries (libkh_<pkg>_hip.so of every package with a HIP backend:
# kernels-src/list-packages.sh --backend hip; found under it). --build first configures
# kernels-src standalone into <dir> for the gfx942 target of build-matrix/matrix.json
# (-DKH_BUILD_TARGET=rocm-gfx942; if not configured yet) and builds those libraries
# (-j${KH_HIP_JOBS:-2}); the ctest hip_gfx942_mfma runs it that way.
#
# For each library: `nm -D --defined-only` must list kh_kernel_negotiate alone, nothing of ROCm
# may be DT_NEEDED (the library's HIP shim opens the runtime at run time: it loads under any
# ROCm, or none), and every clang offload bundle in its .hip_fatbin section is unbundled
# (clang-offload-bundler) into a code object whose ELF header (llvm-readelf -h) must name
# gfx942. Each kernel is listed with its v_mfma count (llvm-objdump -d --mcpu=gfx942) and the
# register, spill, scratch and LDS use from its AMDGPU metadata (llvm-readelf --notes): vgpr
# counts AGPRs too (gfx942 allocates both from one 512-entry file; <= 256 allows 2 waves per
# SIMD). Every prefill attention kernel (attention_fwd, attention_varlen_fwd: 72, every head-dim
# bucket) must contain v_mfma instructions, bf16 and f16 ones both, and spill nothing; the
# attention_decode_paged kernels (memory-bound, on the vector ALUs: no MFMA; 1.2 adds the e4m3-cache
# instantiations and paged_kv_cache_write's 4 element-wise kernels) must all be there
# (16 split of bf16/fp16 caches + 16 of e4m3 ones + 2 combine); the activation (4 ops x 3 dtypes x 16-byte / element packs = 24) and
# rotary (3 dtypes x NeoX / GPT-J x 16-byte / element packs = 12) kernels must all be there; no
# kernel may use scratch memory (SGPR spills of the norms and of the 8-row decode kernels go to
# VGPR lanes).
# Exit status: 0 pass, 1 fail, 77 skipped (no clang-19 / LLVM 19 tools: ctest reports a skip).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

build=0
if [[ "${1:-}" == "--build" ]]; then
  build=1
  shift
fi
if [[ $# -ne 1 ]]; then
  echo "usage: $0 [--build] <dir with the rocm-gfx942 libraries, or the build dir to make>" >&2
  exit 1
fi
dir="$1"

llvm_tool() {  # the LLVM 19 tool, else an unversioned one
  command -v "$1-19" 2>/dev/null || command -v "$1" 2>/dev/null
}
clang="$(command -v clang-19 || true)"
bundler="$(llvm_tool clang-offload-bundler || true)"
readelf="$(llvm_tool llvm-readelf || true)"
objdump="$(llvm_tool llvm-objdump || true)"
objcopy="$(llvm_tool llvm-objcopy || true)"
cxxfilt="$(llvm_tool llvm-cxxfilt || command -v c++filt || true)"
# What is missing, each with the Debian package that provides it (none of these is an error:
# without them the check cannot run, and ctest reports it skipped).
missing=()
[[ -n "$clang" ]] || missing+=("clang-19 (clang-19)")
[[ -n "$bundler" ]] || missing+=("clang-offload-bundler (clang-tools-19)")
[[ -n "$readelf" ]] || missing+=("llvm-readelf (llvm-19)")
[[ -n "$objdump" ]] || missing+=("llvm-objdump (llvm-19)")
[[ -n "$objcopy" ]] || missing+=("llvm-objcopy (llvm-19)")
if [[ ${#missing[@]} -gt 0 ]]; then
  pkgs="$(printf '%s\n' "${missing[@]}" | sed 's/.*(\(.*\))/\1/' | sort -u | tr '\n' ' ')"
  echo "SKIP: missing ${missing[*]}: apt-get install ${pkgs% }"
  exit 77
fi

# clang-offload-bundler runs llvm-objcopy by its plain name: give it its own LLVM's (Debian's
# llvm-19 installs only llvm-objcopy-19 on PATH; a plain llvm-objcopy may be another LLVM's or none).
PATH="$(dirname "$(readlink -f "$bundler")"):$PATH"

# The packages with a HIP backend, by library name: rms-norm -> rms_norm (libkh_rms_norm_hip.so).
mapfile -t hip_packages < <("$root/kernels-src/list-packages.sh" --backend hip --field dir)
libs=()
for p in "${hip_packages[@]}"; do
  p="${p//-/_}"
  libs+=("${p//./_}")
done
if [[ ${#libs[@]} -eq 0 ]]; then
  echo "FAIL: kernels-src/list-packages.sh lists no package with a HIP backend"
  exit 1
fi

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

if [[ $build -eq 1 ]]; then
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  # The matrix's ROCm target for gfx942 (its key is the build target's name).
  target="$(cmake -DKH_MATRIX="$root/build-matrix/matrix.json" -P "$root/build-matrix/matrix.cmake" |
            awk '$1 == "target" && $3 == "rocm" && $4 == "gfx942" { print $2; exit }')"
  [[ -n "$target" ]] || { echo "FAIL: build-matrix/matrix.json has no rocm target for gfx942"; exit 1; }
  # A tree configured before the KH_TARGET -> KH_BUILD_TARGET rename is configured afresh.
  grep -qs '^KH_TARGET:' "$dir/CMakeCache.txt" && rm -f "$dir/CMakeCache.txt"
  if [[ ! -f "$dir/CMakeCache.txt" ]]; then
    cmake -S "$root/kernels-src" -B "$dir" "${gen[@]}" -DKH_BUILD_TARGET="$target" >"$dir.configure.log" 2>&1 ||
      { cat "$dir.configure.log"; echo "FAIL: configuring kernels-src for $target"; exit 1; }
  fi
  start=$(date +%s)
  cmake --build "$dir" -j "${KH_HIP_JOBS:-2}" --target $(printf 'kh_%s_hip ' "${libs[@]}") ||
    { echo "FAIL: building the rocm-gfx942 libraries"; exit 1; }
  echo "build: $(( $(date +%s) - start )) s"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Unbundles every gfx942 code object of library $1 into $work/<lib>.<n>.co; prints their paths.
code_objects() {
  local lib="$1" name
  name="$(basename "$lib" .so)"
  "$objcopy" --dump-section ".hip_fatbin=$work/$name.fatbin" "$lib" /dev/null 2>/dev/null || return 1
  local offsets=() n=0 i
  mapfile -t offsets < <(grep -obUa "__CLANG_OFFLOAD_BUNDLE__" "$work/$name.fatbin" | cut -d: -f1)
  for ((i = 0; i < ${#offsets[@]}; ++i)); do
    local part="$work/$name.$i.bundle"
    if ((i + 1 < ${#offsets[@]})); then
      tail -c +$((offsets[i] + 1)) "$work/$name.fatbin" | head -c $((offsets[i + 1] - offsets[i])) >"$part"
    else
      tail -c +$((offsets[i] + 1)) "$work/$name.fatbin" >"$part"
    fi
    local target
    target="$("$bundler" --list --type=o --input="$part" | grep -E '^hip[a-z0-9]*-amdgcn-amd-amdhsa-' | head -n1)"
    [[ -n "$target" ]] || continue
    "$bundler" --unbundle --type=o --input="$part" --targets="$target" --output="$work/$name.$n.co" || return 1
    echo "$work/$name.$n.co"
    n=$((n + 1))
  done
}

# One line per kernel of code object $1: name, v_mfma count, VGPRs (incl. AGPRs), AGPRs,
# spills, LDS bytes.
kernel_table() {
  local co="$1"
  "$objdump" -d --mcpu=gfx942 "$co" | awk '
    /^[0-9a-f]+ <.*>:$/ { name = $2; gsub(/^<|>:$/, "", name); order[++n] = name; mfma[name] = 0; next }
    /v_mfma_/ { mfma[name]++ }
    END { for (i = 1; i <= n; ++i) print "D", order[i], mfma[order[i]] }'
  "$readelf" --notes "$co" | awk '
    /^ *- \.agpr_count:/ || /^ *\.agpr_count:/ { agpr = $NF }
    /^ *\.group_segment_fixed_size:/ { lds = $NF }
    /^ *\.name:/ { name = $NF }
    /^ *\.private_segment_fixed_size:/ { scratch = $NF }
    /^ *\.sgpr_spill_count:/ { sspill = $NF }
    /^ *\.vgpr_count:/ { vgpr = $NF }
    /^ *\.vgpr_spill_count:/ { vspill = $NF; print "M", name, vgpr, agpr, vspill, sspill, scratch, lds }'
}

declare -A expected_kernels=([activation]=24 [rotary]=12)  # every instantiation of the element-wise packages
total_mfma=0
decode_kernels=0
cache_kernels=0
for pkg in "${libs[@]}"; do
  lib="$(find "$dir" -name "libkh_${pkg}_hip.so" -type f | head -n1)"
  if [[ -z "$lib" ]]; then
    fail "libkh_${pkg}_hip.so not found under $dir"
    continue
  fi
  echo "== ${lib#"$dir"/}"
  exports="$(nm -D --defined-only "$lib" | awk '{print $3}' | tr '\n' ' ')"
  echo "exports: $exports"
  [[ "$exports" == "kh_kernel_negotiate " ]] || fail "$pkg: exports [$exports], expected kh_kernel_negotiate alone"
  needed="$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
  echo "needs: $needed"
  [[ "$needed" != *libamdhip64* && "$needed" != *libhsa* && "$needed" != *libamd_comgr* ]] ||
    fail "$pkg: needs a ROCm library at load time ($needed): the HIP shim must open the runtime instead"

  mapfile -t cos < <(code_objects "$lib")
  [[ ${#cos[@]} -gt 0 ]] || fail "$pkg: no gfx942 code object in .hip_fatbin"
  kernels=0
  prefill_names=""
  for co in "${cos[@]}"; do
    header="$("$readelf" -h "$co")"
    machine="$(awk -F: '/Machine:/ {gsub(/^ +/, "", $2); print $2}' <<<"$header")"
    flags="$(awk -F: '/Flags:/ {gsub(/^ +/, "", $2); print $2}' <<<"$header")"
    abi="$(awk -F: '/ABI Version:/ {gsub(/^ +/, "", $2); print $2}' <<<"$header")"
    echo "code object $(basename "$co"): $machine, flags $flags, ABI version $abi"
    [[ "$machine" == "EM_AMDGPU" && "$flags" == *gfx942* ]] || fail "$pkg: $(basename "$co") is not a gfx942 code object"
    printf '  %4s %4s %4s %5s %5s %7s %6s  %s\n' mfma vgpr agpr vspil sspil scratch lds kernel
    # Join the disassembly counts (D) with the metadata (M) per kernel symbol.
    while read -r name mfma vgpr agpr vspill sspill scratch lds; do
      kernels=$((kernels + 1))
      pretty="$name"
      [[ -n "$cxxfilt" ]] && pretty="$("$cxxfilt" "$name")"
      printf '  %4s %4s %4s %5s %5s %7s %6s  %s\n' "$mfma" "$vgpr" "$agpr" "$vspill" "$sspill" "$scratch" "$lds" "$pretty"
      # VGPR spills go to scratch memory; SGPR spills go to VGPR lanes (no memory traffic).
      [[ "$vspill" == 0 && "$scratch" == 0 ]] || fail "$pkg: $pretty spills to scratch ($vspill VGPRs, $scratch bytes)"
      if [[ "$pkg" == attention && "$pretty" == *decode_* ]]; then
        decode_kernels=$((decode_kernels + 1))
      elif [[ "$pkg" == attention && "$pretty" == *cache_write_kernel* ]]; then
        cache_kernels=$((cache_kernels + 1))  # paged_kv_cache_write (1.2): element-wise, no MFMA
      elif [[ "$pkg" == attention ]]; then
        prefill_names+="$pretty"$'\n'
        [[ "$mfma" -gt 0 ]] || fail "attention: $pretty has no v_mfma instruction"
        [[ "$sspill" == 0 ]] || fail "attention: $pretty spills $sspill SGPRs"
        total_mfma=$((total_mfma + mfma))
      fi
    done < <(kernel_table "$co" | awk '
      $1 == "D" { mfma[$2] = $3; order[++n] = $2 }
      $1 == "M" { meta[$2] = $3 " " $4 " " $5 " " $6 " " $7 " " $8 }
      END { for (i = 1; i <= n; ++i) if (order[i] in meta) print order[i], mfma[order[i]], meta[order[i]] }')
  done
  [[ $kernels -gt 0 ]] || fail "$pkg: no kernels in its code objects"
  if [[ -n "${expected_kernels[$pkg]:-}" ]]; then
    [[ $kernels -eq ${expected_kernels[$pkg]} ]] || fail "$pkg: $kernels kernels, expected ${expected_kernels[$pkg]}"
  fi
  if [[ "$pkg" == attention ]]; then
    # The prefill kernel (attention_fwd and attention_varlen_fwd): 6 head-dim buckets x 2 dtypes x
    # causal or not x 3 modes (fixed, varlen, general); each bucket by name; bf16 and f16 MFMAs.
    [[ $((kernels - decode_kernels - cache_kernels)) -eq 72 ]] ||
      fail "attention: $((kernels - decode_kernels - cache_kernels)) prefill kernels, expected 72 (buckets 64/96/128/192/256/192-128 x bf16/fp16 x causal/not x fixed/varlen/general)"
    for bucket in "64, 64" "96, 96" "128, 128" "192, 192" "256, 256" "192, 128"; do
      n="$(grep -c "attention_fwd_gfx942_kernel<$bucket," <<<"$prefill_names")"
      [[ "$n" -eq 12 ]] || fail "attention: bucket <$bucket>: $n prefill kernels, expected 12"
    done
    [[ $decode_kernels -eq 34 ]] ||
      fail "attention: $decode_kernels decode kernels, expected 34 (bf16/fp16 x bf16/fp16 or e4m3 caches x lane groups 4/8/16/32 x 4/8 rows, 2 combine)"
    [[ $cache_kernels -eq 4 ]] ||
      fail "attention: $cache_kernels paged_kv_cache_write kernels, expected 4 (bf16/fp16 x e4m3 or same-dtype caches)"
    mnemonics="$(for co in "${cos[@]}"; do "$objdump" -d --mcpu=gfx942 "$co"; done |
                 grep -o 'v_mfma_[a-z0-9_]*' | sort | uniq -c | sed 's/^ */    /')"
    echo "  v_mfma instructions by kind (all attention kernels, $total_mfma in all):"
    echo "$mnemonics"
    grep -q 'bf16' <<<"$mnemonics" || fail "attention: no bf16 v_mfma instruction"
    grep -q 'f32_16x16x16_\?f16' <<<"$mnemonics" || fail "attention: no f16 v_mfma instruction"
  fi
done

if [[ $failures -gt 0 ]]; then
  echo "check_gfx942: $failures failure(s)"
  exit 1
fi
echo "check_gfx942: OK"
