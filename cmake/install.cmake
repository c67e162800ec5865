# Install + export: `find_package(kh)` gives kh::kh; pkg-config gives `kh`.
include(CMakePackageConfigHelpers)

set_target_properties(kh_abi PROPERTIES EXPORT_NAME abi)
install(TARGETS kh kh_abi EXPORT khTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS kernels RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES abi/include/kh/status.h abi/include/kh/kernel_abi.h abi/include/kh/kh.h abi/include/kh/kh.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kh)

set(KH_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kh)
install(EXPORT khTargets NAMESPACE kh:: DESTINATION ${KH_CMAKE_DIR})
set(KH_AUTHOR_KIT_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/kh/author)
configure_package_config_file(cmake/khConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/khConfig.cmake
  INSTALL_DESTINATION ${KH_CMAKE_DIR} PATH_VARS KH_AUTHOR_KIT_INSTALL_DIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/khConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/khConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/khConfigVersion.cmake
  DESTINATION ${KH_CMAKE_DIR})

# DLPack's include folder for pkg-config users, unless it is a default one.
set(KH_DLPACK_PC_CFLAGS "")
if(NOT KH_DLPACK_INCLUDE_DIR STREQUAL "/usr/include" AND NOT KH_DLPACK_INCLUDE_DIR STREQUAL "/usr/local/include")
  set(KH_DLPACK_PC_CFLAGS "-I${KH_DLPACK_INCLUDE_DIR}")
endif()
configure_file(cmake/kh.pc.in ${CMAKE_CURRENT_BINARY_DIR}/kh.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kh.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The author kit (find_package(kh COMPONENTS author); cmake/KhAuthor.cmake): what kernel
# package builds use, installed under share/kh/author/ with the relative paths it has in this
# tree, so its modules work the same from either place. kh's own kernels-src/ builds through
# these same files; tests/author builds packages against the installed copy alone.
foreach(module KhAuthor KhKernelLibrary KhKernelPackage KhKernelManifest KhMatrix KhPlatform KhVariantKey KhHipGfx942)
  install(FILES cmake/${module}.cmake DESTINATION ${KH_AUTHOR_KIT_INSTALL_DIR}/cmake)
endforeach()
install(PROGRAMS cmake/retry-on-compiler-crash.sh DESTINATION ${KH_AUTHOR_KIT_INSTALL_DIR}/cmake)
install(FILES cmake/package/CMakeLists.txt DESTINATION ${KH_AUTHOR_KIT_INSTALL_DIR}/cmake/package)
install(FILES build-matrix/matrix.json build-matrix/kernel.vers DESTINATION ${KH_AUTHOR_KIT_INSTALL_DIR}/build-matrix)
install(FILES abi/include/kh/status.h abi/include/kh/kernel_abi.h DESTINATION ${KH_AUTHOR_KIT_INSTALL_DIR}/abi/include/kh)
install(DIRECTORY kernels-src/common/include/kh_kernel DESTINATION ${KH_AUTHOR_KIT_INSTALL_DIR}/kernels-src/common/include)
install(DIRECTORY kernels-src/common/src/hip_shim DESTINATION ${KH_AUTHOR_KIT_INSTALL_DIR}/kernels-src/common/src)
install(FILES platform/include/kh/platform/offload_bundle.hpp platform/include/kh/platform/rocm_runtime.hpp
              platform/include/kh/platform/versions.hpp
        DESTINATION ${KH_AUTHOR_KIT_INSTALL_DIR}/platform/include/kh/platform)
install(FILES platform/src/offload_bundle.cpp DESTINATION ${KH_AUTHOR_KIT_INSTALL_DIR}/platform/src)
# `kernels init`'s package template (its scripts keep their executable bit).
install(DIRECTORY build-matrix/author/template/ DESTINATION ${KH_AUTHOR_KIT_INSTALL_DIR}/build-matrix/author/template
        USE_SOURCE_PERMISSIONS)
# `kernels` finds the kit at <its folder>/../share/kh/author; in the build tree that is the
# source tree itself (the same layout), so the build tree's `kernels targets` works too.
file(MAKE_DIRECTORY "${PROJECT_BINARY_DIR}/${CMAKE_INSTALL_DATADIR}/kh")
file(CREATE_LINK "${PROJECT_SOURCE_DIR}" "${PROJECT_BINARY_DIR}/${CMAKE_INSTALL_DATADIR}/kh/author" SYMBOLIC)
