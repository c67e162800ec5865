// Small filesystem operations with the crash-safety the cache and hubs need.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kh::registry {

// Writes bytes to path through "<path>.tmp-<pid>-<random>", fsync, rename. Creates
// parent directories. Throws StatusError(KH_ERROR_IO) naming the path and errno text.
void write_file_atomic(const std::string& path, std::string_view bytes);
// Reads a whole file, refusing more than max_bytes (KH_ERROR_IO).
std::string read_file(const std::string& path, uint64_t max_bytes);
void make_directories(const std::string& path);
bool path_exists(const std::string& path);
// Removes a tree, making read-only directories writable first; no error if absent.
void remove_tree(const std::string& path);
// A unique name beside `path` for a temporary file or directory.
std::string temp_sibling(const std::string& path);

// An exclusive advisory lock (flock) on a lock file, held until destruction.
class FileLock {
 public:
  explicit FileLock(const std::string& lock_path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace kh::registry
