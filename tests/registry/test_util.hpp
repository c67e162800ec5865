// Helpers for the registry tests: scratch directories and small file operations.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kh/registry/fs.hpp"
#include "kh/registry/status_error.hpp"

namespace kh_test {

// Sets environment variables for a scope, then gives each back the value it had (or unsets
// it), in reverse order, so scopes may nest.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, std::string>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = ::getenv(name);
      saved_.push_back({name, old != nullptr, old != nullptr ? old : ""});
      ::setenv(name, value.c_str(), 1);
    }
  }
  ScopedEnv(const char* name, const std::string& value) : ScopedEnv({{name, value}}) {}
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had)
        ::setenv(it->name.c_str(), it->value.c_str(), 1);
      else
        ::unsetenv(it->name.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  struct Saved {
    std::string name;
    bool had;
    std::string value;
  };
  std::vector<Saved> saved_;
};

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

// The names in a directory, sorted (none when it does not exist): e.g. what a cache's tmp/ holds.
inline std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.push_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
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
