# KhKernelPackage.cmake: building a kernel package from its manifest (part of the author kit,
# cmake/KhAuthor.cmake).
#
#   kh_add_kernel_package(<dir>)      <dir>: a folder of the current source dir, or an absolute path
#
# builds the package in <dir> for this build's target (KH_BACKEND and KH_VARIANT_KEY, which
# kh_setup_kernel_target sets) from <dir>/kernel.json alone: the library kh_<ident>_<backend>
# (ident: the package name's part after '/' with '-' and '.' as '_', e.g. kh_rms_norm_cuda)
# made by kh_add_kernel_library (cmake/KhKernelLibrary.cmake: visibility, version script,
# static C++ runtime, KH_PACKAGE_NAME...) from the sources kh_kernel_package_plan
# (cmake/KhKernelManifest.cmake) lists for the backend and arch, the per-dtype / per-head-dim
# translation units it generates from the manifest's templates, and kh_manifest_ops.h (the op
# table the package's module source builds from). Placed in <binary dir>/<name>/
# (libkh_<ident>_<backend>.so) and installed as kh_install_kernel_library does. A package
# without the backend is skipped.
#
# Per backend: cpu compiles C++; cuda adds CUDA sources (nvcc, the CUDA runtime linked
# statically); hip compiles .hip sources with kh_add_hip_sources (cmake/KhHipGfx942.cmake).
# cxx_options go to C++ sources, cuda_options to CUDA sources, hip_options to HIP sources;
# include_dirs and compile_definitions to every source. docs/authoring.md has the format.
include_guard(DIRECTORY)
include("${CMAKE_CURRENT_LIST_DIR}/KhKernelManifest.cmake")

function(kh_add_kernel_package dir)
  # <dir>: a folder of the current source dir (kernels-src/CMakeLists.txt), or an absolute path
  # (a package repository, a dev build elsewhere).
  if(IS_ABSOLUTE "${dir}")
    set(pkg_dir "${dir}")
    get_filename_component(dir "${dir}" NAME)
  else()
    set(pkg_dir "${CMAKE_CURRENT_SOURCE_DIR}/${dir}")
  endif()
  if(NOT EXISTS "${pkg_dir}/kernel.json")
    message(FATAL_ERROR "kh_add_kernel_package(${dir}): no ${pkg_dir}/kernel.json")
  endif()
  if(NOT KH_BACKEND OR NOT KH_VARIANT_KEY)
    message(FATAL_ERROR "kh_add_kernel_package(${dir}): KH_BACKEND/KH_VARIANT_KEY are not set; "
                        "call kh_setup_kernel_target(<target>) first, in the project's top-level CMakeLists.txt")
  endif()
  kh_parse_variant_key("${KH_VARIANT_KEY}")  # KH_VARIANT_ARCH: sm80, sm90a, gfx942, x86_64_v3...
  if(NOT KH_VARIANT_ARCH)
    message(FATAL_ERROR "kh_add_kernel_package(${dir}): no arch in variant key '${KH_VARIANT_KEY}'")
  endif()
  # Named after the package (kernel.json's "name"), not its folder: a repository may be checked
  # out under any name. kh's own folders are their packages' names.
  kh_kernel_package_info("${pkg_dir}" info)
  string(REGEX REPLACE "^.*/" "" short "${info_NAME}")
  set(ident "${info_IDENT}")
  set(dir "${short}")
  set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}/${dir}/generated")
  kh_kernel_package_plan("${pkg_dir}" "${KH_BACKEND}" "${KH_VARIANT_ARCH}" "${gen_dir}" plan)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${plan_DEPENDS})
  if(NOT plan_HAS_BACKEND)
    message(STATUS "kh kernels: ${dir} has no ${KH_BACKEND} backend; skipped")
    return()
  endif()

  set(target kh_${ident}_${KH_BACKEND})
  set(host_sources "")
  set(hip_sources "")
  foreach(src IN LISTS plan_SOURCES)
    if(src MATCHES "\\.hip$")
      list(APPEND hip_sources "${src}")
    else()
      list(APPEND host_sources "${src}")
    endif()
  endforeach()
  set(options "")
  if(plan_CXX_OPTIONS)
    list(APPEND options "$<$<COMPILE_LANGUAGE:CXX>:${plan_CXX_OPTIONS}>")
  endif()
  if(plan_CUDA_OPTIONS)
    list(APPEND options "$<$<COMPILE_LANGUAGE:CUDA>:${plan_CUDA_OPTIONS}>")
  endif()

  if(KH_BACKEND STREQUAL "cuda")
    find_package(CUDAToolkit REQUIRED)
    # -cudart static: a kernel library needs nothing but the driver at run time.
    kh_add_kernel_library(${target} PACKAGE_JSON "${pkg_dir}/kernel.json" SOURCES ${host_sources}
                          COMPILE_OPTIONS ${options} LIBS CUDA::cudart_static)
    set_target_properties(${target} PROPERTIES CUDA_RUNTIME_LIBRARY Static)
  elseif(KH_BACKEND STREQUAL "hip")
    kh_add_hip_kernel_library(${target} PACKAGE_JSON "${pkg_dir}/kernel.json" SOURCES ${host_sources}
                              HIP_SOURCES ${hip_sources} HIP_OPTIONS ${plan_HIP_OPTIONS})
    if(options)
      target_compile_options(${target} PRIVATE ${options})
    endif()
  else()
    kh_add_kernel_library(${target} PACKAGE_JSON "${pkg_dir}/kernel.json" SOURCES ${host_sources}
                          COMPILE_OPTIONS ${options})
  endif()
  if(plan_INCLUDE_DIRS)
    target_include_directories(${target} PRIVATE ${plan_INCLUDE_DIRS})
  endif()
  if(plan_DEFINITIONS)
    target_compile_definitions(${target} PRIVATE ${plan_DEFINITIONS})
  endif()
  kh_file_prefix_map(${target} "${pkg_dir}" "${dir}")  # reproducible builds (kh_make_reproducible)
  set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/${dir}")
  kh_install_kernel_library(${target} PACKAGE_DIR "${dir}")
endfunction()
