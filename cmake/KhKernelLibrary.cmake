# KhKernelLibrary.cmake: how every kh kernel library is built.
#
# Part of the author kit (cmake/KhAuthor.cmake): KH_AUTHOR_KIT_DIR is the kit's root, kh's source
# tree or <prefix>/share/kh/author, whose relative layout is the same.
#
#   kh_add_kernel_library(<target> SOURCES <src>...
#                         [PACKAGE_JSON <kernel.json>] [PACKAGE_NAME <org/name> PACKAGE_VERSION <semver>]
#                         [VARIANT <key>] [COMPILE_OPTIONS <opt>...] [LIBS <lib>...])
#
# makes lib<target>.so that exports only kh_kernel_negotiate (the kit's version script),
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
#   kh_setup_kernel_target(<KH_BUILD_TARGET>)   (a macro: it enables languages in the caller's scope)
# turns a target of build-matrix/matrix.json (its key: cpu-x86_64_v3, cuda-sm100, rocm-gfx942)
# into what the package CMakeLists need: KH_BACKEND (cpu, cuda, hip: which backend folder each
# package builds) and KH_VARIANT_KEY ({backend}{version}-{arch}-abiN-{cpu}-linux, the arch from
# the table). CUDA targets enable CUDA (nvcc from CMAKE_CUDA_COMPILER, CUDACXX, PATH or
# /usr/local/cuda) with the CMAKE_CUDA_ARCHITECTURES the platform vocabulary gives the arch:
#   sm80 80-real;80-virtual   sm90a 90a-real   sm100f 100f-real;100-virtual   sm120f 120f-real;120-virtual
# (the version is nvcc's major.minor); rocm-gfx942 includes cmake/KhHipGfx942.cmake (the HIP
# toolchain helper; the version is HIP's major.minor). kernels-src/CMakeLists.txt calls it;
# the author kit's projects (cmake/package, dev/attention/standalone) too.
#
#   kh_install_kernel_library(<target> PACKAGE_DIR <dir>)
# installs the library and its kernel.json under <prefix>/<dir>/<variant>/ when kernels-src
# is built standalone (the build matrix packs from there); does nothing inside kh's build.
# Included once per directory that needs it (variables are directory-scoped); targets are guarded.

get_filename_component(KH_AUTHOR_KIT_DIR "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(KH_KERNEL_VERSION_SCRIPT "${KH_AUTHOR_KIT_DIR}/build-matrix/kernel.vers")
set(KH_KERNEL_DEFAULT_VARIANT "cpu-x86_64-abi1-x86_64-linux")
# The platform vocabulary (variant-key grammar, ISA flags, CUDA architectures; generated from
# platform/) and the target table (build-matrix/matrix.json).
include("${CMAKE_CURRENT_LIST_DIR}/KhPlatform.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/KhVariantKey.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/KhMatrix.cmake")

# The ABI major a variant key's "abiN" must name, read from the header that defines it.
file(STRINGS "${KH_AUTHOR_KIT_DIR}/abi/include/kh/kernel_abi.h" _kh_abi_major_line
     REGEX "^#define KH_ABI_VERSION_MAJOR [0-9]+")
string(REGEX REPLACE "^#define KH_ABI_VERSION_MAJOR ([0-9]+).*" "\\1" KH_ABI_VERSION_MAJOR "${_kh_abi_major_line}")

# Headers of the ABI; kh's own build defines kh_abi in abi/, a standalone kernels build here.
if(NOT TARGET kh_abi)
  find_path(KH_DLPACK_INCLUDE_DIR dlpack/dlpack.h REQUIRED)
  add_library(kh_abi INTERFACE)
  target_include_directories(kh_abi INTERFACE "${KH_AUTHOR_KIT_DIR}/abi/include" "${KH_DLPACK_INCLUDE_DIR}")
endif()
# Kernel-side helpers (kernels-src/common/include/kh_kernel/): header-only.
if(NOT TARGET kh_kernel_common)
  add_library(kh_kernel_common INTERFACE)
  target_include_directories(kh_kernel_common INTERFACE "${KH_AUTHOR_KIT_DIR}/kernels-src/common/include")
  target_link_libraries(kh_kernel_common INTERFACE kh_abi)
endif()

# Splits a variant key into backend, arch and device type (kh_variant_key_parse: the grammar
# of the platform vocabulary); fails on a malformed key or another ABI major.
function(kh_parse_variant_key key)
  kh_variant_key_parse("${key}" _kh_key)
  if(_kh_key_ERROR)
    message(FATAL_ERROR "kh: malformed variant key: ${_kh_key_ERROR} (e.g. ${KH_KERNEL_DEFAULT_VARIANT})")
  endif()
  if(NOT _kh_key_ABI STREQUAL KH_ABI_VERSION_MAJOR)
    message(FATAL_ERROR "kh: variant key '${key}' names abi${_kh_key_ABI}, "
                        "but kh/kernel_abi.h is ABI major ${KH_ABI_VERSION_MAJOR}")
  endif()
  set(KH_VARIANT_BACKEND "${_kh_key_BACKEND}" PARENT_SCOPE)
  set(KH_VARIANT_ARCH "${_kh_key_ARCH}" PARENT_SCOPE)
  set(KH_VARIANT_DEVICE_TYPE "${_kh_key_DEVICE_TYPE}" PARENT_SCOPE)
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
        message(FATAL_ERROR "kh: ${json}: no string \"name\" (<org>/<name>): ${err}")
      endif()
    endif()
    if(NOT version)
      string(JSON version ERROR_VARIABLE err GET "${text}" version)
      if(err)
        message(FATAL_ERROR "kh: ${json}: no string \"version\" (a semantic version, e.g. 0.1.0): ${err}")
      endif()
    endif()
  endif()
  if(NOT name MATCHES "^[a-z0-9._-]+/[a-z0-9._-]+$")
    message(FATAL_ERROR "kh: library ${target}: package name '${name}' is not <org>/<name> "
                        "in [a-z0-9._-] (set it in kernel.json or PACKAGE_NAME)")
  endif()
  if(NOT version MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+([-+][0-9A-Za-z.+-]+)?$")
    message(FATAL_ERROR "kh: library ${target}: version '${version}' of ${json} is not a semantic version "
                        "(major.minor.patch, e.g. 0.1.0)")
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
    if(NOT DEFINED KH_PLATFORM_MARCH_${KH_VARIANT_ARCH})
      message(FATAL_ERROR "kh: library ${target}: CPU arch '${KH_VARIANT_ARCH}' of '${variant}' "
                          "cannot be built on ${CMAKE_SYSTEM_PROCESSOR}")
    endif()
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:${KH_PLATFORM_MARCH_${KH_VARIANT_ARCH}}>)
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
  kh_make_reproducible(${target})
endfunction()

# Reproducible builds: the same sources and toolchain give the same library bytes in any
# folder, at any time, for any user (docs/authoring.md, "Reproducible builds").
#   - Folders are mapped to fixed names wherever the compilers record a path (__FILE__, debug
#     info): the kit's root to "kh", the project's source and build folders to "src" and
#     "build"; kh_add_kernel_package adds the package folder ("<package folder name>"). The
#     last matching map wins, so the more specific ones come later.
#   - nvcc compiles each .cu through a temporary file named after its process id
#     (tmpxft_<pid>_...cudafe1.cpp), which the host compiler records as a STT_FILE symbol of
#     the static symbol table; nothing refers to it, so it is removed after the link.
#   - nvcc names an anonymous namespace after a hash of its source file's absolute path
#     (_GLOBAL__N__<hash>_...), in the host stubs and the device code alike; each .cu is
#     given a path made of the library's name and its place in the source list instead.
#   - HIP sources get a stable compilation-unit id (kh_add_hip_sources).
function(kh_file_prefix_map target from to)
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:C,CXX>:-ffile-prefix-map=${from}=${to}>")
  # nvcc's host pass gets the map too, except under a compiler launcher (ccache): ccache knows
  # to hash only the new path of a host compiler's -ffile-prefix-map, not of one inside
  # -Xcompiler, so every CUDA unit would miss the cache in each new checkout (a CI clone). The
  # author's `kernels build` runs no launcher; kh's own CUDA host code records no path (no
  # __FILE__, no assert in release code), so its builds are the same bytes either way.
  if(NOT CMAKE_CUDA_COMPILER_LAUNCHER)
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-ffile-prefix-map=${from}=${to}>")
  endif()
  set_property(TARGET ${target} APPEND PROPERTY KH_FILE_PREFIX_MAPS "-ffile-prefix-map=${from}=${to}")
endfunction()

function(kh_make_reproducible target)
  kh_file_prefix_map(${target} "${KH_AUTHOR_KIT_DIR}" kh)
  kh_file_prefix_map(${target} "${CMAKE_SOURCE_DIR}" src)
  kh_file_prefix_map(${target} "${CMAKE_BINARY_DIR}" build)
  get_target_property(variant ${target} KH_VARIANT_KEY)
  get_target_property(sources ${target} SOURCES)
  set(index 0)
  foreach(src IN LISTS sources)
    if(src MATCHES "\\.cu$")
      get_filename_component(name "${src}" NAME)
      set_property(SOURCE "${src}" TARGET_DIRECTORY ${target} APPEND PROPERTY COMPILE_OPTIONS
                   "-Xcudafe=--orig_src_path_name,${target}/${index}/${name}")
    endif()
    math(EXPR index "${index} + 1")
  endforeach()
  if(variant MATCHES "^cuda")
    if(NOT CMAKE_OBJCOPY)
      message(FATAL_ERROR "kh: library ${target}: objcopy (binutils) is needed to make CUDA builds "
                          "reproducible: apt-get install binutils")
    endif()
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND "${CMAKE_OBJCOPY}" --wildcard "--strip-symbol=tmpxft_*" "$<TARGET_FILE:${target}>"
      VERBATIM)
  endif()
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

macro(kh_setup_kernel_target kh_build_target)
  kh_host_cpu_name(_kh_cpu)
  kh_matrix_read("${KH_AUTHOR_KIT_DIR}/build-matrix/matrix.json")
  if("${kh_build_target}" IN_LIST KH_MATRIX_KEYS)
    set(_kh_arch "${KH_MATRIX_ARCH_${kh_build_target}}")
    set(_kh_backend "${KH_MATRIX_BACKEND_${kh_build_target}}")
  elseif("${kh_build_target}" STREQUAL "cpu-${_kh_cpu}")
    # The host's baseline CPU build (what kh's own build makes for its tests), on CPUs the
    # matrix does not publish for (aarch64).
    set(_kh_arch "${_kh_cpu}")
    set(_kh_backend cpu)
  else()
    string(REPLACE ";" ", " _kh_known "${KH_MATRIX_KEYS}")
    message(FATAL_ERROR "KH_BUILD_TARGET=${kh_build_target}: unknown target; the targets are ${_kh_known} "
                        "(`kernels targets` lists them with what each needs)")
  endif()
  if(_kh_backend STREQUAL "cpu")
    set(KH_BACKEND cpu)
    set(KH_VARIANT_KEY "cpu-${_kh_arch}-abi${KH_ABI_VERSION_MAJOR}-${_kh_cpu}-linux")
  elseif(_kh_backend STREQUAL "cuda")
    if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
      find_program(_kh_nvcc nvcc PATHS /usr/local/cuda/bin NO_CACHE)
      if(NOT _kh_nvcc)
        message(FATAL_ERROR "KH_BUILD_TARGET=${kh_build_target}: nvcc not found (PATH, CUDACXX, /usr/local/cuda/bin); "
                            "install the CUDA toolkit or pass -DCMAKE_CUDA_COMPILER=<path to nvcc>")
      endif()
      set(CMAKE_CUDA_COMPILER "${_kh_nvcc}")
    endif()
    # CMake 3.25 checks CMAKE_CUDA_ARCHITECTURES when it enables CUDA and knows no 'f' archs;
    # set after, the list reaches nvcc as written (--generate-code=arch=compute_100f,code=[sm_100f]).
    set(CMAKE_CUDA_ARCHITECTURES OFF)
    enable_language(CUDA)
    # The device code the key requires (platform vocabulary): SASS sm_80 + PTX compute_80,
    # SASS sm_90a, SASS sm_100f + PTX compute_100, ...
    set(CMAKE_CUDA_ARCHITECTURES "${KH_PLATFORM_CUDA_ARCHITECTURES_${_kh_arch}}")
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
    set(KH_VARIANT_KEY "cuda${_kh_cuda_mm}-${_kh_arch}-abi${KH_ABI_VERSION_MAJOR}-${_kh_cpu}-linux")
  elseif(_kh_backend STREQUAL "rocm")
    if(NOT _kh_arch STREQUAL "gfx942")
      message(FATAL_ERROR "KH_BUILD_TARGET=${kh_build_target}: this kh builds ROCm code for gfx942 only, "
                          "not ${_kh_arch}")
    endif()
    # The helper sets up clang-19 + lld-19 for -x hip --offload-arch=gfx942, the HIP runtime
    # shim the libraries link instead of libamdhip64, and KH_ROCM_VERSION (major.minor of the
    # HIP headers compiled against).
    include("${KH_AUTHOR_KIT_DIR}/cmake/KhHipGfx942.cmake")
    set(KH_BACKEND hip)
    set(KH_VARIANT_KEY "rocm${KH_ROCM_VERSION}-${_kh_arch}-abi${KH_ABI_VERSION_MAJOR}-${_kh_cpu}-linux")
  endif()
  kh_parse_variant_key("${KH_VARIANT_KEY}")
  kh_write_build_info("${kh_build_target}")
endmacro()

# <build>/kh-build-info.json: the target, its variant key and the compilers that build it,
# which `kernels build` records as the builder in the package's provenance.
function(kh_write_build_info build_target)
  set(tools "\"c++\": \"${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}\"")
  if(KH_BACKEND STREQUAL "cuda")
    string(APPEND tools ", \"cuda\": \"${CMAKE_CUDA_COMPILER_ID} ${CMAKE_CUDA_COMPILER_VERSION}\"")
  elseif(KH_BACKEND STREQUAL "hip")
    execute_process(COMMAND "${KH_HIP_COMPILER}" --version OUTPUT_VARIABLE hip_cc ERROR_QUIET)
    string(REGEX MATCH "version [0-9][0-9.]*" hip_cc "${hip_cc}")
    string(REPLACE "version " "" hip_cc "${hip_cc}")
    get_filename_component(hip_cc_name "${KH_HIP_COMPILER}" NAME)
    string(APPEND tools ", \"hip\": \"${hip_cc_name} ${hip_cc}, HIP ${KH_ROCM_VERSION}\"")
  endif()
  file(WRITE "${CMAKE_BINARY_DIR}/kh-build-info.json"
       "{\"target\": \"${build_target}\", \"variant\": \"${KH_VARIANT_KEY}\", \"tools\": {${tools}}}\n")
endfunction()
