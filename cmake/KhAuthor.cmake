# KhAuthor.cmake: the kh author kit, the one entry point of every kernel package build.
#
# A package repository anywhere (docs/authoring.md) gets it from an installed kh:
#
#   find_package(kh 0.1 REQUIRED COMPONENTS author)
#   kh_setup_kernel_target("${KH_BUILD_TARGET}")        # a target of `kernels targets`
#   kh_add_kernel_package("${CMAKE_CURRENT_SOURCE_DIR}")  # builds from ./kernel.json
#
# and kh's own packages (kernels-src/CMakeLists.txt, standalone) include this same file. The
# kit is a subset of kh's source tree, installed under <prefix>/share/kh/author/ with the same
# relative paths (cmake/install.cmake lists it), so these modules find the version script,
# the target table, the ABI and helper headers and the HIP shim the same way in both places.
#
# After this file: kh_setup_kernel_target(<target>), kh_add_kernel_package(<dir>),
# kh_add_kernel_library(...) (cmake/KhKernelLibrary.cmake, cmake/KhKernelPackage.cmake), and
#   KH_BUILD_TARGET   the target to build (cache; default cpu-<host cpu>, the baseline CPU build)
#   KH_AUTHOR_KIT_DIR the kit's root
# Libraries are installed (cmake --install) as <prefix>/<package folder>/<variant key>/, the
# layout `kernels build` packs from.
include_guard(GLOBAL)

set(KH_KERNELS_STANDALONE ON)
include("${CMAKE_CURRENT_LIST_DIR}/KhKernelLibrary.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/KhKernelPackage.cmake")

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type (published kernel builds are Release)" FORCE)
endif()
if(DEFINED KH_TARGET AND NOT DEFINED KH_BUILD_TARGET)
  message(FATAL_ERROR "KH_TARGET is the runtime's variable (a variant key to load); a build takes "
                      "-DKH_BUILD_TARGET=<target> (`kernels targets` lists them)")
endif()
kh_host_cpu_name(_kh_author_cpu)
set(KH_BUILD_TARGET "cpu-${_kh_author_cpu}" CACHE STRING "The kh target to build: a key of `kernels targets`")
