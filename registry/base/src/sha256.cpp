// SHA-256 through OpenSSL 3 EVP: the only file that includes OpenSSL.
#include "kh/registry/sha256.hpp"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "kh/registry/status_error.hpp"
#include "kh/registry/detail/internal.hpp"

namespace kh::registry {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
  bool finished = false;
  ~State() { EVP_MD_CTX_free(ctx); }
};

namespace {
// Fetched once: OpenSSL 3 looks the algorithm up in its provider tables on every implicit
// fetch (EVP_sha256()), which costs more than hashing a small file.
const EVP_MD* sha256_algorithm() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}
}  // namespace

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  const EVP_MD* md = sha256_algorithm();
  if (state_->ctx == nullptr || md == nullptr || EVP_DigestInit_ex2(state_->ctx, md, nullptr) != 1)
    fail(KH_ERROR_INTERNAL, "sha256: OpenSSL could not set up a SHA-256 context");
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, size_t size) {
  if (state_->finished) fail(KH_ERROR_INTERNAL, "sha256: update() after finish_hex()");
  if (size != 0 && EVP_DigestUpdate(state_->ctx, data, size) != 1)
    fail(KH_ERROR_INTERNAL, "sha256: EVP_DigestUpdate failed");
}

std::string Sha256::finish_hex() {
  if (state_->finished) fail(KH_ERROR_INTERNAL, "sha256: finish_hex() called twice");
  state_->finished = true;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(state_->ctx, digest, &len) != 1 || len != 32)
    fail(KH_ERROR_INTERNAL, "sha256: EVP_DigestFinal_ex failed");
  static const char kHex[] = "0123456789abcdef";
  std::string out(64, '0');
  for (unsigned i = 0; i < 32; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.finish_hex();
}

std::string sha256_fd_hex(int fd) {
  if (lseek(fd, 0, SEEK_SET) < 0) detail::fail_errno("sha256: cannot seek to the start of fd " + std::to_string(fd), errno);
  Sha256 h;
  std::vector<char> buf(1 << 16);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      detail::fail_errno("sha256: cannot read fd " + std::to_string(fd), errno);
    }
    if (n == 0) break;
    h.update(buf.data(), static_cast<size_t>(n));
  }
  return h.finish_hex();
}

namespace {
std::string hash_file(const std::string& path, int flags, const std::string& what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | flags);
  if (fd < 0) detail::fail_errno(what + "cannot open '" + path + "'", errno);
  try {
    std::string out = sha256_fd_hex(fd);
    ::close(fd);
    return out;
  } catch (...) {
    ::close(fd);
    throw;
  }
}
}  // namespace

std::string sha256_file_hex(const std::string& path) { return hash_file(path, 0, "sha256: "); }

std::string sha256_regular_file_hex(const std::string& path) { return hash_file(path, O_NOFOLLOW, ""); }

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace kh::registry
