// Finding the author kit beside the running `kernels`.
#include "kh/author/kit.hpp"

#include <unistd.h>

#include <filesystem>

#include "kh/registry/status_error.hpp"

namespace kh::author {

namespace fs = std::filesystem;

Kit find_kit(const std::string& kh_version, const std::string& kit_dir) {
  Kit kit;
  kit.kh_version = kh_version;
  std::error_code ec;
  if (!kit_dir.empty()) {
    kit.root = kit_dir;
  } else {
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) fail(KH_ERROR_IO, "cannot find this executable's folder (/proc/self/exe): " + ec.message());
    kit.root = (exe.parent_path() / ".." / "share" / "kh" / "author").lexically_normal().string();
  }
  if (!fs::exists(fs::path(kit.root) / "cmake" / "KhAuthor.cmake", ec))
    fail(KH_ERROR_NOT_FOUND, "no kh author kit at " + kit.root + " (it should hold cmake/KhAuthor.cmake): install kh "
                             "with `cmake --install <build> --prefix <prefix>` and run <prefix>/bin/kernels, or set "
                             "KH_AUTHOR_KIT to a kit folder");
  const fs::path canonical_root = fs::canonical(kit.root, ec);
  if (!ec) kit.root = canonical_root.string();
  // The prefix is the installation's (share/kh/author three levels down), wherever the kit
  // was found from; a build tree's kit is its source tree, which has no khConfig.cmake.
  const fs::path exe_prefix = (fs::read_symlink("/proc/self/exe", ec).parent_path() / "..").lexically_normal();
  for (const fs::path& prefix : {fs::path(kit.root) / ".." / ".." / "..", exe_prefix}) {
    for (const char* lib : {"lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"}) {
      const fs::path dir = (prefix / lib / "cmake" / "kh").lexically_normal();
      if (fs::exists(dir / "khConfig.cmake", ec)) {
        kit.prefix = prefix.lexically_normal().string();
        kit.cmake_dir = dir.string();
        return kit;
      }
    }
  }
  kit.prefix = (fs::path(kit.root) / ".." / ".." / "..").lexically_normal().string();
  return kit;
}

}  // namespace kh::author
