// copy_verified (declared in hub.hpp): stream a blob to a file descriptor while hashing
// it, never writing more than the signed size. Included by hub.hpp only.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry {

#ifdef KH_TEST_HOOKS
void test_hook(const char* point);
#endif

template <typename Reader>
void copy_verified(Reader&& read, int out_fd, const std::string& expected_sha256, uint64_t expected_size,
                   const std::string& what) {
  Sha256 hash;
  std::vector<char> buf(1 << 16);
  uint64_t total = 0;
  for (;;) {
    size_t n = read(buf.data(), buf.size());
    if (n == 0) break;
    if (n > buf.size()) fail(KH_ERROR_INTERNAL, what + ": the reader returned more bytes than asked for");
    if (total + n > expected_size)
      fail(KH_ERROR_VERIFICATION, what + ": more than the " + std::to_string(expected_size) +
                                      " bytes the index names arrived; the hub serves other bytes than it signed: "
                                      "report it to the hub's owner");
    hash.update(buf.data(), n);
    const char* p = buf.data();
    size_t left = n;
    while (left > 0) {
      ssize_t w = ::write(out_fd, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail(KH_ERROR_IO, what + ": cannot write the download: " + std::strerror(errno));
      }
      p += w;
      left -= static_cast<size_t>(w);
    }
    total += n;
#ifdef KH_TEST_HOOKS
    test_hook("mid-download");
#endif
  }
  if (total != expected_size)
    fail(KH_ERROR_VERIFICATION, what + ": got " + std::to_string(total) + " bytes, the index names " +
                                    std::to_string(expected_size) +
                                    "; the blob is truncated or replaced: try again, or report it to the hub's owner");
  std::string got = hash.finish_hex();
  if (got != expected_sha256)
    fail(KH_ERROR_VERIFICATION, what + ": sha256 is " + got + ", the index names " + expected_sha256 +
                                    "; the blob is corrupt or was tampered with: try again, or report it to the "
                                    "hub's owner");
}

}  // namespace kh::registry
