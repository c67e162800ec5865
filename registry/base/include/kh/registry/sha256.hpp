// SHA-256 through OpenSSL 3 EVP, incremental and one-shot, as lowercase hex.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kh::registry {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t size);
  std::string finish_hex();  // may be called once

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string sha256_hex(std::string_view bytes);
// Hashes an open file from its start to its end; throws StatusError(KH_ERROR_IO).
std::string sha256_fd_hex(int fd);
std::string sha256_file_hex(const std::string& path);
// Hashes a regular file without following a symlink in its last component (a package tree
// being listed or checked); throws StatusError(KH_ERROR_IO).
std::string sha256_regular_file_hex(const std::string& path);
// True when s is 64 lowercase hex digits.
bool is_sha256_hex(std::string_view s);

}  // namespace kh::registry
