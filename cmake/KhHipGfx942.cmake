# KhHipGfx942.cmake: the HIP toolchain of the rocm-gfx942 kernel variants.
#
# Included by kh_setup_kernel_target for the rocm-gfx942 target of build-matrix/matrix.json
# (KH_BUILD_TARGET=rocm-gfx942, before the packages), it finds a compiler that emits gfx942
# (MI300) code objects and provides
#
#   kh_add_hip_kernel_library(<target> SOURCES <c++ sources>... HIP_SOURCES <hip sources>...
#                             [PACKAGE_JSON <kernel.json>] [INCLUDE_DIRS <dir>...]
#                             [HIP_OPTIONS <flag>...])
#       kh_add_kernel_library(<target> ...) with the C++ sources (module.cpp, argument rules),
#       plus the HIP sources compiled by kh_add_hip_sources(), plus the HIP runtime shim
#       (kernels-src/common/src/hip_shim/): no link to libamdhip64, so the library loads under
#       any ROCm 5.x-7.x runtime, or none (its ops then fail with KH_ERROR_DEVICE).
#   kh_add_hip_sources(<target> <hip sources>... [OPTIONS <flag>...])
#       compiles each source as HIP for gfx942 into an object of <target> (host code for this
#       machine, the device code object embedded as a clang offload bundle in .hip_fatbin),
#       with <target>'s include directories and compile definitions, hidden visibility.
#   kh_add_hip_runtime_shim(<target>)
#       adds the shim's sources to <target> (kh_add_hip_kernel_library does).
#
# and these variables:
#   KH_ROCM_VERSION        "<major>.<minor>" of the HIP headers/runtime built against, e.g.
#                          5.2 (the variant key is rocm${KH_ROCM_VERSION}-gfx942-abiN-...)
#   KH_HIP_ARCH            gfx942
#   KH_HIP_TOOLCHAIN       "rocm" (a ROCm hipcc that accepts gfx942, used as is) or
#                          "clang" (clang-19 + Debian's HIP headers and device libraries)
#   KH_HIP_COMPILER        the compiler used for HIP sources
#   KH_HIP_INCLUDE_DIR     the HIP headers' folder (the types the shim is written against)
#
# Toolchain choice (docs: DESIGN.md "Toolchain facts"): Debian 12's hipcc (ROCm 5.2, clang 15)
# rejects gfx942. A hipcc that accepts it (a real ROCm >= 6 under $ROCM_PATH or /opt/rocm) is
# used as is. Otherwise clang-19 compiles with -x hip against Debian's HIP 5.2 headers and
# rocm-device-libs, through a device-library folder made here: the Debian bitcode plus an
# oclc_isa_version_942.bc (one constant, __oclc_ISA_version = 9402) assembled with
# llvm-as-19, which rocm-device-libs 5.2 lacks. KH_HIP_COMPILER=<path> forces a compiler
# (a ROCm hipcc or amdclang++, or a clang >= 17 with -DKH_HIP_TOOLCHAIN=clang).
# Debian packages: clang-19 lld-19 llvm-19 clang-tools-19 libamdhip64-dev rocm-device-libs.
include_guard(DIRECTORY)

set(KH_HIP_ARCH gfx942)

# Compiles a one-kernel HIP file for gfx942 with `compiler` and extra flags, host and device
# code as a real build does (device link, offload bundle); sets out_var to TRUE when that works.
function(_kh_hip_try_compiler out_var compiler)
  set(dir "${CMAKE_BINARY_DIR}/CMakeFiles/kh-hip-probe")
  file(MAKE_DIRECTORY "${dir}")
  file(WRITE "${dir}/probe.hip" "#include <hip/hip_runtime.h>\n__global__ void kh_probe(float* p) { p[threadIdx.x] = 1.f; }\n")
  execute_process(
    COMMAND "${compiler}" -x hip --offload-arch=${KH_HIP_ARCH} ${ARGN}
            -c "${dir}/probe.hip" -o "${dir}/probe.o"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    set(${out_var} TRUE PARENT_SCOPE)
  else()
    set(${out_var} FALSE PARENT_SCOPE)
    string(STRIP "${err}" err)
    set(KH_HIP_PROBE_ERROR "${err}" PARENT_SCOPE)
  endif()
endfunction()

# "<major>.<minor>" from a hip/hip_version.h.
function(_kh_hip_version_from_header header out_var)
  file(STRINGS "${header}" lines REGEX "^#define HIP_VERSION_(MAJOR|MINOR) [0-9]+")
  set(major "")
  set(minor "")
  foreach(line IN LISTS lines)
    if(line MATCHES "HIP_VERSION_MAJOR ([0-9]+)")
      set(major "${CMAKE_MATCH_1}")
    elseif(line MATCHES "HIP_VERSION_MINOR ([0-9]+)")
      set(minor "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  if(major STREQUAL "" OR minor STREQUAL "")
    message(FATAL_ERROR "kh: no HIP_VERSION_MAJOR/MINOR in ${header}")
  endif()
  set(${out_var} "${major}.${minor}" PARENT_SCOPE)
endfunction()

# ---- 1. a ROCm whose hipcc accepts gfx942, used as is ---------------------------------------
set(KH_HIP_TOOLCHAIN "" CACHE STRING "HIP toolchain for gfx942: rocm or clang (empty: detect)")
set(_kh_hip_flags "")
if(NOT KH_HIP_TOOLCHAIN STREQUAL "clang")
  if(KH_HIP_COMPILER AND KH_HIP_TOOLCHAIN STREQUAL "rocm")
    set(_kh_hipcc "${KH_HIP_COMPILER}")
  else()
    find_program(_kh_hipcc NAMES hipcc amdclang++
                 HINTS ENV ROCM_PATH ENV HIP_PATH /opt/rocm PATH_SUFFIXES bin llvm/bin NO_CACHE)
  endif()
  if(_kh_hipcc)
    _kh_hip_try_compiler(_kh_hipcc_ok "${_kh_hipcc}")
    if(_kh_hipcc_ok)
      set(KH_HIP_TOOLCHAIN rocm)
      set(KH_HIP_COMPILER "${_kh_hipcc}")
      # <rocm>/bin/hipcc or <rocm>/llvm/bin/amdclang++ -> <rocm>
      get_filename_component(_kh_rocm_root "${_kh_hipcc}" REALPATH)
      get_filename_component(_kh_rocm_root "${_kh_rocm_root}" DIRECTORY)
      get_filename_component(_kh_rocm_root "${_kh_rocm_root}" DIRECTORY)
      if(_kh_rocm_root MATCHES "/llvm$")
        get_filename_component(_kh_rocm_root "${_kh_rocm_root}" DIRECTORY)
      endif()
      find_path(KH_HIP_INCLUDE_DIR hip/hip_version.h HINTS "${_kh_rocm_root}/include" ENV ROCM_PATH
                PATH_SUFFIXES include NO_DEFAULT_PATH)
    elseif(KH_HIP_TOOLCHAIN STREQUAL "rocm")
      message(FATAL_ERROR "kh: ${_kh_hipcc} cannot compile for ${KH_HIP_ARCH}: ${KH_HIP_PROBE_ERROR}")
    else()
      message(STATUS "kh: ${_kh_hipcc} does not accept ${KH_HIP_ARCH} (Debian's ROCm 5.2 does not); using clang")
    endif()
  endif()
endif()

# ---- 2. clang >= 17 + Debian's HIP headers and device libraries -----------------------------
if(NOT KH_HIP_TOOLCHAIN STREQUAL "rocm")
  set(KH_HIP_TOOLCHAIN clang)
  if(NOT KH_HIP_COMPILER)
    find_program(KH_HIP_COMPILER NAMES clang-19 clang++-19
                 DOC "clang that compiles HIP for gfx942 (Debian: clang-19)")
  endif()
  if(NOT KH_HIP_COMPILER)
    message(FATAL_ERROR "kh: KH_BUILD_TARGET=rocm-gfx942 needs clang-19 (apt-get install clang-19) "
                        "or a ROCm whose hipcc accepts gfx942 (set ROCM_PATH)")
  endif()
  get_filename_component(_kh_clang_dir "${KH_HIP_COMPILER}" REALPATH)
  get_filename_component(_kh_clang_dir "${_kh_clang_dir}" DIRECTORY)
  find_program(KH_HIP_LLVM_AS NAMES llvm-as-19 llvm-as HINTS "${_kh_clang_dir}" DOC "llvm-as of KH_HIP_COMPILER")
  # clang runs these two from its own folder while compiling HIP (the device link and the
  # offload bundle), so they must sit beside it, not merely on PATH.
  find_program(KH_HIP_LLD NAMES ld.lld HINTS "${_kh_clang_dir}" NO_DEFAULT_PATH
               DOC "ld.lld beside KH_HIP_COMPILER (Debian: lld-19)")
  find_program(KH_HIP_OFFLOAD_BUNDLER NAMES clang-offload-bundler HINTS "${_kh_clang_dir}" NO_DEFAULT_PATH
               DOC "clang-offload-bundler beside KH_HIP_COMPILER (Debian: clang-tools-19)")
  find_path(KH_HIP_INCLUDE_DIR hip/hip_version.h HINTS ENV ROCM_PATH PATH_SUFFIXES include
            DOC "include folder of the HIP headers (Debian: libamdhip64-dev)")
  find_path(KH_HIP_DEVICE_LIB_DIR ockl.bc
            HINTS ENV ROCM_PATH ENV HIP_DEVICE_LIB_PATH
            PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} /usr/lib /opt/rocm
            PATH_SUFFIXES amdgcn/bitcode lib/amdgcn/bitcode
            DOC "folder of rocm-device-libs' bitcode (Debian: rocm-device-libs)")
  # Each piece with the Debian package that provides it, so a missing one is named exactly.
  foreach(_kh_need "KH_HIP_LLVM_AS=llvm-19" "KH_HIP_LLD=lld-19" "KH_HIP_OFFLOAD_BUNDLER=clang-tools-19"
                   "KH_HIP_INCLUDE_DIR=libamdhip64-dev" "KH_HIP_DEVICE_LIB_DIR=rocm-device-libs")
    string(REPLACE "=" ";" _kh_need "${_kh_need}")
    list(GET _kh_need 0 _kh_var)
    list(GET _kh_need 1 _kh_pkg)
    if(NOT ${_kh_var})
      message(FATAL_ERROR "kh: KH_BUILD_TARGET=rocm-gfx942: ${_kh_var} not found (in ${_kh_clang_dir} for the "
                          "compiler's helpers); install it: apt-get install ${_kh_pkg}")
    endif()
  endforeach()

  # The device-library folder: Debian's bitcode plus the gfx942 ISA-version constant. The
  # constant's module takes its data layout from the compiler, so linking it is silent.
  set(_kh_devlibs "${CMAKE_BINARY_DIR}/kh-hip-device-libs")
  file(MAKE_DIRECTORY "${_kh_devlibs}")
  file(GLOB _kh_bitcode "${KH_HIP_DEVICE_LIB_DIR}/*.bc")
  foreach(_kh_bc IN LISTS _kh_bitcode)
    get_filename_component(_kh_name "${_kh_bc}" NAME)
    if(NOT EXISTS "${_kh_devlibs}/${_kh_name}")
      file(CREATE_LINK "${_kh_bc}" "${_kh_devlibs}/${_kh_name}" SYMBOLIC COPY_ON_ERROR)
    endif()
  endforeach()
  if(NOT EXISTS "${KH_HIP_DEVICE_LIB_DIR}/oclc_isa_version_942.bc")
    execute_process(
      COMMAND "${KH_HIP_COMPILER}" -target amdgcn-amd-amdhsa -mcpu=${KH_HIP_ARCH} -nogpulib -S -emit-llvm
              -x c /dev/null -o -
      RESULT_VARIABLE _kh_rc OUTPUT_VARIABLE _kh_ir ERROR_VARIABLE _kh_err)
    if(NOT _kh_rc EQUAL 0 OR NOT _kh_ir MATCHES "target datalayout = \"([^\"]*)\"")
      message(FATAL_ERROR "kh: ${KH_HIP_COMPILER} cannot target amdgcn-amd-amdhsa/${KH_HIP_ARCH}: ${_kh_err}")
    endif()
    file(WRITE "${_kh_devlibs}/oclc_isa_version_942.ll"
         "; gfx942: major 9, minor 4, stepping 2 (what rocm-device-libs' later releases ship)\n"
         "target datalayout = \"${CMAKE_MATCH_1}\"\n"
         "target triple = \"amdgcn-amd-amdhsa\"\n"
         "@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) constant i32 9402, align 4\n")
    execute_process(
      COMMAND "${KH_HIP_LLVM_AS}" "${_kh_devlibs}/oclc_isa_version_942.ll" -o "${_kh_devlibs}/oclc_isa_version_942.bc"
      RESULT_VARIABLE _kh_rc ERROR_VARIABLE _kh_err)
    if(NOT _kh_rc EQUAL 0)
      message(FATAL_ERROR "kh: ${KH_HIP_LLVM_AS} failed on oclc_isa_version_942.ll: ${_kh_err}")
    endif()
  endif()

  get_filename_component(_kh_hip_root "${KH_HIP_INCLUDE_DIR}" DIRECTORY)
  set(_kh_hip_flags "--rocm-path=${_kh_hip_root}" "--rocm-device-lib-path=${_kh_devlibs}")
  # Code-object version 4 (clang-19 defaults to 5): the oldest a current runtime loads, so the
  # libraries run under HIP 5.x as under 6.x and 7.x (kernels pack records it, and the HIP
  # runtime it needs, in the manifest; selection holds the host's runtime to them). Debian's
  # device libraries (5.2) are built for it too.
  _kh_hip_version_from_header("${KH_HIP_INCLUDE_DIR}/hip/hip_version.h" _kh_hip_ver)
  if(_kh_hip_ver VERSION_LESS 6.0)
    list(APPEND _kh_hip_flags -mcode-object-version=4)
  endif()
  _kh_hip_try_compiler(_kh_clang_ok "${KH_HIP_COMPILER}" ${_kh_hip_flags})
  if(NOT _kh_clang_ok)
    message(FATAL_ERROR "kh: ${KH_HIP_COMPILER} cannot compile HIP for ${KH_HIP_ARCH}: ${KH_HIP_PROBE_ERROR}")
  endif()
endif()

if(NOT KH_HIP_INCLUDE_DIR)
  message(FATAL_ERROR "kh: KH_BUILD_TARGET=rocm-gfx942: the HIP headers (hip/hip_version.h) were not found; "
                      "apt-get install libamdhip64-dev, or set ROCM_PATH")
endif()
_kh_hip_version_from_header("${KH_HIP_INCLUDE_DIR}/hip/hip_version.h" KH_ROCM_VERSION)
set(KH_HIP_FLAGS -x hip --offload-arch=${KH_HIP_ARCH} ${_kh_hip_flags})
message(STATUS "kh: HIP ${KH_ROCM_VERSION} for ${KH_HIP_ARCH} via ${KH_HIP_TOOLCHAIN} (${KH_HIP_COMPILER})")

# ---- compiling HIP sources into a kernel library -------------------------------------------

# Device code is compiled at -O3 whatever the build type; host code of a .hip file is launch
# glue. -fgpu-rdc stays off: each object carries and registers its own code object.
set(KH_HIP_DEFAULT_OPTIONS -O3 -std=c++17 -fPIC -fvisibility=hidden -fvisibility-inlines-hidden
    -Wall -Wextra -Wshadow -Wno-missing-field-initializers)

# Each compile runs through retry-on-compiler-crash.sh: clang-19 crashes at random on some gfx942
# units (that script says how often), and a second attempt of the same command succeeds.
set(KH_HIP_RETRY_ON_CRASH "${CMAKE_CURRENT_LIST_DIR}/retry-on-compiler-crash.sh")

function(kh_add_hip_sources target)
  cmake_parse_arguments(PARSE_ARGV 1 H "" "" "OPTIONS")
  set(launcher "")
  if(CMAKE_CXX_COMPILER_LAUNCHER)
    set(launcher ${CMAKE_CXX_COMPILER_LAUNCHER})
  endif()
  set(includes "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  set(defines "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  set(maps "$<TARGET_PROPERTY:${target},KH_FILE_PREFIX_MAPS>")
  set(objects "")
  set(index 0)
  foreach(src IN LISTS H_UNPARSED_ARGUMENTS)
    get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_filename_component(name "${abs}" NAME)
    # clang names each HIP unit by a hash of its path unless told otherwise (-cuid); a name
    # from the library, the unit's place in the list and its file name is the same in every
    # build folder (reproducible builds, kh_make_reproducible).
    string(SHA256 cuid "${target}/${index}/${name}")
    string(SUBSTRING "${cuid}" 0 16 cuid)
    math(EXPR index "${index} + 1")
    set(obj "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/${target}.hip/${name}.o")
    # Ninja makes an output's folder before the command runs; Make does not, and clang then
    # cannot open the depfile there.
    file(MAKE_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/${target}.hip")
    file(RELATIVE_PATH shown "${CMAKE_BINARY_DIR}" "${obj}")
    add_custom_command(
      OUTPUT "${obj}"
      COMMAND "${KH_HIP_RETRY_ON_CRASH}" ${launcher} "${KH_HIP_COMPILER}" ${KH_HIP_FLAGS} ${KH_HIP_DEFAULT_OPTIONS} ${H_OPTIONS}
              "$<$<BOOL:${defines}>:-D$<JOIN:${defines},;-D>>"
              "$<$<BOOL:${includes}>:-I$<JOIN:${includes},;-I>>"
              ${maps} -cuid=${cuid} -MD -MF "${obj}.d" -c "${abs}" -o "${obj}"
      DEPENDS "${abs}"
      DEPFILE "${obj}.d"
      COMMENT "Building HIP (${KH_HIP_ARCH}) object ${shown}"
      COMMAND_EXPAND_LISTS VERBATIM)
    list(APPEND objects "${obj}")
  endforeach()
  set_source_files_properties(${objects} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  target_sources(${target} PRIVATE ${objects})
endfunction()

# The HIP runtime shim (the kit's kernels-src/common/src/hip_shim/hip_shim_runtime.cpp says what and why):
# host C++ against the HIP headers' types, plus the platform vocabulary's offload-bundle reader
# and runtime sonames. It defines every HIP entry point the library's code calls; the link's
# --no-undefined names any it lacks.
set(KH_HIP_SHIM_DIR "${KH_AUTHOR_KIT_DIR}/kernels-src/common/src/hip_shim")
set(KH_HIP_SHIM_SOURCES
  "${KH_HIP_SHIM_DIR}/hip_shim_runtime.cpp"
  "${KH_HIP_SHIM_DIR}/hip_shim_kernels.cpp"
  "${KH_HIP_SHIM_DIR}/hip_shim_api.cpp"
  "${KH_AUTHOR_KIT_DIR}/platform/src/offload_bundle.cpp")
function(kh_add_hip_runtime_shim target)
  target_sources(${target} PRIVATE ${KH_HIP_SHIM_SOURCES})
  set(includes "${KH_HIP_SHIM_DIR}" "${KH_AUTHOR_KIT_DIR}/platform/include")
  # Debian's headers are in /usr/include, which must not be named with -I (it would come
  # before the C++ library's own wrappers of the C headers).
  if(NOT KH_HIP_INCLUDE_DIR IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
    list(APPEND includes "${KH_HIP_INCLUDE_DIR}")
  endif()
  set_source_files_properties(${KH_HIP_SHIM_SOURCES} TARGET_DIRECTORY ${target} PROPERTIES
    INCLUDE_DIRECTORIES "${includes}" COMPILE_DEFINITIONS "__HIP_PLATFORM_AMD__=1")
  target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})
endfunction()

function(kh_add_hip_kernel_library target)
  cmake_parse_arguments(PARSE_ARGV 1 H "" "PACKAGE_JSON" "SOURCES;HIP_SOURCES;INCLUDE_DIRS;HIP_OPTIONS")
  if(H_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kh_add_hip_kernel_library(${target}): unknown arguments ${H_UNPARSED_ARGUMENTS}")
  endif()
  set(json_arg "")
  if(H_PACKAGE_JSON)
    set(json_arg PACKAGE_JSON "${H_PACKAGE_JSON}")
  endif()
  kh_add_kernel_library(${target} ${json_arg} SOURCES ${H_SOURCES})
  if(H_INCLUDE_DIRS)
    target_include_directories(${target} PRIVATE ${H_INCLUDE_DIRS})
  endif()
  kh_add_hip_sources(${target} ${H_HIP_SOURCES} OPTIONS ${H_HIP_OPTIONS})
  kh_add_hip_runtime_shim(${target})
endfunction()
