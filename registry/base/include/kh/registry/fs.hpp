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

// Opens a file read-only that must be a regular file, without ever blocking in open():
// O_NONBLOCK (a FIFO or device opens at once), fstat, anything but a regular file
// refused, then O_NONBLOCK cleared. Returns the descriptor (O_CLOEXEC), or -1 with errno
// set when open() failed (ENOENT, EACCES, ...). Throws StatusError(KH_ERROR_IO) naming
// `what` and the file's type (a FIFO, a socket, a directory, ...) for a non-regular file.
// For files a hub or the cache holds: a FIFO planted there must not hang kh.
int open_regular_file(const std::string& path, const std::string& what);
// read_file for such files: refuses non-regular ones the same way (KH_ERROR_IO).
std::string read_regular_file(const std::string& path, uint64_t max_bytes);
void make_directories(const std::string& path);
bool path_exists(const std::string& path);
// Removes a tree, making read-only directories writable first; no error if absent.
void remove_tree(const std::string& path);
// A unique name beside `path` for a temporary file or directory.
std::string temp_sibling(const std::string& path);

// How long a FileLock waits by default for another process to release its lock.
inline constexpr double kDefaultLockTimeoutSeconds = 30;
// A holder that is still running or waiting on an event (state R or S in /proc) is waited
// for up to this many times the timeout: it may be downloading a large blob for everyone.
inline constexpr int kLiveHolderFactor = 10;
// $KH_LOCK_TIMEOUT (seconds, 0 or more, fractions allowed), else 30. Throws
// StatusError(KH_ERROR_INVALID_ARGUMENT) for a value that is not a number.
double lock_timeout_seconds();

// An exclusive advisory lock (flock) on a lock file, held until destruction. Waiting for
// another process is bounded: after 1 s a line on stderr says who holds it (unless
// KH_PROGRESS=0); at the timeout (kLiveHolderFactor times it while the holder is running)
// StatusError(KH_ERROR_IO) names the holder's pid (from /proc/locks, else the pid each
// holder writes into the file), its state (stopped, ...) and what to do. A stopped or
// hung holder can so never wedge every other kh.
class FileLock {
 public:
  // Waits up to lock_timeout_seconds().
  explicit FileLock(const std::string& lock_path);
  FileLock(const std::string& lock_path, double timeout_s);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace kh::registry
