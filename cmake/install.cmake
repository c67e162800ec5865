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
configure_package_config_file(cmake/khConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/khConfig.cmake
  INSTALL_DESTINATION ${KH_CMAKE_DIR})
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
