// libFuzzer target: the archive extraction policy. The input is written to a temp file
// and extracted into a fresh directory with small limits; whatever it holds, nothing may
// land outside that directory and only regular files and directories may appear.
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "kh/registry/archive.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/status_error.hpp"

namespace {

std::string scratch_root() {
  static const std::string root = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/kh-fuzz-archive-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) __builtin_trap();
    return templ;
  }();
  return root;
}

// Every entry under dir must be a regular file or a directory (lstat: no symlinks).
void check_tree(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) __builtin_trap();
    if (S_ISDIR(st.st_mode)) {
      check_tree(path);
    } else if (!S_ISREG(st.st_mode)) {
      __builtin_trap();
    }
  }
  ::closedir(d);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string root = scratch_root();
  const std::string archive = root + "/in.tar.zst";
  const std::string dest = root + "/out";
  kh::registry::remove_tree(dest);
  kh::registry::make_directories(dest);
  kh::registry::write_file_atomic(archive, std::string_view(reinterpret_cast<const char*>(data), size));
  kh::registry::ExtractLimits limits;
  limits.max_entries = 64;
  limits.max_total_bytes = 1 << 20;
  // Both policies: the plain one, and the cache's (manifest first, entries checked
  // against it while they stream).
  for (bool check_manifest : {false, true}) {
    kh::registry::remove_tree(dest);
    kh::registry::make_directories(dest);
    limits.check_manifest = check_manifest;
    try {
      kh::registry::extract_package_archive(archive, dest, limits);
      check_tree(dest);
    } catch (const kh::StatusError&) {
    }
  }
  // Nothing may appear beside dest (an escape through "..", an absolute name or a link).
  DIR* d = ::opendir(root.c_str());
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != ".." && name != "out" && name != "in.tar.zst") __builtin_trap();
  }
  ::closedir(d);
  kh::registry::remove_tree(dest);
  return 0;
}
