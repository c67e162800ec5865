// A cache on a full disk (issue 39, item 5), on a real 2 MiB filesystem (a tmpfs mounted as
// the cache; mounting needs root: without it the test reports itself skipped, exit 77):
// a 33 MB package is refused before any byte of it is written, naming both numbers; a
// 114 kB one then installs; a 1.3 MB one whose archive fits but whose tree does not fails
// with "No space left on device" and leaves nothing partial; with room, it installs.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "../registry/test_util.hpp"
#include "../servers/server_util.hpp"
#include "../registry/signed_hub.hpp"

namespace {

// A tmpfs of `size` mounted at `dir` for the scope.
class Tmpfs {
 public:
  Tmpfs(const std::string& dir, const std::string& size) : dir_(dir) {
    kh::registry::make_directories(dir);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) error_ = std::strerror(errno);
  }
  ~Tmpfs() {
    if (error_.empty()) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  const std::string& error() const { return error_; }
  void resize(const std::string& size) const {
    REQUIRE(::mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT, ("size=" + size).c_str()) == 0);
  }

 private:
  std::string dir_, error_;
};

// Regular files anywhere below dir.
size_t files_below(const std::string& dir) {
  size_t n = 0;
  for (const std::string& name : kh_test::names_in(dir)) {
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;
    n += S_ISDIR(st.st_mode) ? files_below(path) : 1;
  }
  return n;
}

}  // namespace

TEST_CASE("a 2 MiB cache: refused before writing, a small package installs, a tree that does not fit leaves nothing") {
  kh_test::SignedHub hub;
  const std::string big = hub.publish_bytes(33u << 20, "test-org/big");
  const std::string small = hub.publish_bytes(114u << 10, "test-org/small");
  const std::string medium = hub.publish_bytes(1300u << 10, "test-org/medium");
  const std::string cache = hub.dir + "/cache";
  const Tmpfs fs(cache, "2m");
  REQUIRE_MESSAGE(fs.error().empty(), fs.error());
  auto get = [&](const std::string& repo) {
    return kh_test::run_shell("env KH_PROGRESS=0 KH_TRUSTED_ROOT='" + hub.root_file() + "' '" KH_KERNELS_EXE "' get " +
                              repo + "@1 --hub '" + hub.url() + "' --cache '" + cache + "'");
  };
  auto nothing_of_packages = [&] {
    CHECK(files_below(cache + "/tmp") == 0);
    CHECK(files_below(cache + "/blobs") + files_below(cache + "/pkgs") == 0);
  };

  const kh_test::ShellRun refused = get("test-org/big");
  CAPTURE(refused.output);
  CHECK(refused.exit_code == 1);
  CHECK(refused.output.find("not enough free space to download test-org/big 1.0.0 (sha256:" + big) != std::string::npos);
  CHECK(refused.output.find("bytes (the size the signed index gives) and the filesystem of the cache") != std::string::npos);
  CHECK(refused.output.find("bytes free; nothing was written") != std::string::npos);
  nothing_of_packages();

  const kh_test::ShellRun fits = get("test-org/small");
  CHECK_MESSAGE(fits.exit_code == 0, fits.output);
  CHECK(kh::registry::path_exists(cache + "/pkgs/" + small + "/.kh-complete"));

  const kh_test::ShellRun full = get("test-org/medium");
  CAPTURE(full.output);
  CHECK(full.exit_code == 1);
  CHECK(full.output.find("No space left on device") != std::string::npos);
  CHECK(full.output.find("cannot install test-org/medium@1.0.0") != std::string::npos);
  CHECK(files_below(cache + "/tmp") == 0);
  CHECK_FALSE(kh::registry::path_exists(cache + "/pkgs/" + medium));
  CHECK_FALSE(kh::registry::path_exists(cache + "/" + kh::registry::blob_path(medium)));

  fs.resize("8m");
  const kh_test::ShellRun room = get("test-org/medium");
  CHECK_MESSAGE(room.exit_code == 0, room.output);
  CHECK(kh::registry::path_exists(cache + "/pkgs/" + medium + "/.kh-complete"));
  CHECK(files_below(cache + "/tmp") == 0);
}

int main(int argc, char** argv) {
  // Mounting a filesystem needs root (CAP_SYS_ADMIN): say why the test cannot run, and let
  // ctest report it as skipped (SKIP_RETURN_CODE 77) rather than passed.
  kh_test::TempDir probe;
  const std::string dir = probe.path() + "/mnt";
  {
    const Tmpfs fs(dir, "64k");
    if (!fs.error().empty()) {
      std::printf("SKIP: mounting a tmpfs as a 2 MiB cache needs root (CAP_SYS_ADMIN): mount: %s\n", fs.error().c_str());
      return 77;
    }
  }
  doctest::Context context(argc, argv);
  return context.run();
}
