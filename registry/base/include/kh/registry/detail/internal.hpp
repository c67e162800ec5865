// Helpers shared by the registry's own sources; not part of the public interface.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kh::registry::detail {

// "what: strerror(errno)" as a KH_ERROR_IO StatusError.
[[noreturn]] void fail_errno(const std::string& what, int err);

// One entry of a directory walk, relative to the walked root, '/'-separated.
struct TreeEntry {
  enum class Type { File, Directory, Other };
  std::string path;
  Type type = Type::Other;
  mode_t mode = 0;
  uint64_t size = 0;
};
// Every entry under dir (not dir itself), depth first, sorted by path; never follows
// symlinks (they come back as Type::Other). Throws StatusError(KH_ERROR_IO).
std::vector<TreeEntry> list_tree(const std::string& dir);

// The names in one directory (no "." or ".."), sorted. Throws StatusError(KH_ERROR_IO).
std::vector<std::string> list_names(const std::string& dir);

// True when `path` is a relative, '/'-separated name free of empty, "." and ".."
// components, backslashes and NUL: safe to join under a directory.
bool is_safe_relative_path(std::string_view path);

// A random lowercase hex string of 2*bytes characters, for unique temp names.
std::string random_hex(size_t bytes);

// The directory part of a path ("." when there is none) and the last component.
std::string parent_path(const std::string& path);
std::string base_name(const std::string& path);

// Writes all of `size` bytes, retrying on EINTR; throws KH_ERROR_IO naming `what`.
void write_all(int fd, const void* data, size_t size, const std::string& what);
// Copies `from` to `to` (a new file, O_EXCL), with the given mode, synced.
void copy_file(const std::string& from, const std::string& to, mode_t mode);
// fsync on a directory, so that a rename inside it survives a crash.
void fsync_directory(const std::string& dir);

// Work files in the cache's tmp/ name their process ("<sha>.blob-<pid>-...",
// "<sha>.pkg-<pid>-..."): one whose process is gone and that has not changed for a minute
// is an orphan (a kill -9), removed by sweep_orphans (each install) and by cache gc.
bool is_orphaned_work(const std::string& tmp_dir, const std::string& name);
void sweep_orphans(const std::string& tmp_dir);

}  // namespace kh::registry::detail

namespace kh::registry {
#ifdef KH_TEST_HOOKS
// Crash injection for tests: _exit(86) when $KH_TEST_CRASH_AT equals `point`.
void test_hook(const char* point);
// A pause for race tests: sleeps $KH_TEST_PAUSE_MS (default 1000) when $KH_TEST_PAUSE_AT
// equals `point`, widening a window two processes race through. (Test builds only: these
// variables are not settings.)
void test_pause(const char* point);
#define KH_TEST_HOOK(point) ::kh::registry::test_hook(point)
#define KH_TEST_PAUSE(point) ::kh::registry::test_pause(point)
#else
#define KH_TEST_HOOK(point) ((void)0)
#define KH_TEST_PAUSE(point) ((void)0)
#endif
}  // namespace kh::registry
