// VerifiedSink: the receiving end of a blob download. Bytes are pushed in as they arrive
// (from a file, or from one of several parallel HTTP transfers); each is counted against
// the size the signed index gives, hashed and written to a file descriptor. finish()
// accepts the blob only if the size and the sha256 both match.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kh/registry/sha256.hpp"

namespace kh::registry {

class VerifiedSink {
 public:
  // Writes start at out_fd's current offset. `what` names the blob in messages. resumed > 0:
  // the `resumed` bytes just before that offset are the blob's first bytes, from an earlier
  // interrupted download; they are hashed now and count as received (finish() still checks
  // the whole), and restart() truncates them too.
  VerifiedSink(int out_fd, std::string expected_sha256, uint64_t expected_size, std::string what,
               uint64_t resumed = 0);

  // Hashes and writes n bytes. Throws StatusError(KH_ERROR_VERIFICATION) as soon as more
  // than the expected size has arrived (nothing past the size is written), KH_ERROR_IO
  // when the write fails.
  void write(const char* data, size_t n);
  // Throws StatusError(KH_ERROR_VERIFICATION) unless exactly the expected bytes arrived.
  void finish();
  // Forgets everything written (truncates the file back to where it started) for a
  // download that must start again from byte 0.
  void restart();

  uint64_t received() const { return total_; }
  uint64_t expected_size() const { return size_; }
  const std::string& what() const { return what_; }

 private:
  void restart_from(off_t start);
  int fd_;
  off_t start_;
  std::string sha256_;
  uint64_t size_;
  std::string what_;
  std::unique_ptr<Sha256> hash_;
  uint64_t total_ = 0;
};

}  // namespace kh::registry
