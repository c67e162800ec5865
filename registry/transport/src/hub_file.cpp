// file:// hubs: a hub tree on a local or mounted filesystem, read (FileHub) and written
// (FileHubWriter: files through a temp name and a rename, under the hub's publish lock).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "kh/registry/fs.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/registry/detail/internal.hpp"

namespace kh::registry {
namespace {

class FileHub final : public Hub {
 public:
  explicit FileHub(std::string root) : root_(std::move(root)), url_("file://" + root_) {}
  const std::string& url() const override { return url_; }
  std::string id() const override { return "file-" + sha256_hex(url_).substr(0, 16); }

  std::string fetch_metadata(const std::string& relative_path, uint64_t max_bytes) override {
    if (!detail::is_safe_relative_path(relative_path))
      fail(KH_ERROR_INVALID_ARGUMENT, "hub " + url_ + ": '" + relative_path + "' is not a safe relative path");
    std::string path = root_ + "/" + relative_path;
    int fd = open_or_not_found(path, relative_path);
    return read_descriptor(fd, "hub " + url_ + ": '" + relative_path + "'", max_bytes, KH_ERROR_BAD_METADATA);
  }

  void fetch_blob(const std::string& sha256, uint64_t expected_size, int out_fd) override {
    if (!is_sha256_hex(sha256)) fail(KH_ERROR_INVALID_ARGUMENT, "hub " + url_ + ": '" + sha256 + "' is not a sha256 digest");
    std::string rel = blob_path(sha256);
    OwnedFd fd(open_or_not_found(root_ + "/" + rel, rel));
    std::string what = "blob sha256:" + sha256 + " from " + url_;
    const std::string read_failure = what + ": cannot read";
    copy_verified([&](char* buf, size_t cap) { return read_some(fd.fd, buf, cap, read_failure); }, out_fd, sha256,
                  expected_size, what);
  }

 private:
  // Never blocks in open(): a FIFO (or device) planted in the hub is refused, not waited on.
  int open_or_not_found(const std::string& path, const std::string& rel) const {
    int fd = open_regular_file(path, "hub " + url_ + ": '" + rel + "'");
    if (fd < 0) {
      if (errno == ENOENT || errno == ENOTDIR)
        fail(KH_ERROR_NOT_FOUND, "hub " + url_ + " has no '" + rel + "'; check the hub URL and the repo name");
      detail::fail_errno("hub " + url_ + ": cannot open '" + rel + "'", errno);
    }
    return fd;
  }

  std::string root_;
  std::string url_;
};

}  // namespace


namespace {

// "file:///abs/path" (or "file://localhost/abs/path") -> "/abs/path", without trailing '/'.
std::string file_hub_root(const std::string& url) {
  constexpr std::string_view kFile = "file://";
  std::string path = url.substr(kFile.size());
  if (path.rfind("localhost/", 0) == 0) path = path.substr(9);
  if (path.empty() || path[0] != '/')
    fail(KH_ERROR_INVALID_ARGUMENT, "hub URL '" + url + "': a file:// URL needs an absolute path, e.g. file:///srv/hub");
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Writes go through a temp name and a rename (a reader sees the old file or the new one),
// blobs are checked against their digest on the way in, and publishers take the hub's
// flock (.kh-publish.lock), which every kh on this filesystem honours.
class FileHubWriter final : public HubWriter {
 public:
  FileHubWriter(const std::string& root, const LockPolicy& locks)
      : root_(root), reader_(std::make_unique<FileHub>(root)), locks_(locks) {}
  const std::string& url() const override { return reader_->url(); }
  Hub& reader() override { return *reader_; }
  bool is_local() const override { return true; }

  // A blob already there is kept if it hashes right (else put_blob replaces it).
  bool has_blob(const std::string& sha256, uint64_t size) override {
    const std::string path = root_ + "/" + blob_path(sha256);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != size) return false;
    return sha256_file_hex(path) == sha256;
  }
  void put_blob(const std::string& sha256, uint64_t size, const std::string& archive_path) override {
    (void)size;
    const std::string blob = root_ + "/" + blob_path(sha256);
    make_directories(detail::parent_path(blob));
    const std::string tmp = temp_sibling(blob);
    try {
      detail::copy_file(archive_path, tmp, 0644);
      if (sha256_file_hex(tmp) != sha256)
        fail(KH_ERROR_IO, "publish: '" + archive_path + "' changed while it was being published; publish again");
      if (::rename(tmp.c_str(), blob.c_str()) != 0) detail::fail_errno("cannot rename '" + tmp + "' to '" + blob + "'", errno);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
    detail::fsync_directory(detail::parent_path(blob));
  }
  void put_metadata(const std::string& rel, const std::string& bytes) override {
    write_file_atomic(safe_path(rel), bytes);
  }
  void remove_metadata(const std::string& rel) override {
    const std::string path = safe_path(rel);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) detail::fail_errno("cannot remove '" + path + "'", errno);
  }
  std::unique_ptr<PublishLock> lock_publishers(const std::string& who) override {
    (void)who;  // the holder's pid goes into the lock file; FileLock names it to whoever waits
    make_directories(root_);
    return std::make_unique<Held>(root_ + "/.kh-publish.lock", locks_);
  }

 private:
  struct Held final : PublishLock {
    Held(const std::string& path, const LockPolicy& locks) : lock(path, locks) {}
    void check_held() override {}  // a flock stays ours until we let it go
    FileLock lock;
  };
  std::string safe_path(const std::string& rel) const {
    if (!detail::is_safe_relative_path(rel))
      fail(KH_ERROR_INVALID_ARGUMENT, "hub " + url() + ": '" + rel + "' is not a safe relative path");
    return root_ + "/" + rel;
  }
  std::string root_;
  std::unique_ptr<Hub> reader_;
  LockPolicy locks_;
};

}  // namespace

std::unique_ptr<Hub> open_file_hub(const std::string& url, const HubAccess& access) {
  (void)access;
  return std::make_unique<FileHub>(file_hub_root(url));
}

std::unique_ptr<HubWriter> open_file_hub_writer(const std::string& url, const HubAccess& access) {
  return std::make_unique<FileHubWriter>(file_hub_root(url), access.locks);
}

}  // namespace kh::registry
