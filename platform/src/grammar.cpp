// The variant-key grammar; see grammar.hpp. Changing a string here changes what CMake
// accepts too, once cmake/KhPlatform.cmake is regenerated (the ctest platform_cmake_current
// says when it must be).
#include "kh/platform/grammar.hpp"

namespace kh::platform::grammar {

const char* const kVariantKey = "^(cpu|cuda|rocm)([0-9]+\\.[0-9]+)?-([a-z0-9_]+)-abi([0-9]+)-([a-z0-9_]+)-([a-z0-9]+)$";
// An x86-64 level above the baseline, or a CPU's own name (x86_64, aarch64: equal to the key's cpu).
const char* const kCpuArch = "^(x86_64_v[234]|[a-z][a-z0-9_]*)$";
// sm + 2 or 3 digits (the last is the minor) + an optional arch-specific or family suffix.
const char* const kCudaArch = "^sm[1-9][0-9][0-9]?[af]?$";
// gfx + major (1-2 digits) + minor and stepping (one hex digit each); keys carry no features.
const char* const kRocmArch = "^gfx[1-9][0-9]?[0-9a-f][0-9a-f]$";

}  // namespace kh::platform::grammar
