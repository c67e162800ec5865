# print_plan.cmake: prints what kh_kernel_package_plan (cmake/KhKernelManifest.cmake) makes of a
# package for one build, one "<field> <value>" line each, paths relative to the package folder
# (generated files as gen/<name>), for plan_test.cmake to compare:
#   cmake -DKH_PACKAGE=<dir> -DKH_PLAN_BACKEND=cpu|cuda|hip -DKH_PLAN_ARCH=<arch> -DKH_PLAN_GEN=<dir> -P print_plan.cmake
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/../../cmake/KhKernelManifest.cmake")
kh_kernel_package_plan("${KH_PACKAGE}" "${KH_PLAN_BACKEND}" "${KH_PLAN_ARCH}" "${KH_PLAN_GEN}" plan)
set(_text "has_backend ${plan_HAS_BACKEND}")
foreach(_field SOURCES GENERATED INCLUDE_DIRS DEFINITIONS CXX_OPTIONS CUDA_OPTIONS HIP_OPTIONS)
  set(_items "")
  foreach(_item IN LISTS plan_${_field})
    string(REPLACE "${KH_PLAN_GEN}" "gen" _item "${_item}")
    string(REPLACE "${KH_PACKAGE}/" "" _item "${_item}")
    list(APPEND _items "${_item}")
  endforeach()
  string(TOLOWER "${_field}" _name)
  string(JOIN " " _items ${_items})
  string(APPEND _text "\n${_name} ${_items}")
endforeach()
execute_process(COMMAND "${CMAKE_COMMAND}" -E echo "${_text}")
