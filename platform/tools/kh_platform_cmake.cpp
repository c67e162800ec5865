// Prints cmake/KhPlatform.cmake (the platform vocabulary for CMake), or with --check FILE
// exits 1, naming the command that regenerates it, when FILE differs.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kh/platform/cmake_vocabulary.hpp"

int main(int argc, char** argv) {
  const std::string text = kh::platform::cmake_vocabulary();
  if (argc == 3 && std::strcmp(argv[1], "--check") == 0) {
    std::ifstream in(argv[2], std::ios::binary);
    std::ostringstream have;
    have << in.rdbuf();
    if (have.str() == text) return 0;
    std::fprintf(stderr,
                 "%s differs from what platform/ generates: regenerate it with "
                 "`cmake --build <kh build> --target update_platform_cmake` and commit it\n",
                 argv[2]);
    return 1;
  }
  if (argc == 3 && std::strcmp(argv[1], "--write") == 0) {
    std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
    out << text;
    return out.good() ? 0 : 1;
  }
  if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--check FILE | --write FILE]\n", argv[0]);
    return 2;
  }
  std::fputs(text.c_str(), stdout);
  return 0;
}
