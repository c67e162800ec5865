// cmake/KhPlatform.cmake: the platform vocabulary as CMake variables, generated from this
// module (platform/tools/kh_platform_cmake.cpp prints it; the ctest platform_cmake_current
// fails when the checked-in file differs, and the target update_platform_cmake rewrites it).
#pragma once

#include <string>

namespace kh::platform {

std::string cmake_vocabulary();

}  // namespace kh::platform
