# plan_test.cmake (ctest kernel_package_plan): what kh_kernel_package_plan makes of a manifest.
#   cmake -DKH_WORK=<scratch dir> -P plan_test.cmake
# 1. fixtures/attention-like carries kernels-src/attention's build section (checked equal below)
#    over stub sources; the plan must list exactly the translation units attention's cuda/ and
#    hip/ CMakeLists.txt built before it had a manifest (per (kernel, head-dim bucket, dtype) from one template, and per
#    (dtype, lane group), generated), the sm90a-only ones and KH_ATTENTION_SM90A=1 for sm90a
#    alone, the options and include folders; generated files have
#    the template's text with the axes' values, are not rewritten when unchanged, and a plan
#    removes what an earlier plan generated and it does not.
# 2. kh_manifest_ops.h: the op table and the constraints from the docs' dtypes and shapes.
# 3. Every kind of mistake in a manifest is a configure error that names the field.
cmake_minimum_required(VERSION 3.25)
if(NOT KH_WORK)
  message(FATAL_ERROR "plan_test.cmake: pass -DKH_WORK=<scratch dir>")
endif()
set(here "${CMAKE_CURRENT_LIST_DIR}")
set(fixture "${here}/fixtures/attention-like")
file(REMOVE_RECURSE "${KH_WORK}")
file(MAKE_DIRECTORY "${KH_WORK}")

# The fixture's build section is the real package's, so what holds for it holds for attention.
file(READ "${here}/../../kernels-src/attention/kernel.json" _real_manifest)
file(READ "${fixture}/kernel.json" _fixture_manifest)
string(JSON _real_build GET "${_real_manifest}" build)
string(JSON _fixture_build GET "${_fixture_manifest}" build)
string(JSON _same_build EQUAL "${_real_build}" "${_fixture_build}")
if(NOT _same_build)
  message(SEND_ERROR "FAIL: tests/packages/fixtures/attention-like/kernel.json's build section is not "
                     "kernels-src/attention/kernel.json's: copy it over")
else()
  message(STATUS "ok: the fixture's build section is attention's")
endif()

function(expect what got want)
  if(got STREQUAL want)
    message(STATUS "ok: ${what}")
  else()
    message(SEND_ERROR "FAIL: ${what}\n  got:  ${got}\n  want: ${want}")
  endif()
endfunction()

# Runs print_plan.cmake; sets plan_<field> from its lines, plan_rc and plan_err.
function(run_plan pkg backend arch gen)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -DKH_PACKAGE=${pkg} -DKH_PLAN_BACKEND=${backend} -DKH_PLAN_ARCH=${arch}
            -DKH_PLAN_GEN=${gen} -P "${here}/print_plan.cmake"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(plan_rc "${rc}" PARENT_SCOPE)
  set(plan_err "${err}" PARENT_SCOPE)
  set(plan_out "${out}" PARENT_SCOPE)
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([a-z_]+) ?(.*)$")
      string(REPLACE " " ";" value "${CMAKE_MATCH_2}")
      set(plan_${CMAKE_MATCH_1} "${value}" PARENT_SCOPE)
    endif()
  endforeach()
endfunction()

# The "gen/<name>" of the generated translation units, sorted.
function(generated_units out)
  set(units "")
  foreach(f IN LISTS plan_generated)
    if(NOT f MATCHES "\\.h$")
      list(APPEND units "${f}")
    endif()
  endforeach()
  list(SORT units)
  set(${out} "${units}" PARENT_SCOPE)
endfunction()

# The lists attention's CMakeLists.txt files gave before attention had a manifest (cuda/:
# _attention_fwd_buckets; hip/: its attention_fwd_instances call; the decode units listed by
# hand): the fixture, a copy of attention's build section, must plan exactly these.
set(shared src/module.cpp src/attention_args.cpp src/attention_decode_args.cpp src/attention_cache_args.cpp)
set(decode_units "")
set(sm80_units "")
set(sm90_units "")
set(sm90_fp8_units "")
set(gfx942_units "")
foreach(dt bf16 fp16)
  foreach(tpr 4 8 16 32)
    list(APPEND decode_units gen/attention_decode_${dt}_tpr${tpr}.cu)
  endforeach()
  foreach(bucket 128 256)  # the FP8-cache decode kernels (attention 1.2)
    list(APPEND decode_units gen/attention_decode_fp8_${dt}_d${bucket}.cu)
  endforeach()
  foreach(bucket 64:64 80:80 96:96 128:128 192:192 256:256 192:128)
    string(REPLACE ":" "_v" qkv "${bucket}")
    list(APPEND sm80_units gen/attention_fwd_sm80_qk${qkv}_${dt}.cu)
    list(APPEND sm90_units gen/attention_fwd_sm90_qk${qkv}_${dt}.cu)
  endforeach()
  foreach(bucket 64 128 256)  # the FP8 prefill (attention 1.2, sm90a)
    list(APPEND sm90_fp8_units gen/attention_fwd_sm90_fp8_d${bucket}_${dt}.cu)
  endforeach()
  foreach(bucket 64:64 96:96 128:128 192:192 256:256 192:128)
    string(REPLACE ":" "_v" qkv "${bucket}")
    list(APPEND gfx942_units gen/attention_fwd_gfx942_qk${qkv}_${dt}.hip)
  endforeach()
  list(APPEND gfx942_units gen/attention_decode_gfx942_${dt}.hip gen/attention_decode_gfx942_fp8_${dt}.hip)
endforeach()

# ---- 1. attention's build --------------------------------------------------------------------
set(gen "${KH_WORK}/gen")
run_plan("${fixture}" cuda sm80 "${gen}")
expect("cuda sm80 configures" "${plan_rc}" "0")
set(want ${decode_units} ${sm80_units})
list(SORT want)
generated_units(got)
expect("cuda sm80: the 14 forward (bucket x dtype), 8 decode (dtype x lane group) and 4 FP8 decode (dtype x bucket) units"
       "${got}" "${want}")
set(want ${shared} cuda/attention_cuda.cu cuda/attention_fwd_sm80.cu cuda/attention_decode_cuda.cu
    cuda/attention_decode_fp8.cu cuda/attention_cache_cuda.cu)
list(SUBLIST plan_sources 0 9 got)
expect("cuda sm80: shared, then backend sources, in manifest order" "${got}" "${want}")
expect("cuda sm80: no compile definition" "${plan_definitions}" "")
expect("cuda sm80: cuda_options" "${plan_cuda_options}" "-O3;-Xptxas=-warn-spills")
expect("cuda sm80: include folders (the ops header's last)" "${plan_include_dirs}" "src;cuda;gen/include")
file(READ "${gen}/attention_fwd_sm80_qk192_v128_bf16.cu" text)
expect("a generated unit is the template with its axes' values"
       "${text}"
       "// attention_fwd_sm80_qk192_v128_bf16.cu: the sm80 attention forward for the head-dim bucket q/k 192, v 128, bf16 (from cuda/attention_fwd_instance.cu.in).
#include \"attention_fwd_sm80.cuh\"

namespace kh_attention::sm80 {
template cudaError_t run_attention_fwd_sm80_instance<192, 128, ElementType::kBF16>(const FwdLaunchParams&, cudaStream_t);
}  // namespace kh_attention::sm80
")
file(READ "${gen}/attention_decode_fp16_tpr8.cu" text)
expect("object values: one field per placeholder"
       "${text}"
       "// attention_decode_fp16_tpr8.cu: the decode split kernel for fp16, lane groups of 8 threads (head dims 40-64).\nKH_DECODE_INSTANTIATE(F16Tag, 8)\n")

run_plan("${fixture}" cuda sm90a "${gen}")
set(want ${decode_units} ${sm80_units} ${sm90_units} ${sm90_fp8_units})
list(SORT want)
generated_units(got)
expect("cuda sm90a: sm80's units, the 14 sm90 ones from the same template and the 6 FP8 prefill ones" "${got}"
       "${want}")
expect("cuda sm90a: KH_ATTENTION_SM90A=1" "${plan_definitions}" "KH_ATTENTION_SM90A=1")
list(FIND plan_sources cuda/attention_fwd_sm90.cu found)
expect("cuda sm90a: the sm90a-only source" "${found}" "9")
file(READ "${gen}/attention_fwd_sm90_qk64_v64_fp16.cu" text)
string(FIND "${text}" "run_attention_fwd_sm90_instance<64, 64, ElementType::kF16>(const FwdLaunchParams&, const FwdTensorMaps&, cudaStream_t)" at)
if(at LESS 0)
  message(SEND_ERROR "FAIL: the sm90 units take the sm90 kernel's arguments; attention_fwd_sm90_qk64_v64_fp16.cu is\n${text}")
else()
  message(STATUS "ok: the same template, the sm90 kernel's arguments")
endif()
file(TIMESTAMP "${gen}/attention_fwd_sm90_qk64_v64_fp16.cu" before "%s.%f")
execute_process(COMMAND "${CMAKE_COMMAND}" -E sleep 1.1)
run_plan("${fixture}" cuda sm90a "${gen}")
set(first_out "${plan_out}")
file(TIMESTAMP "${gen}/attention_fwd_sm90_qk64_v64_fp16.cu" after "%s.%f")
expect("an unchanged generated unit is not rewritten (ccache and make see the same file)" "${after}" "${before}")
run_plan("${fixture}" cuda sm90a "${gen}")
expect("the same manifest gives the same plan" "${plan_out}" "${first_out}")
run_plan("${fixture}" cuda sm80 "${gen}")
if(EXISTS "${gen}/attention_fwd_sm90_qk64_v64_fp16.cu")
  set(stale present)
else()
  set(stale removed)
endif()
expect("a unit the sm80 plan does not make is removed from its folder" "${stale}" "removed")

run_plan("${fixture}" hip gfx942 "${KH_WORK}/gen-hip")
generated_units(got)
list(SORT gfx942_units)
expect("hip gfx942: 12 forward units (bucket x dtype), a decode and an FP8 decode unit per dtype" "${got}" "${gfx942_units}")
list(SUBLIST plan_sources 4 3 got)
expect("hip gfx942: its sources" "${got}" "hip/attention_hip.hip;hip/attention_decode_hip.hip;hip/attention_cache_hip.hip")

run_plan("${fixture}" cpu x86_64_v3 "${KH_WORK}/gen-cpu")
expect("cpu: shared and cpu sources" "${plan_sources}"
       "${shared};cpu/attention_cpu.cpp;cpu/attention_decode_cpu.cpp;cpu/attention_cache_cpu.cpp")

# ---- 2. kh_manifest_ops.h --------------------------------------------------------------------
file(READ "${KH_WORK}/gen-cpu/include/kh_manifest_ops.h" header)
foreach(want
    "inline constexpr kh_arg_constraint attention_fwd_constraints[7] = {"
    "    {sizeof(kh_arg_constraint), KH_DTYPE_F16 | KH_DTYPE_BF16, 4, 4},  // out (batch, seq_q, heads_q, head_dim) f16 bf16"
    "    {sizeof(kh_arg_constraint), KH_DTYPE_F32, 3, 3},  // lse (batch, heads_q, seq_q) f32"
    "    {sizeof(kh_arg_constraint), 0, -1, -1},  // causal"
    "inline constexpr uint32_t attention_fwd_num_args = 7;"
    "  X(attention_fwd, \"attention_fwd(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v, float scale, bool causal) -> ()\")")
  string(FIND "${header}" "${want}" at)
  if(at LESS 0)
    message(SEND_ERROR "FAIL: kh_manifest_ops.h lacks the line\n  ${want}\n--- it is:\n${header}")
  else()
    message(STATUS "ok: kh_manifest_ops.h has: ${want}")
  endif()
endforeach()

# ---- 3. mistakes -------------------------------------------------------------------------------
# Each case: a change to the fixture's kernel.json (old -> new text; a file to add or remove),
# and what the error must say.
set(n 0)
function(expect_error what old new regex)
  cmake_parse_arguments(E "" "ADD;REMOVE;BACKEND;ARCH" "" ${ARGN})
  math(EXPR n "${n} + 1")
  set(n ${n} PARENT_SCOPE)
  set(pkg "${KH_WORK}/bad${n}/attention-like")
  file(COPY "${fixture}" DESTINATION "${KH_WORK}/bad${n}")
  file(READ "${pkg}/kernel.json" json)
  string(FIND "${json}" "${old}" at)
  if(at LESS 0)
    message(SEND_ERROR "FAIL: ${what}: the fixture has no '${old}' to change")
    return()
  endif()
  string(REPLACE "${old}" "${new}" json "${json}")
  file(WRITE "${pkg}/kernel.json" "${json}")
  if(E_ADD)
    file(WRITE "${pkg}/${E_ADD}" "# added by plan_test.cmake\n")
  endif()
  if(E_REMOVE)
    file(REMOVE "${pkg}/${E_REMOVE}")
  endif()
  if(NOT E_BACKEND)
    set(E_BACKEND cuda)
    set(E_ARCH sm90a)
  endif()
  run_plan("${pkg}" ${E_BACKEND} ${E_ARCH} "${KH_WORK}/bad${n}/gen")
  string(REGEX REPLACE "[ \n]+" " " err "${plan_err}")  # CMake wraps long messages
  if(plan_rc EQUAL 0)
    message(SEND_ERROR "FAIL: ${what}: configured without an error")
  elseif(NOT err MATCHES "${regex}")
    message(SEND_ERROR "FAIL: ${what}: the error does not match '${regex}':\n${plan_err}")
  else()
    message(STATUS "ok: ${what}")
  endif()
endfunction()

expect_error("a misspelt field" "\"include_dirs\": [\"src\"]" "\"include_dir\": [\"src\"]"
             "kernel.json: build: unknown field \"include_dir\" \\(known: sources, include_dirs")
expect_error("a source outside the package" "\"cuda/attention_cuda.cu\"" "\"../attention_cuda.cu\""
             "build.backends.cuda.sources: '../attention_cuda.cu' is not a path inside the package folder")
expect_error("a source that is not there" "\"cuda/attention_cuda.cu\"" "\"cuda/attention_cuda_v2.cu\""
             "build.backends.cuda.sources: no file cuda/attention_cuda_v2.cu in the package")
expect_error("a CUDA source shared by every backend" "\"src/module.cpp\"" "\"cuda/attention_cuda.cu\""
             "build.sources: 'cuda/attention_cuda.cu' is not a translation unit the cpu backend compiles"
             BACKEND cpu ARCH x86_64)
expect_error("a placeholder no axis defines" "\"output\": \"attention_decode_@dtype.name@_tpr@tpr.threads@.cu\""
             "\"output\": \"attention_decode_@dtype.name@_tpr@tpr.threads@_@variant@.cu\""
             "generate\\[1\\].output: unknown placeholder @variant@")
expect_error("two combinations, one file name" "\"output\": \"attention_decode_@dtype.name@_tpr@tpr.threads@.cu\""
             "\"output\": \"attention_decode_@dtype.name@.cu\"" "two files would be named attention_decode_bf16.cu")
expect_error("an empty axis" "\"kernel\": [" "\"kernel\": [], \"unused\": ["
             "generate\\[0\\].axes.kernel: expected a non-empty array of values")
expect_error("a misspelt arch" "\"sm90a\": {" "\"sm90\": {"
             "archs: no target of kh's target table \\(`kernels targets`\\) builds arch 'sm90' for cuda")
expect_error("a template that is not there" "\"cuda/attention_decode_instance.cu.in\"" "\"cuda/decode.cu.in\""
             "generate\\[1\\].template: no file cuda/decode.cu.in in the package")
expect_error("docs whose args are not the schema's" "{\"name\": \"lse\"," "{\"name\": \"log_sum_exp\","
             "ops\\[0\\] \\(attention_fwd\\).args\\[1\\].name: 'log_sum_exp', but the schema's argument 1 is 'lse'")
expect_error("an unknown dtype" "\"dtypes\": [\"f32\"]" "\"dtypes\": [\"fp32\"]" "unknown dtype 'fp32'")
expect_error("a shape that is no tuple" "\"shape\": \"(batch, heads_q, seq_q)\"" "\"shape\": \"batch x heads_q x seq_q\""
             "args\\[1\\].shape: 'batch x heads_q x seq_q' is not written \\(dim, ..., dim\\)")
expect_error("a scalar with dtypes" "{\"name\": \"scale\", \"doc\": \"Score scale.\"}"
             "{\"name\": \"scale\", \"dtypes\": [\"f32\"], \"doc\": \"Score scale.\"}" "'scale' is not a tensor")
expect_error("a schema of another op" "\"schema\": \"attention_fwd(" "\"schema\": \"attention(" "is not 'attention_fwd\\(<arguments>\\) -> <returns>'")
