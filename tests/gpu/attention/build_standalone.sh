# build_standalone.sh: sourced by the GPU probe scripts of this folder. build_attention_lib SRC BUILD
# [cmake arguments...] builds the sm90a attention library of source tree SRC (tests/gpu/attention/
# standalone) into BUILD/attention/libkh_attention_cuda.so unless it is there; its log goes to
# $LOG/probe_cmake_<build dir name>.log. KH_DLPACK_INCLUDE_DIR: where dlpack/dlpack.h is.
build_attention_lib() {
  [[ -f "$2/attention/libkh_attention_cuda.so" ]] && return 0
  local gen=() log="$LOG/probe_cmake_$(basename "$2").log"
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$1/tests/gpu/attention/standalone" -B "$2" "${gen[@]}" -DKH_BUILD_TARGET=cuda-sm90a \
    ${KH_DLPACK_INCLUDE_DIR:+-DKH_DLPACK_INCLUDE_DIR=$KH_DLPACK_INCLUDE_DIR} "${@:3}" >"$log" 2>&1 &&
    cmake --build "$2" -j "$(nproc)" >>"$log" 2>&1 || { tail -30 "$log"; return 1; }
}
