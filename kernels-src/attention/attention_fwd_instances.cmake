# attention_fwd_instances.cmake: included by cuda/CMakeLists.txt and hip/CMakeLists.txt.
include_guard(GLOBAL)

# The GPU prefill kernels' translation units, one per (head-dim bucket, dtype), generated from a
# backend's template (cuda/attention_fwd_instance.cu.in, hip/attention_fwd_instance.hip.in):
#   attention_fwd_instances(<template> <file prefix> <file suffix> <out var> <bucket>...)
# with buckets as "qk:v" (src/attention_fwd_buckets.hpp). The template sees QK, V, DTYPE (bf16,
# fp16) and TYPE (kBF16, kF16) beside the caller's own variables.
function(attention_fwd_instances template prefix suffix out_var)
  set(files)
  foreach(bucket ${ARGN})
    string(REPLACE ":" ";" dims "${bucket}")
    list(GET dims 0 QK)
    list(GET dims 1 V)
    foreach(DTYPE bf16 fp16)
      if(DTYPE STREQUAL "bf16")
        set(TYPE kBF16)
      else()
        set(TYPE kF16)
      endif()
      set(file "${prefix}_qk${QK}_v${V}_${DTYPE}${suffix}")
      configure_file("${template}" "${file}" @ONLY)
      list(APPEND files "${file}")
    endforeach()
  endforeach()
  set(${out_var} ${files} PARENT_SCOPE)
endfunction()
