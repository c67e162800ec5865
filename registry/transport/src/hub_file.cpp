// file:// hubs (a hub tree on a local or mounted filesystem) and open_hub(), which picks
// the Hub implementation for a URL.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "kh/registry/fs.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"
#include "internal.hpp"

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
    std::string out;
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::close(fd);
        detail::fail_errno("hub " + url_ + ": cannot read '" + relative_path + "'", err);
      }
      if (n == 0) break;
      if (out.size() + static_cast<uint64_t>(n) > max_bytes) {
        ::close(fd);
        fail(KH_ERROR_BAD_METADATA, "hub " + url_ + ": '" + relative_path + "' is larger than the " +
                                        std::to_string(max_bytes) + " bytes allowed for it");
      }
      out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
  }

  void fetch_blob(const std::string& sha256, uint64_t expected_size, int out_fd) override {
    if (!is_sha256_hex(sha256)) fail(KH_ERROR_INVALID_ARGUMENT, "hub " + url_ + ": '" + sha256 + "' is not a sha256 digest");
    std::string rel = blob_path(sha256);
    int fd = open_or_not_found(root_ + "/" + rel, rel);
    std::string what = "blob sha256:" + sha256 + " from " + url_;
    try {
      copy_verified(
          [&](char* buf, size_t cap) -> size_t {
            for (;;) {
              ssize_t n = ::read(fd, buf, cap);
              if (n >= 0) return static_cast<size_t>(n);
              if (errno != EINTR) detail::fail_errno(what + ": cannot read", errno);
            }
          },
          out_fd, sha256, expected_size, what);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
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

void Hub::rewind_for_restart(const BlobRequest& b) {
  const off_t end = ::lseek(b.out_fd, 0, SEEK_CUR);
  const off_t start = end - static_cast<off_t>(b.resume_from);
  if (end < 0 || start < 0 || ::ftruncate(b.out_fd, start) != 0 || ::lseek(b.out_fd, start, SEEK_SET) != start)
    detail::fail_errno("cannot rewind the partial download of sha256:" + b.sha256, errno);
}

std::unique_ptr<Hub> open_hub(const std::string& url) {
  constexpr std::string_view kFile = "file://";
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0)
    return open_http_hub(url, http_options_from_environment(url));
  if (url.compare(0, kFile.size(), kFile) != 0) {
    const size_t colon = url.find("://");
    const std::string scheme = colon == std::string::npos ? "" : url.substr(0, colon);
    fail(KH_ERROR_INVALID_ARGUMENT,
         "hub URL '" + url + "': " + (scheme.empty() ? "no scheme" : "kh cannot read " + scheme + ":// hubs") +
             "; kh reads file:///absolute/path, http://host/path and https://host/path hubs" +
             (colon == std::string::npos && !url.empty() && url[0] == '/' ? " (did you mean file://" + url + "?)" : ""));
  }
  std::string path = url.substr(kFile.size());
  if (path.rfind("localhost/", 0) == 0) path = path.substr(9);
  if (path.empty() || path[0] != '/')
    fail(KH_ERROR_INVALID_ARGUMENT, "hub URL '" + url + "': a file:// URL needs an absolute path, e.g. file:///srv/hub");
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return std::make_unique<FileHub>(path);
}

}  // namespace kh::registry
