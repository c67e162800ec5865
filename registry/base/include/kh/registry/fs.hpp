// Small filesystem operations with the crash-safety the cache and hubs need.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kh/registry/deadline.hpp"
#include "kh/status.h"

namespace kh::registry {

// Writes bytes to path through "<path>.tmp-<pid>-<random>", fsync, rename. Creates
// parent directories. Throws StatusError(KH_ERROR_IO) naming the path and errno text.
void write_file_atomic(const std::string& path, std::string_view bytes);
// Reads a whole file, refusing more than max_bytes (KH_ERROR_IO).
std::string read_file(const std::string& path, uint64_t max_bytes);
// Reads an open descriptor to its end and closes it (whatever happens); more than max_bytes is
// the error `too_large`. `what` names the source in errors ("'path'", "hub URL: 'file'").
std::string read_descriptor(int fd, const std::string& what, uint64_t max_bytes, kh_status too_large);

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

// One open descriptor, closed when it goes out of scope (-1: none), so that a function that
// throws between open() and close() leaks nothing and needs no try/catch of its own.
struct OwnedFd {
  int fd = -1;
  OwnedFd() = default;
  explicit OwnedFd(int fd_to_own) : fd(fd_to_own) {}
  ~OwnedFd();
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
};

// One read() of at most cap bytes into buf, retried when a signal interrupts it: the bytes
// read, 0 at the end. Any other error throws StatusError(KH_ERROR_IO) "<failure>: <errno text>".
size_t read_some(int fd, char* buf, size_t cap, const std::string& failure);

// Open file descriptors closed together when the set ends (the outputs of a batch of
// downloads, whatever the batch throws).
struct DescriptorSet {
  std::vector<int> fds;
  DescriptorSet() = default;
  ~DescriptorSet();
  DescriptorSet(const DescriptorSet&) = delete;
  DescriptorSet& operator=(const DescriptorSet&) = delete;
};

// How long a FileLock waits by default for another process to release its lock.
inline constexpr double kDefaultLockTimeoutSeconds = 30;
// A holder that is still running or waiting on an event (state R or S in /proc) is waited
// for up to this many times the timeout: it may be downloading a large blob for everyone.
inline constexpr int kLiveHolderFactor = 10;

// How a FileLock waits: the settings' KH_LOCK_TIMEOUT and KH_PROGRESS, handed down by
// whoever owns the locks (the cache, a file hub's publisher).
struct LockPolicy {
  double timeout_s = kDefaultLockTimeoutSeconds;  // 0 or more, fractions allowed
  bool announce_wait = true;                      // a line on stderr after 1 s of waiting
  // The operation's deadline: no wait goes past it (KH_ERROR_TIMEOUT naming the holder).
  Deadline deadline;
};

class FileLock {
 public:
  explicit FileLock(const std::string& lock_path, const LockPolicy& policy = {});
  FileLock(const std::string& lock_path, double timeout_s);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace kh::registry
