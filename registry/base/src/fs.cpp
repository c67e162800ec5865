// Filesystem operations with the crash-safety the cache and hubs need: atomic writes,
// locks, tree walks and removal of read-only trees.
#include "kh/registry/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string_view>
#include <thread>

#include "kh/registry/status_error.hpp"
#include "kh/registry/detail/internal.hpp"

namespace kh::registry {
namespace detail {

void fail_errno(const std::string& what, int err) {
  // Writing is what fails on a read-only filesystem: say how to get a writable cache.
  const char* hint = err == EROFS    ? "; the cache cannot be written here: set KH_CACHE to a writable directory to "
                                       "download or update anything (what the cache holds can still be loaded)"
                     : err == ENOSPC ? "; the filesystem is full: free some space (`kernels cache gc --drop-archives`), "
                                       "or set KH_CACHE to a larger filesystem"
                                     : "";
  fail(KH_ERROR_IO, what + ": " + std::strerror(err) + hint);
}

std::string random_hex(size_t bytes) {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  uint64_t mix = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ (counter.fetch_add(1) * 0x9e3779b97f4a7c15ull);
  std::mt19937_64 gen(mix);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    unsigned b = static_cast<unsigned>(gen() & 0xff);
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
  }
  return out;
}

std::string parent_path(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_safe_relative_path(std::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  size_t start = 0;
  for (;;) {
    size_t slash = path.find('/', start);
    std::string_view part = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return path.find('\\') == std::string_view::npos && path.find('\0') == std::string_view::npos;
}

void write_all(int fd, const void* data, size_t size, const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno("cannot write " + what, errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

// Copies `from` to `to` (a new file), with the given mode, synced.
void copy_file(const std::string& from, const std::string& to, mode_t mode) {
  OwnedFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.fd < 0) fail_errno("cannot open '" + from + "'", errno);
  OwnedFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (out.fd < 0) fail_errno("cannot create '" + to + "'", errno);
  const std::string read_failure = "cannot read '" + from + "'";
  char buf[1 << 16];
  while (size_t n = read_some(in.fd, buf, sizeof buf, read_failure)) write_all(out.fd, buf, n, "'" + to + "'");
  if (::fchmod(out.fd, mode) != 0 || ::fsync(out.fd) != 0) fail_errno("cannot finish '" + to + "'", errno);
}

void fsync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_errno("cannot open directory '" + dir + "' to sync it", errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) fail_errno("cannot sync directory '" + dir + "'", err);
}

std::vector<std::string> list_names(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) fail_errno("cannot list directory '" + dir + "'", errno);
  std::vector<std::string> names;
  errno = 0;
  while (dirent* ent = ::readdir(d)) {
    std::string name = ent->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) fail_errno("cannot list directory '" + dir + "'", err);
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

void walk(const std::string& root, const std::string& rel, std::vector<TreeEntry>* out) {
  for (const std::string& name : list_names(rel.empty() ? root : root + "/" + rel)) {
    TreeEntry e;
    e.path = rel.empty() ? name : rel + "/" + name;
    struct stat st;
    if (::lstat((root + "/" + e.path).c_str(), &st) != 0) fail_errno("cannot stat '" + root + "/" + e.path + "'", errno);
    e.mode = st.st_mode & 07777;
    if (S_ISREG(st.st_mode)) {
      e.type = TreeEntry::Type::File;
      e.size = static_cast<uint64_t>(st.st_size);
    } else if (S_ISDIR(st.st_mode)) {
      e.type = TreeEntry::Type::Directory;
    }
    out->push_back(e);
    if (e.type == TreeEntry::Type::Directory) walk(root, e.path, out);
  }
}

}  // namespace

std::vector<TreeEntry> list_tree(const std::string& dir) {
  std::vector<TreeEntry> out;
  walk(dir, "", &out);
  std::sort(out.begin(), out.end(), [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
  return out;
}

}  // namespace detail

void write_file_atomic(const std::string& path, std::string_view bytes) {
  std::string dir = detail::parent_path(path);
  make_directories(dir);
  std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + detail::random_hex(8);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) detail::fail_errno("cannot create '" + tmp + "' (to write '" + path + "')", errno);
  try {
    detail::write_all(fd, bytes.data(), bytes.size(), "'" + tmp + "'");
    if (::fsync(fd) != 0) detail::fail_errno("cannot sync '" + tmp + "'", errno);
    if (::close(fd) != 0) {
      fd = -1;
      detail::fail_errno("cannot close '" + tmp + "'", errno);
    }
    fd = -1;
    if (::rename(tmp.c_str(), path.c_str()) != 0) detail::fail_errno("cannot rename '" + tmp + "' to '" + path + "'", errno);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  detail::fsync_directory(dir);
}

namespace {

const char* file_type_name(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

}  // namespace

int open_regular_file(const std::string& path, const std::string& what) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    detail::fail_errno("cannot stat " + what, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(KH_ERROR_IO, what + " is " + file_type_name(st.st_mode) +
                          ", not a regular file; kh reads regular files only (remove or replace it)");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    detail::fail_errno("cannot set up " + what, err);
  }
  return fd;
}

std::string read_regular_file(const std::string& path, uint64_t max_bytes) {
  const int fd = open_regular_file(path, "'" + path + "'");
  if (fd < 0) detail::fail_errno("cannot open '" + path + "'", errno);
  return read_descriptor(fd, "'" + path + "'", max_bytes, KH_ERROR_IO);
}

std::string read_file(const std::string& path, uint64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) detail::fail_errno("cannot open '" + path + "'", errno);
  return read_descriptor(fd, "'" + path + "'", max_bytes, KH_ERROR_IO);
}

size_t read_some(int fd, char* buf, size_t cap, const std::string& failure) {
  for (;;) {
    ssize_t n = ::read(fd, buf, cap);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno != EINTR) detail::fail_errno(failure, errno);
  }
}

std::string read_descriptor(int fd, const std::string& what, uint64_t max_bytes, kh_status too_large) {
  OwnedFd owned(fd);
  const std::string read_failure = "cannot read " + what;
  std::string out;
  char buf[1 << 16];
  while (size_t n = read_some(fd, buf, sizeof buf, read_failure)) {
    if (out.size() + static_cast<uint64_t>(n) > max_bytes)
      fail(too_large, what + " is larger than the " + std::to_string(max_bytes) + " bytes allowed for it");
    out.append(buf, n);
  }
  return out;
}

void make_directories(const std::string& path) {
  if (path.empty()) return;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return;
    fail(KH_ERROR_IO, "cannot create directory '" + path + "': a file of that name is in the way");
  }
  std::string parent = detail::parent_path(path);
  if (parent != path && parent != "." && parent != "/") make_directories(parent);
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) detail::fail_errno("cannot create directory '" + path + "'", errno);
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail(KH_ERROR_IO, "cannot create directory '" + path + "': a file of that name is in the way");
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

void remove_tree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    detail::fail_errno("cannot remove '" + path + "'", errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) detail::fail_errno("cannot remove '" + path + "'", errno);
    return;
  }
  // Cache trees are read-only: make the directory writable so its entries can go.
  if ((st.st_mode & S_IRWXU) != S_IRWXU && ::chmod(path.c_str(), (st.st_mode & 07777) | S_IRWXU) != 0)
    detail::fail_errno("cannot make '" + path + "' writable to remove it", errno);
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) detail::fail_errno("cannot list '" + path + "' to remove it", errno);
  std::vector<std::string> names;
  while (dirent* ent = ::readdir(d)) {
    std::string name = ent->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  for (const std::string& name : names) remove_tree(path + "/" + name);
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT) detail::fail_errno("cannot remove directory '" + path + "'", errno);
}

std::string temp_sibling(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p + ".tmp-" + std::to_string(::getpid()) + "-" + detail::random_hex(8);
}

namespace {

// The pid holding a flock on the file open at fd, from /proc/locks (whose FLOCK lines
// name the device and inode locked); else the pid the holder wrote into the file; else 0.
long lock_holder(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    char id[96];
    std::snprintf(id, sizeof id, ":%lu", static_cast<unsigned long>(st.st_ino));
    std::FILE* f = std::fopen("/proc/locks", "re");
    if (f != nullptr) {
      char line[256];
      long found = 0;
      while (found == 0 && std::fgets(line, sizeof line, f) != nullptr) {
        // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
        char kind[16], mode[16], rw[16], dev_ino[64];
        long pid = 0;
        if (std::sscanf(line, "%*[^:]: %15s %15s %15s %ld %63s", kind, mode, rw, &pid, dev_ino) != 5) continue;
        if (std::strcmp(kind, "FLOCK") != 0) continue;
        const char* last = std::strrchr(dev_ino, ':');
        if (last != nullptr && std::strcmp(last, id) == 0) found = pid;
      }
      std::fclose(f);
      if (found > 0) return found;
    }
  }
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? std::strtol(buf, nullptr, 10) : 0;
}

// A process's name and state letter (R, S, D, T, t, Z, ...) from /proc/<pid>/stat;
// false when it cannot be read.
bool process_status(long pid, std::string* comm, char* state) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "re");
  if (f == nullptr) return false;
  char buf[512] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const std::string stat(buf, n);
  const size_t open = stat.find('('), close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open || close + 2 >= stat.size()) return false;
  *comm = stat.substr(open + 1, close - open - 1);
  for (char& c : *comm)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  *state = stat[close + 2];
  return true;
}

// Running or waiting on an event (the network, a timer): it can still finish and let go.
bool process_is_live(long pid) {
  std::string comm;
  char state = 0;
  return pid > 0 && process_status(pid, &comm, &state) && (state == 'R' || state == 'S');
}

// "process 1234 (kernels, stopped (SIGSTOP))" from /proc, as far as it tells.
std::string describe_process(long pid) {
  std::string out = "process " + std::to_string(pid);
  std::string comm;
  char state = 0;
  if (!process_status(pid, &comm, &state)) return out;
  const char* what = state == 'T' ? ", stopped (SIGSTOP)" : state == 't' ? ", stopped by a debugger"
                     : state == 'D' ? ", blocked in the kernel (a hung disk or NFS?)" : state == 'Z' ? ", a zombie" : "";
  return out + " (" + comm + what + ")";
}

}  // namespace

FileLock::FileLock(const std::string& lock_path, double timeout_s) : FileLock(lock_path, LockPolicy{timeout_s, true}) {}

FileLock::FileLock(const std::string& lock_path, const LockPolicy& policy) {
  const double timeout_s = policy.timeout_s;
  make_directories(detail::parent_path(lock_path));
  fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0 && errno == EACCES)  // another user's cache: the same way out as a read-only one
    fail(KH_ERROR_IO, "cannot open lock file '" + lock_path + "': " + std::strerror(EACCES) +
                          "; you cannot write to this cache: set KH_CACHE to a writable directory to download or "
                          "update anything (what the cache holds can still be loaded)");
  if (fd_ < 0) detail::fail_errno("cannot open lock file '" + lock_path + "'", errno);
  auto give_up = [&](const std::string& message, kh_status status) {
    ::close(fd_);
    fd_ = -1;
    fail(status, message);
  };
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto deadline = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s));
  const Deadline& operation = policy.deadline;
  auto pause = std::chrono::milliseconds(5);
  bool told = false;
  for (;;) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) break;
    const int err = errno;
    if (err == EINTR) continue;
    if (err != EWOULDBLOCK) give_up("cannot lock '" + lock_path + "': " + std::strerror(err), KH_ERROR_IO);
    const auto now = clock::now();
    if (now >= operation.at) {
      const long pid = lock_holder(fd_);
      give_up(operation.describe() + " passed while waiting for the lock '" + lock_path + "', held by " +
                  (pid > 0 ? describe_process(pid) : std::string("another process")) +
                  " (another kh fetching the same package); try again, or raise " + operation.setting,
              KH_ERROR_TIMEOUT);
    }
    if (now >= deadline) {
      const long pid = lock_holder(fd_);
      // A holder that is alive (e.g. downloading a large blob for everyone, bounded by its
      // own transfer deadlines) gets up to kLiveHolderFactor times as long.
      if (now < deadline + (deadline - start) * (kLiveHolderFactor - 1) && process_is_live(pid)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) break;  // let go just now (e.g. as it exited)
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.1f", std::chrono::duration<double>(now - start).count());
      give_up("waited " + std::string(secs) + " s for the lock '" + lock_path + "', held by " +
                  (pid > 0 ? describe_process(pid) : std::string("another process")) +
                  ". Another kh is using this part of the cache and has not finished. If that process is stopped, "
                  "resume it (kill -CONT " + (pid > 0 ? std::to_string(pid) : std::string("<pid>")) +
                  "); if it is hung, end it; then try again. To wait longer, set KH_LOCK_TIMEOUT=<seconds>",
              KH_ERROR_IO);
    }
    if (!told && now - start >= std::chrono::seconds(1) && policy.announce_wait) {
      told = true;
      const long pid = lock_holder(fd_);
      std::fprintf(stderr, "kh: waiting for the lock '%s', held by %s (up to %g s; KH_LOCK_TIMEOUT sets it)\n",
                   lock_path.c_str(), pid > 0 ? describe_process(pid).c_str() : "another process", timeout_s);
    }
    std::this_thread::sleep_for(std::min<clock::duration>(
        pause, std::min(deadline, operation.at) - now + std::chrono::milliseconds(1)));
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
  // Who holds it, for whoever waits next (/proc/locks says it too, where it is mounted).
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    ssize_t ignored = ::pwrite(fd_, me.data(), me.size(), 0);
    (void)ignored;
  }
}

OwnedFd::~OwnedFd() {
  if (fd >= 0) ::close(fd);
}

DescriptorSet::~DescriptorSet() {
  for (int fd : fds) ::close(fd);
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the flock
}

}  // namespace kh::registry
