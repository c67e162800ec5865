# build_standalone.sh: sourced by the GPU probe scripts of this folder. build_attention_lib SRC BUILD
# [cmake arguments...] builds the sm90a development library of source tree SRC (its
# dev/attention/standalone, with KH_ATTENTION_EXPERIMENTS=ON: the comparison switches read from
# the environment; a tree from before the move: tests/gpu/attention/standalone) into
# BUILD/attention/libkh_attention_cuda.so unless it is there; its log goes to
# $LOG/probe_cmake_<build dir name>.log. KH_DLPACK_INCLUDE_DIR: where dlpack/dlpack.h is.
# Also the Nsight Compute metrics the prefill probes collect (KH_PREFILL_NCU_METRICS): warp stalls
# per issued instruction, the kernel's time and instructions, the L2 hit rate, DRAM bytes read.
KH_PREFILL_NCU_METRICS="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
KH_PREFILL_NCU_METRICS+=",gpu__time_duration.sum,smsp__inst_executed.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum"
KH_PREFILL_NCU_METRICS+=",sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg"
build_attention_lib() {
  [[ -f "$2/attention/libkh_attention_cuda.so" ]] && return 0
  local gen=() log="$LOG/probe_cmake_$(basename "$2").log"
  command -v ninja >/dev/null && gen=(-G Ninja)
  local project="$1/dev/attention/standalone"
  [[ -d "$project" ]] || project="$1/tests/gpu/attention/standalone"
  cmake -S "$project" -B "$2" "${gen[@]}" -DKH_BUILD_TARGET=cuda-sm90a -DKH_ATTENTION_EXPERIMENTS=ON \
    ${KH_DLPACK_INCLUDE_DIR:+-DKH_DLPACK_INCLUDE_DIR=$KH_DLPACK_INCLUDE_DIR} "${@:3}" >"$log" 2>&1 &&
    cmake --build "$2" -j "$(nproc)" >>"$log" 2>&1 || { tail -30 "$log"; return 1; }
}
