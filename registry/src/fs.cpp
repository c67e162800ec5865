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
#include <random>

#include "kh/registry/status_error.hpp"
#include "internal.hpp"

namespace kh::registry {
namespace detail {

void fail_errno(const std::string& what, int err) { fail(KH_ERROR_IO, what + ": " + std::strerror(err)); }

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

std::string read_file(const std::string& path, uint64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) detail::fail_errno("cannot open '" + path + "'", errno);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      detail::fail_errno("cannot read '" + path + "'", err);
    }
    if (n == 0) break;
    if (out.size() + static_cast<uint64_t>(n) > max_bytes) {
      ::close(fd);
      fail(KH_ERROR_IO, "'" + path + "' is larger than the " + std::to_string(max_bytes) + " bytes allowed for it");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
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

FileLock::FileLock(const std::string& lock_path) {
  make_directories(detail::parent_path(lock_path));
  fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) detail::fail_errno("cannot open lock file '" + lock_path + "'", errno);
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    detail::fail_errno("cannot lock '" + lock_path + "'", err);
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the flock
}

}  // namespace kh::registry
