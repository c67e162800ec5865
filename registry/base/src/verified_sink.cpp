// VerifiedSink: count, hash and write a blob as it arrives; accept it only whole.
#include "kh/registry/verified_sink.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "kh/registry/status_error.hpp"
#include "kh/registry/detail/internal.hpp"

namespace kh::registry {

VerifiedSink::VerifiedSink(int out_fd, std::string expected_sha256, uint64_t expected_size, std::string what,
                           uint64_t resumed)
    : fd_(out_fd),
      start_(::lseek(out_fd, 0, SEEK_CUR)),
      sha256_(std::move(expected_sha256)),
      size_(expected_size),
      what_(std::move(what)),
      hash_(std::make_unique<Sha256>()) {
  if (resumed == 0) return;
  if (start_ < 0 || static_cast<uint64_t>(start_) < resumed || resumed > size_) {
    restart_from(start_ < 0 ? 0 : start_);  // nothing usable before: start from here
    return;
  }
  start_ -= static_cast<off_t>(resumed);
  std::vector<char> buf(1 << 16);
  for (uint64_t done = 0; done < resumed;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), resumed - done));
    const ssize_t n = ::pread(fd_, buf.data(), want, start_ + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) detail::fail_errno("cannot read the partial download of " + what_, n < 0 ? errno : EIO);
    hash_->update(buf.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
  }
  total_ = resumed;
}

void VerifiedSink::restart_from(off_t start) {
  start_ = start;
  restart();
}

void VerifiedSink::write(const char* data, size_t n) {
  if (n > size_ - total_)
    fail(KH_ERROR_VERIFICATION, what_ + ": more than the " + std::to_string(size_) +
                                    " bytes the index names arrived; the hub serves other bytes than it signed: "
                                    "report it to the hub's owner");
  hash_->update(data, n);
  detail::write_all(fd_, data, n, "the download of " + what_);
  total_ += n;
  KH_TEST_HOOK("mid-download");
}

void VerifiedSink::finish() {
  if (total_ != size_)
    fail(KH_ERROR_VERIFICATION, what_ + ": got " + std::to_string(total_) + " bytes, the index names " +
                                    std::to_string(size_) +
                                    "; the blob is truncated or replaced: try again, or report it to the hub's owner");
  const std::string got = hash_->finish_hex();
  if (got != sha256_)
    fail(KH_ERROR_VERIFICATION, what_ + ": sha256 is " + got + ", the index names " + sha256_ +
                                    "; the blob is corrupt or was tampered with: try again, or report it to the "
                                    "hub's owner");
}

void VerifiedSink::restart() {
  if (start_ < 0) fail(KH_ERROR_IO, what_ + ": the download must start again but its output cannot be rewound");
  if (::ftruncate(fd_, start_) != 0 || ::lseek(fd_, start_, SEEK_SET) != start_)
    detail::fail_errno(what_ + ": cannot rewind the partial download", errno);
  hash_ = std::make_unique<Sha256>();
  total_ = 0;
}

}  // namespace kh::registry
