# Prints the targets of build-matrix/matrix.json for scripts (CMake is the one JSON reader
# every build host has):
#   cmake -DKH_MATRIX=<matrix.json> [-DKH_MATRIX_BACKEND=<cpu|cuda|rocm>] [-DKH_MATRIX_FORMAT=keys] -P matrix.cmake
# Default format: "max_glibc <version>", then one line per target:
#   target <key> <backend> <arch> <variant glob> <required program>...
# where the variant glob is what every variant key the target builds matches, e.g.
# cuda*-sm90a-abi*-x86_64-linux. With KH_MATRIX_FORMAT=keys: the keys alone, one per line.
# KH_MATRIX_BACKEND keeps the targets of one backend. The parsing is kh_matrix_targets()
# in cmake/KhMatrix.cmake, which kh_setup_kernel_target uses too.
cmake_minimum_required(VERSION 3.25)
if(NOT KH_MATRIX)
  message(FATAL_ERROR "matrix.cmake: pass -DKH_MATRIX=<path to matrix.json>")
endif()
include("${CMAKE_CURRENT_LIST_DIR}/../cmake/KhMatrix.cmake")
kh_matrix_read("${KH_MATRIX}")
if(NOT KH_MATRIX_FORMAT STREQUAL "keys")
  execute_process(COMMAND ${CMAKE_COMMAND} -E echo "max_glibc ${KH_MATRIX_MAX_GLIBC}")
endif()
foreach(_key IN LISTS KH_MATRIX_KEYS)
  if(KH_MATRIX_BACKEND AND NOT KH_MATRIX_BACKEND_${_key} STREQUAL KH_MATRIX_BACKEND)
    continue()
  endif()
  if(KH_MATRIX_FORMAT STREQUAL "keys")
    execute_process(COMMAND ${CMAKE_COMMAND} -E echo "${_key}")
  else()
    string(JOIN " " _line target ${_key} ${KH_MATRIX_BACKEND_${_key}} ${KH_MATRIX_ARCH_${_key}}
           ${KH_MATRIX_VARIANT_GLOB_${_key}} ${KH_MATRIX_REQUIRES_${_key}})
    execute_process(COMMAND ${CMAKE_COMMAND} -E echo "${_line}")
  endif()
endforeach()
