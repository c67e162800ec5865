# KhKernelLibrary.cmake: how every kh kernel library is built.
#
#   kh_add_kernel_library(<target> SOURCES <src>...
#                         [PACKAGE_JSON <kernel.json>] [PACKAGE_NAME <org/name> PACKAGE_VERSION <semver>]
#                         [VARIANT <key>] [COMPILE_OPTIONS <opt>...] [LIBS <lib>...])
#
# makes lib<target>.so that exports only kh_kernel_negotiate (build-matrix/kernel.vers),
# binds its own symbols (-Bsymbolic, -fno-gnu-unique), resolves everything at link time
# (--no-undefined) and carries its own C++ runtime (-static-libstdc++ -static-libgcc), so a
# kernel library needs nothing but libc, libm, libdl and libpthread (plus the GPU driver,
# which GPU backends reach at run time). Sources see these compile definitions:
#   KH_PACKAGE_NAME    "org/name"  from kernel.json "name" (or PACKAGE_NAME)
#   KH_PACKAGE_VERSION "1.0.0"     from kernel.json "version" (or PACKAGE_VERSION)
#   KH_VARIANT_KEY     "cpu-x86_64-abi1-x86_64-linux": VARIANT, else ${KH_VARIANT_KEY}, else that
#   KH_DEVICE_TYPE     DLDeviceType of the variant's backend: 1 cpu, 2 cuda, 10 rocm
# CPU variants are compiled for their ISA level (cpu-x86_64_v3-... adds -march=x86-64-v3).
#
#   kh_setup_kernel_target(<KH_TARGET>)   (a macro: it enables languages in the caller's scope)
# turns a build-matrix target name into what the package CMakeLists need: KH_BACKEND (cpu,
# cuda, hip: which backend folder each package builds) and KH_VARIANT_KEY; for CUDA targets
# it enables CUDA (nvcc from CMAKE_CUDA_COMPILER, CUDACXX, PATH or /usr/local/cuda) with
#   cuda-sm80   CMAKE_CUDA_ARCHITECTURES 80-real;80-virtual (sm_80 SASS + compute_80 PTX)
#   cuda-sm90a  CMAKE_CUDA_ARCHITECTURES 90a-real (-gencode=arch=compute_90a,code=sm_90a)
# and the variant cuda<major.minor of nvcc>-<arch>-abiN-<cpu>-linux; rocm-gfx942 includes
# cmake/KhHipGfx942.cmake (the HIP toolchain helper) and names rocm<version>-gfx942-abiN-...
# kernels-src/CMakeLists.txt calls it; the GPU dev stand-ins in tests/gpu/*/standalone too.
#
#   kh_install_kernel_library(<target> PACKAGE_DIR <dir>)
# installs the library and its kernel.json under <prefix>/<dir>/<variant>/ when kernels-src
# is built standalone (the build matrix packs from there); does nothing inside kh's build.
# Included once per directory that needs it (variables are directory-scoped); targets are guarded.

get_filename_component(KH_KERNEL_SOURCE_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(KH_KERNEL_VERSION_SCRIPT "${KH_KERNEL_SOURCE_ROOT}/build-matrix/kernel.vers")
set(KH_KERNEL_DEFAULT_VARIANT "cpu-x86_64-abi1-x86_64-linux")

# The ABI major a variant key's "abiN" must name, read from the header that defines it.
file(STRINGS "${KH_KERNEL_SOURCE_ROOT}/abi/include/kh/kernel_abi.h" _kh_abi_major_line
     REGEX "^#define KH_ABI_VERSION_MAJOR [0-9]+")
string(REGEX REPLACE "^#define KH_ABI_VERSION_MAJOR ([0-9]+).*" "\\1" KH_ABI_VERSION_MAJOR "${_kh_abi_major_line}")

# Headers of the ABI; kh's own build defines kh_abi in abi/, a standalone kernels build here.
if(NOT TARGET kh_abi)
  find_path(KH_DLPACK_INCLUDE_DIR dlpack/dlpack.h REQUIRED)
  add_library(kh_abi INTERFACE)
  target_include_directories(kh_abi INTERFACE "${KH_KERNEL_SOURCE_ROOT}/abi/include" "${KH_DLPACK_INCLUDE_DIR}")
endif()
# Kernel-side helpers (kernels-src/common/include/kh_kernel/): header-only.
if(NOT TARGET kh_kernel_common)
  add_library(kh_kernel_common INTERFACE)
  target_include_directories(kh_kernel_common INTERFACE "${KH_KERNEL_SOURCE_ROOT}/kernels-src/common/include")
  target_link_libraries(kh_kernel_common INTERFACE kh_abi)
endif()

# Splits a variant key into backend, ISA/arch and device type; fails on a malformed key.
function(kh_parse_variant_key key)
  if(NOT key MATCHES "^(cpu|cuda|rocm)([0-9.]*)-([a-z0-9_]+)-abi([0-9]+)-([a-z0-9_]+)-([a-z0-9]+)$")
    message(FATAL_ERROR "kh: malformed variant key '${key}' "
                        "(expected {backend}{version}-{arch}-abi{N}-{cpu}-{os}, e.g. ${KH_KERNEL_DEFAULT_VARIANT})")
  endif()
  set(backend "${CMAKE_MATCH_1}")
  set(arch "${CMAKE_MATCH_3}")
  if(NOT CMAKE_MATCH_4 STREQUAL KH_ABI_VERSION_MAJOR)
    message(FATAL_ERROR "kh: variant key '${key}' names abi${CMAKE_MATCH_4}, "
                        "but kh/kernel_abi.h is ABI major ${KH_ABI_VERSION_MAJOR}")
  endif()
  if(backend STREQUAL "cpu")
    set(device_type 1)   # kDLCPU
  elseif(backend STREQUAL "cuda")
    set(device_type 2)   # kDLCUDA
  else()
    set(device_type 10)  # kDLROCM
  endif()
  set(KH_VARIANT_BACKEND "${backend}" PARENT_SCOPE)
  set(KH_VARIANT_ARCH "${arch}" PARENT_SCOPE)
  set(KH_VARIANT_DEVICE_TYPE "${device_type}" PARENT_SCOPE)
endfunction()

function(kh_add_kernel_library target)
  cmake_parse_arguments(PARSE_ARGV 1 K "" "VARIANT;PACKAGE_JSON;PACKAGE_NAME;PACKAGE_VERSION"
                        "SOURCES;COMPILE_OPTIONS;LIBS")
  if(K_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kh_add_kernel_library(${target}): unknown arguments ${K_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT K_SOURCES)
    message(FATAL_ERROR "kh_add_kernel_library(${target}): SOURCES is required")
  endif()

  # Package identity: kernel.json, overridable for fixtures that have none.
  set(name "${K_PACKAGE_NAME}")
  set(version "${K_PACKAGE_VERSION}")
  set(json "")
  if(K_PACKAGE_JSON)
    get_filename_component(json "${K_PACKAGE_JSON}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    file(READ "${json}" text)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${json}")
    if(NOT name)
      string(JSON name ERROR_VARIABLE err GET "${text}" name)
      if(err)
        message(FATAL_ERROR "kh_add_kernel_library(${target}): ${json}: no string \"name\": ${err}")
      endif()
    endif()
    if(NOT version)
      string(JSON version ERROR_VARIABLE err GET "${text}" version)
      if(err)
        message(FATAL_ERROR "kh_add_kernel_library(${target}): ${json}: no string \"version\": ${err}")
      endif()
    endif()
  endif()
  if(NOT name MATCHES "^[a-z0-9._-]+/[a-z0-9._-]+$")
    message(FATAL_ERROR "kh_add_kernel_library(${target}): package name '${name}' is not <org>/<name> "
                        "in [a-z0-9._-] (set it in kernel.json or PACKAGE_NAME)")
  endif()
  if(NOT version MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+([-+][0-9A-Za-z.+-]+)?$")
    message(FATAL_ERROR "kh_add_kernel_library(${target}): version '${version}' is not semver")
  endif()

  # Variant: explicit, else the directory's KH_VARIANT_KEY (kernels-src sets it), else default.
  if(K_VARIANT)
    set(variant "${K_VARIANT}")
  elseif(KH_VARIANT_KEY)
    set(variant "${KH_VARIANT_KEY}")
  else()
    set(variant "${KH_KERNEL_DEFAULT_VARIANT}")
  endif()
  kh_parse_variant_key("${variant}")

  add_library(${target} SHARED ${K_SOURCES})
  set_target_properties(${target} PROPERTIES
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    HIP_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON
    LINK_DEPENDS "${KH_KERNEL_VERSION_SCRIPT}"
    KH_PACKAGE_NAME "${name}"
    KH_PACKAGE_VERSION "${version}"
    KH_VARIANT_KEY "${variant}"
    KH_PACKAGE_JSON "${json}")
  target_compile_definitions(${target} PRIVATE
    KH_PACKAGE_NAME="${name}"
    KH_PACKAGE_VERSION="${version}"
    KH_VARIANT_KEY="${variant}"
    KH_DEVICE_TYPE=${KH_VARIANT_DEVICE_TYPE})

  # GCC would otherwise mark some template statics STB_GNU_UNIQUE, which makes a library
  # impossible to dlclose and merges its statics with another library's.
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANG_AND_ID:C,GNU>:-fno-gnu-unique>
    $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-fno-gnu-unique>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<CXX_COMPILER_ID:GNU>>:-Xcompiler=-fno-gnu-unique>)
  if(DEFINED KH_WARNINGS)
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${KH_WARNINGS}>")
  endif()

  # A CPU variant is compiled for exactly the ISA level its key names.
  if(KH_VARIANT_BACKEND STREQUAL "cpu" AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    if(KH_VARIANT_ARCH MATCHES "^x86_64_v([234])$")
      set(march "-march=x86-64-v${CMAKE_MATCH_1}")
    elseif(KH_VARIANT_ARCH STREQUAL "x86_64")
      set(march "-march=x86-64")
    else()
      message(FATAL_ERROR "kh_add_kernel_library(${target}): CPU arch '${KH_VARIANT_ARCH}' of '${variant}' "
                          "cannot be built on ${CMAKE_SYSTEM_PROCESSOR}")
    endif()
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:${march}>)
  endif()
  if(K_COMPILE_OPTIONS)
    target_compile_options(${target} PRIVATE ${K_COMPILE_OPTIONS})
  endif()

  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${KH_KERNEL_VERSION_SCRIPT}"
    "LINKER:-Bsymbolic")
  # A static libstdc++ allocates its exception pool (72 KiB) at load and never frees it, which
  # LeakSanitizer reports once the library is dlclose'd; sanitizer builds are never shipped,
  # so they link the shared runtime instead.
  if(NOT KH_SANITIZE)
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  endif()
  # Clang's sanitizer runtimes are not linked into shared libraries: their symbols resolve
  # from the executable at load time, which --no-undefined would refuse.
  if(NOT (KH_SANITIZE AND CMAKE_CXX_COMPILER_ID MATCHES "Clang"))
    target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  endif()
  target_link_libraries(${target} PRIVATE kh_kernel_common kh_abi ${K_LIBS})
endfunction()

function(kh_install_kernel_library target)
  cmake_parse_arguments(PARSE_ARGV 1 K "" "PACKAGE_DIR" "")
  if(NOT KH_KERNELS_STANDALONE)
    return()
  endif()
  get_target_property(variant ${target} KH_VARIANT_KEY)
  get_target_property(json ${target} KH_PACKAGE_JSON)
  install(TARGETS ${target} LIBRARY DESTINATION "${K_PACKAGE_DIR}/${variant}")
  if(json)
    install(FILES "${json}" DESTINATION "${K_PACKAGE_DIR}/${variant}")
  endif()
endfunction()

# The host's CPU name as variant keys spell it.
function(kh_host_cpu_name out)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    set(cpu x86_64)
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
    set(cpu aarch64)
  else()
    string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" cpu)
  endif()
  set(${out} "${cpu}" PARENT_SCOPE)
endfunction()

macro(kh_setup_kernel_target kh_target)
  kh_host_cpu_name(_kh_cpu)
  if("${kh_target}" MATCHES "^cpu-([a-z0-9_]+)$")
    set(KH_BACKEND cpu)
    set(KH_VARIANT_KEY "cpu-${CMAKE_MATCH_1}-abi${KH_ABI_VERSION_MAJOR}-${_kh_cpu}-linux")
  elseif("${kh_target}" MATCHES "^cuda-(sm80|sm90a)$")
    set(_kh_cuda_arch "${CMAKE_MATCH_1}")
    if(_kh_cuda_arch STREQUAL "sm80")
      set(CMAKE_CUDA_ARCHITECTURES "80-real;80-virtual")  # SASS sm_80 + PTX compute_80 (JIT on newer GPUs)
    else()
      set(CMAKE_CUDA_ARCHITECTURES "90a-real")            # wgmma/setmaxnreg need the 'a' features
    endif()
    if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
      find_program(_kh_nvcc nvcc PATHS /usr/local/cuda/bin NO_CACHE)
      if(NOT _kh_nvcc)
        message(FATAL_ERROR "KH_TARGET=${kh_target}: nvcc not found (PATH, CUDACXX, /usr/local/cuda/bin); "
                            "install the CUDA toolkit or pass -DCMAKE_CUDA_COMPILER=<path to nvcc>")
      endif()
      set(CMAKE_CUDA_COMPILER "${_kh_nvcc}")
    endif()
    enable_language(CUDA)
    # CUDA 13 has no libnvToolsExt, and the FindCUDAToolkit of Debian 12's CMake 3.25 then
    # sets a property on CUDA::nvToolsExt without checking that the target exists: a
    # configure error in every package that calls find_package(CUDAToolkit). An empty
    # stand-in lets it pass; nothing links it (NVTX is header-only since CUDA 10: CUDA::nvtx3).
    if(NOT TARGET CUDA::nvToolsExt)
      add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
    endif()
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_RUNTIME_LIBRARY Static)  # -cudart static: a kernel library needs only the driver
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" _kh_cuda_mm "${CMAKE_CUDA_COMPILER_VERSION}")
    set(KH_BACKEND cuda)
    set(KH_VARIANT_KEY "cuda${_kh_cuda_mm}-${_kh_cuda_arch}-abi${KH_ABI_VERSION_MAJOR}-${_kh_cpu}-linux")
  elseif("${kh_target}" MATCHES "^rocm-(gfx942)$")
    set(_kh_hip_helper "${KH_KERNEL_SOURCE_ROOT}/cmake/KhHipGfx942.cmake")
    if(NOT EXISTS "${_kh_hip_helper}")
      message(FATAL_ERROR "KH_TARGET=${kh_target}: cmake/KhHipGfx942.cmake (the clang-19 HIP toolchain for "
                          "gfx942) is not in this tree yet; the rocm-gfx942 target cannot be configured")
    endif()
    # The helper sets up clang-19 + lld-19 for -x hip --offload-arch=gfx942 and may set
    # KH_ROCM_VERSION (major.minor of the HIP it compiles against); else hip_version.h says.
    include("${_kh_hip_helper}")
    if(NOT KH_ROCM_VERSION)
      find_file(_kh_hip_version_h hip/hip_version.h PATHS /opt/rocm/include /usr/include NO_CACHE)
      if(_kh_hip_version_h)
        file(STRINGS "${_kh_hip_version_h}" _kh_hip_mm REGEX "^#define HIP_VERSION_(MAJOR|MINOR) [0-9]+")
        string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*" "\\1.\\2" KH_ROCM_VERSION "${_kh_hip_mm}")
      endif()
    endif()
    if(NOT KH_ROCM_VERSION MATCHES "^[0-9]+\\.[0-9]+$")
      message(FATAL_ERROR "KH_TARGET=${kh_target}: cannot tell the ROCm/HIP version (no KH_ROCM_VERSION from "
                          "KhHipGfx942.cmake, no hip/hip_version.h); install libamdhip64-dev")
    endif()
    set(KH_BACKEND hip)
    set(KH_VARIANT_KEY "rocm${KH_ROCM_VERSION}-gfx942-abi${KH_ABI_VERSION_MAJOR}-${_kh_cpu}-linux")
  else()
    message(FATAL_ERROR "KH_TARGET=${kh_target}: unknown target (expected cpu-x86_64, cpu-x86_64_v3, "
                        "cuda-sm80, cuda-sm90a or rocm-gfx942; see build-matrix/matrix.json)")
  endif()
endmacro()
