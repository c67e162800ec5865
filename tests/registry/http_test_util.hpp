// Helpers shared by the http hub tests: random blobs, fast retry options, a blob to
// fetch into a scratch file, and loopback traffic kept away from any proxy.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>

#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "test_util.hpp"

namespace kh_test {

inline std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// Loopback traffic never goes through a proxy the environment may name.
struct NoProxyForLoopback {
  NoProxyForLoopback() {
    ::setenv("no_proxy", "127.0.0.1,127.0.0.2,127.0.0.3,localhost", 1);
    ::setenv("NO_PROXY", "127.0.0.1,127.0.0.2,127.0.0.3,localhost", 1);
  }
};
inline const NoProxyForLoopback no_proxy_for_loopback;

// Fast retries for tests; no progress line.
inline kh::registry::HttpOptions fast_options() {
  kh::registry::HttpOptions o;
  o.backoff_initial_ms = 10;
  o.backoff_max_ms = 50;
  o.max_attempts = 4;
  o.progress = kh::registry::HttpOptions::Progress::Never;
  o.connect_timeout_s = 5;
  o.low_speed_time_s = 5;
  return o;
}

// A blob, the path a hub serves it at, and a file to download it into.
struct Blob {
  std::string bytes, sha;
  TempDir d;
  std::string out = d / "out.bin";
  explicit Blob(size_t n = 300 * 1024, unsigned seed = 7) : bytes(random_bytes(n, seed)), sha(kh::registry::sha256_hex(bytes)) {}
  std::string target(const std::string& prefix = "/hub") const { return prefix + "/" + kh::registry::blob_path(sha); }
  // Fetches through a hub at `hub_url` into `out` (created fresh).
  void fetch(const std::string& hub_url, const kh::registry::HttpOptions& o = fast_options()) const {
    auto hub = kh::registry::open_http_hub(hub_url, o);
    int fd = ::open(out.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    try {
      hub->fetch_blob(sha, bytes.size(), fd);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
  }
  uint64_t out_size() const {
    struct stat st {};
    return ::stat(out.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }
};

// Seconds since t0: how long a request took to fail or finish.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline std::string range_header(size_t from, size_t size) {
  return "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(size - 1) + "/" + std::to_string(size);
}

}  // namespace kh_test
