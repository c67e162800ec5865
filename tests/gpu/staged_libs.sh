# staged_libs.sh: sourced by the GPU machine's scripts (tests/gpu/run.sh, dev/attention/run_fp8_probe.sh
# and run_fp8_ab.sh). use_staged_system_libraries STAGE WORK: the shared libraries libkh and `kernels`
# need that this machine lacks come from STAGE/syslib/ (as they are, or .xz-compressed), linked or
# unpacked into WORK/syslib, which goes on LD_LIBRARY_PATH after STAGE/lib (only those: a library
# present here is used as is). Returns 1, naming them, when some are still missing.
use_staged_system_libraries() {
  local stage="$1" work="$2" missing so
  mkdir -p "$work/syslib"
  export LD_LIBRARY_PATH="$stage/lib:$work/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  for _ in 1 2 3 4; do  # a staged library may itself need another
    missing="$(ldd "$stage/lib/libkh.so.0" "$stage/bin/kernels" 2>/dev/null | awk '/not found/ {print $1}' | sort -u)"
    [[ -z "$missing" ]] && break
    for so in $missing; do
      if [[ -f "$stage/syslib/$so" ]]; then
        ln -sf "$stage/syslib/$so" "$work/syslib/$so"
      elif [[ -f "$stage/syslib/$so.xz" ]]; then
        python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
          "$stage/syslib/$so.xz" "$work/syslib/$so"
      else
        echo "missing here and not staged: $so"
      fi
    done
  done
  [[ -n "$(ls "$work/syslib")" ]] && echo "using staged copies of: $(ls "$work/syslib" | tr '\n' ' ')"
  missing="$(ldd "$stage/lib/libkh.so.0" "$stage/bin/kernels" 2>/dev/null | awk '/not found/ {print $1}' | sort -u)"
  [[ -z "$missing" ]] || { echo "shared libraries missing: $missing"; return 1; }
}
