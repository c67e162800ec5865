// Helpers for the registry tests: scratch directories and small file operations.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "kh/registry/fs.hpp"
#include "kh/registry/status_error.hpp"

namespace kh_test {

// A fresh directory under the build tree, removed (read-only trees too) at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string base = std::string(KH_TEST_BINARY_DIR) + "/test-tmp";
    kh::registry::make_directories(base);
    std::string templ = base + "/regXXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = templ;
  }
  ~TempDir() {
    try {
      kh::registry::remove_tree(path_);
    } catch (...) {
    }
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

inline void write_text(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  ::chmod(path.c_str(), mode);
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs f, expecting a StatusError with `status` whose message holds every `needle`.
template <typename F>
std::string expect_status(F&& f, kh_status status) {
  try {
    f();
  } catch (const kh::StatusError& e) {
    CHECK_MESSAGE(e.status() == status, e.what());
    return e.what();
  }
  FAIL("expected a StatusError with status " << status);
  return "";
}

}  // namespace kh_test
