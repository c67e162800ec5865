// Local faults that used to hang kh forever (issue 16): a FIFO in a file:// hub or in the
// cache (item 3), and a cache lock held by a stopped process (item 4). Each call under test
// runs in a forked child the test kills after a bound, so a regression fails, never hangs.
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <chrono>
#include <functional>

#include "kh/registry/cache.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::TempDir;

namespace {

struct Outcome {
  bool finished = false;  // false: still running at the bound (killed)
  bool threw = false;
  int status = 0;
  std::string message;
  double seconds = 0;
};

// Runs f in a child process; gives up (kills it) after bound_s.
Outcome in_child(double bound_s, const std::function<void()>& f) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(p[0]);
    std::string out = "ok\n";
    try {
      f();
    } catch (const kh::StatusError& e) {
      out = "threw\n" + std::to_string(e.status()) + "\n" + e.what();
    } catch (const std::exception& e) {
      out = "threw\n-1\n" + std::string(e.what());
    }
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = ::write(p[1], out.data() + off, out.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(p[1]);
  Outcome o;
  std::string got;
  for (;;) {
    const double left = bound_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (left <= 0) break;
    pollfd pfd{p[0], POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(p[0], buf, sizeof buf);
    if (n <= 0) {
      o.finished = true;
      break;
    }
    got.append(buf, static_cast<size_t>(n));
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(p[0]);
  if (!o.finished) ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (o.finished && got.rfind("threw\n", 0) == 0) {
    o.threw = true;
    const size_t nl = got.find('\n', 6);
    o.status = std::atoi(got.substr(6, nl - 6).c_str());
    o.message = got.substr(nl + 1);
  }
  return o;
}

void make_fifo(const std::string& path) {
  make_directories(path.substr(0, path.rfind('/')));
  REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
}

// A child that takes the lock at `path`, says so, and stops itself (SIGSTOP).
pid_t stopped_lock_holder(const std::string& path) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(p[0]);
    try {
      FileLock lock(path, 5);
      (void)!::write(p[1], "L", 1);
      ::raise(SIGSTOP);
    } catch (...) {
    }
    ::_exit(0);
  }
  ::close(p[1]);
  char c = 0;
  REQUIRE(::read(p[0], &c, 1) == 1);
  ::close(p[0]);
  int st = 0;
  REQUIRE(::waitpid(pid, &st, WUNTRACED) == pid);
  REQUIRE(WIFSTOPPED(st));
  return pid;
}

void end(pid_t pid) {
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
}

}  // namespace

TEST_CASE("a FIFO in a file:// hub is refused at once, as the index or as the blob") {
  TempDir d;
  const std::string hub_dir = d / "hub";
  const std::string sha = sha256_hex("some blob");
  make_fifo(hub_dir + "/" + repo_index_path("a/b"));
  make_fifo(hub_dir + "/" + blob_path(sha));
  auto hub = open_hub("file://" + hub_dir);

  Outcome index = in_child(20, [&] { hub->fetch_metadata(repo_index_path("a/b"), 1u << 20); });
  REQUIRE_MESSAGE(index.finished, "reading a FIFO index hung");
  CHECK(index.threw);
  CHECK(index.status == KH_ERROR_IO);
  CHECK_MESSAGE(index.message.find("index.json' is a FIFO (named pipe), not a regular file") != std::string::npos,
                index.message);

  Outcome blob = in_child(20, [&] {
    const std::string out = d / "out.bin";
    int fd = ::open(out.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    hub->fetch_blob(sha, 9, fd);
  });
  REQUIRE_MESSAGE(blob.finished, "reading a FIFO blob hung");
  CHECK(blob.status == KH_ERROR_IO);
  CHECK_MESSAGE(blob.message.find("is a FIFO (named pipe)") != std::string::npos, blob.message);

  // A directory is not a regular file either; a missing file is still "not found".
  make_directories(hub_dir + "/repos/c/d/index.json");
  kh_test::expect_status([&] { hub->fetch_metadata(repo_index_path("c/d"), 1u << 20); }, KH_ERROR_IO);
  kh_test::expect_status([&] { hub->fetch_metadata(repo_index_path("e/f"), 1u << 20); }, KH_ERROR_NOT_FOUND);
}

TEST_CASE("a FIFO in place of cached metadata is refused, not waited on") {
  TempDir d;
  Cache cache(d / "cache");
  make_fifo(d / "cache/hubs/file-0123456789abcdef/repos/a/b/index.json");
  Outcome o = in_child(20, [&] { (void)cache.load_metadata("file-0123456789abcdef", "repos/a/b/index.json"); });
  REQUIRE_MESSAGE(o.finished, "reading a FIFO in the cache hung");
  CHECK(o.status == KH_ERROR_IO);
  CHECK_MESSAGE(o.message.find("FIFO") != std::string::npos, o.message);
}

TEST_CASE("a lock held by a stopped process: the wait is bounded and names the holder") {
  TempDir d;
  const std::string lock = d / "cache/locks/x.lock";
  const pid_t holder = stopped_lock_holder(lock);

  const LockPolicy policy{1.5, false};  // KH_LOCK_TIMEOUT=1.5 KH_PROGRESS=0
  Outcome o = in_child(30, [&] { FileLock again(lock, policy); });
  REQUIRE_MESSAGE(o.finished, "the lock wait was not bounded");
  CHECK(o.threw);
  CHECK(o.status == KH_ERROR_IO);
  CHECK(o.seconds >= 1.4);
  CHECK(o.seconds < 10);
  CHECK_MESSAGE(o.message.find("held by process " + std::to_string(holder)) != std::string::npos, o.message);
  CHECK_MESSAGE(o.message.find("stopped") != std::string::npos, o.message);
  CHECK_MESSAGE(o.message.find("kill -CONT " + std::to_string(holder)) != std::string::npos, o.message);
  CHECK_MESSAGE(o.message.find("KH_LOCK_TIMEOUT") != std::string::npos, o.message);

  SUBCASE("the cache's own waits are bounded too (installing a blob whose lock is held)") {
    Cache cache(d / "cache", policy);
    const std::string sha = sha256_hex("x");
    const pid_t blob_holder = stopped_lock_holder(d / ("cache/locks/" + sha + ".lock"));
    Outcome c = in_child(30, [&] { cache.install_archive(d / "none.tar.zst", sha, "a/b", "1.0.0", "cpu"); });
    end(blob_holder);
    REQUIRE(c.finished);
    CHECK_MESSAGE(c.message.find("held by process " + std::to_string(blob_holder)) != std::string::npos, c.message);
  }

  end(holder);
  // Released with its holder: taken at once.
  Outcome after = in_child(30, [&] { FileLock again(lock, 0); });
  CHECK(after.finished);
  CHECK_MESSAGE(!after.threw, after.message);
}

TEST_CASE("a holder that is running is waited for longer than the timeout, then the lock is taken") {
  TempDir d;
  const std::string lock = d / "busy.lock";
  int p[2];
  REQUIRE(::pipe(p) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(p[0]);
    FileLock held(lock, 5);
    (void)!::write(p[1], "L", 1);
    ::usleep(1200 * 1000);  // busy (sleeping, state S) for 1.2 s, then lets go
    ::_exit(0);
  }
  ::close(p[1]);
  char c = 0;
  REQUIRE(::read(p[0], &c, 1) == 1);
  ::close(p[0]);
  Outcome o = in_child(30, [&] { FileLock again(lock, LockPolicy{0.3, false}); });  // 10 x 0.3 s for a live holder
  end(pid);
  REQUIRE(o.finished);
  CHECK_MESSAGE(!o.threw, o.message);
  CHECK(o.seconds >= 0.5);
}

