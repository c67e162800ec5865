// copy_verified (declared in hub.hpp): pull a blob from a reader into a VerifiedSink.
// Included by hub.hpp only.
#pragma once

#include <vector>

#include "kh/registry/status_error.hpp"
#include "kh/registry/verified_sink.hpp"

namespace kh::registry {

template <typename Reader>
void copy_verified(Reader&& read, int out_fd, const std::string& expected_sha256, uint64_t expected_size,
                   const std::string& what) {
  VerifiedSink sink(out_fd, expected_sha256, expected_size, what);
  std::vector<char> buf(1 << 16);
  for (;;) {
    const size_t n = read(buf.data(), buf.size());
    if (n == 0) break;
    if (n > buf.size()) fail(KH_ERROR_INTERNAL, what + ": the reader returned more bytes than asked for");
    sink.write(buf.data(), n);
  }
  sink.finish();
}

}  // namespace kh::registry
