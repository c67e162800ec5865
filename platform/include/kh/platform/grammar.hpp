// The variant-key grammar as regular expressions in the subset both std::regex (ECMAScript)
// and CMake's regex engine read alike: ^ $ [] () | ? + * and literal characters. The C++
// parser matches with these; cmake/KhPlatform.cmake carries the same strings to CMake.
#pragma once

namespace kh::platform::grammar {

// The whole key; groups: 1 backend, 2 version, 3 arch, 4 ABI major, 5 cpu, 6 os.
extern const char* const kVariantKey;
// The arch part, per backend.
extern const char* const kCpuArch;
extern const char* const kCudaArch;
extern const char* const kRocmArch;

}  // namespace kh::platform::grammar
