// Interrupted downloads are resumed, not thrown away (issue 16, item 9): a `get` killed
// with SIGKILL mid-download leaves tmp/<sha>.partial; the next one asks only for the rest
// (Range) and verifies the whole; a damaged partial costs one restart from byte 0; work
// files of dead processes are swept.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "../servers/fault_server.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/cache_maintenance.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/repo_index.hpp"
#include "http_test_util.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::FaultServer;
using kh_test::HttpConnection;
using kh_test::HttpRequest;
using kh_test::TempDir;

namespace {

const char* kRepo = "test-org/resume-kernel";

// One published package whose blob is ~600 KB (random, so it does not compress), or `size`.
struct World {
  TempDir d;
  std::string hub_dir = d / "hub";
  RepoIndex index;
  const Release* release = nullptr;
  const VariantEntry* variant = nullptr;
  std::string blob;
  Cache cache{d / "cache"};

  explicit World(size_t size = 600 * 1024) {
    make_directories(d / "build");
    kh_test::write_text(d / "build/libkh_resume.so", kh_test::random_bytes(size, 5), 0755);
    PackageManifest m;
    m.name = kRepo;
    m.version = "1.0.0";
    m.variant = "cpu-x86_64-abi1-x86_64-linux";
    m.abi = "1.0";
    m.ops = {{"fake_op", "fake_op(Tensor(a!) out, Tensor x) -> ()"}};
    pack_package(d / "build/libkh_resume.so", m, d / "dist");
    publish_to_file_hub(d / "dist", hub_dir);
    index = parse_repo_index(kh_test::read_text(hub_dir + "/" + repo_index_path(kRepo)), "index");
    release = &resolve_release(index, parse_version_request("1"));
    variant = &release->variants.front();
    blob = kh_test::read_text(hub_dir + "/" + blob_path(variant->sha256));
  }
  std::string partial() const { return cache.root() + "/tmp/" + variant->sha256 + ".partial"; }
  uint64_t partial_size() const {
    struct stat st {};
    return ::stat(partial().c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }
  void install(const std::string& origin) {
    auto hub = open_http_hub(origin + "/hub", kh_test::fast_options());
    cache.ensure_package(*hub, kRepo, *release, *variant);
  }
};

// Serves the blob: Range as asked (206); a plain GET gets the first `stall_after` bytes,
// then nothing more until the client goes (0: the whole blob).
void serve(const std::string& blob, size_t stall_after, const HttpRequest& r, HttpConnection& c) {
  const std::string range = r.header("range");
  if (range.rfind("bytes=", 0) == 0) {
    const size_t from = std::stoul(range.substr(6));
    c.send_head("206 Partial Content", {"Content-Length: " + std::to_string(blob.size() - from),
                                        kh_test::range_header(from, blob.size())});
    c.send(blob.substr(from));
    return;
  }
  c.send_head("200 OK", {"Content-Length: " + std::to_string(blob.size())});
  if (stall_after == 0) {
    c.send(blob);
    return;
  }
  c.send(blob.substr(0, stall_after));
  c.hold(std::chrono::milliseconds(20000));
}

}  // namespace

TEST_CASE("a get killed mid-download (SIGKILL) is resumed with Range by the next one") {
  World w;
  const size_t half = w.blob.size() / 2;
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) { serve(w.blob, half, r, c); });

  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    try {
      w.install(s.origin());
    } catch (...) {
    }
    ::_exit(0);
  }
  // Once half the blob is on disk, the download is killed as `kill -9` would.
  const auto t0 = std::chrono::steady_clock::now();
  while (w.partial_size() < half && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(child, SIGKILL);
  int st = 0;
  ::waitpid(child, &st, 0);
  REQUIRE(w.partial_size() == half);

  w.install(s.origin());
  const auto requests = s.requests();
  REQUIRE(requests.size() == 2);
  CHECK_FALSE(requests[0].has("range"));
  CHECK(requests[1].header("range") == "bytes=" + std::to_string(half) + "-");  // only the rest was sent again
  CHECK(w.cache.package_dir(w.variant->sha256));
  CHECK_FALSE(path_exists(w.partial()));
  CHECK(kh_test::read_text(w.cache.root() + "/" + blob_path(w.variant->sha256)) == w.blob);
}

TEST_CASE("a damaged partial download costs one restart from byte 0, never a bad install") {
  World w;
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) { serve(w.blob, 0, r, c); });
  std::string bad = w.blob.substr(0, 1000);
  bad[10] = static_cast<char>(bad[10] ^ 1);
  make_directories(w.cache.root() + "/tmp");
  kh_test::write_text(w.partial(), bad);
  w.install(s.origin());
  const auto requests = s.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].header("range") == "bytes=1000-");
  CHECK_FALSE(requests[1].has("range"));
  CHECK(kh_test::read_text(w.cache.root() + "/" + blob_path(w.variant->sha256)) == w.blob);
  CHECK_FALSE(path_exists(w.partial()));
}

TEST_CASE("a failed download keeps a partial worth resuming for the next try; a file hub starts over") {
  World w(4 << 20);
  const size_t third = w.blob.size() / 3;  // over 1 MiB: worth keeping
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    if (r.index == 0) {  // a third, then the connection drops; retries answer 503
      c.send_head("200 OK", {"Content-Length: " + std::to_string(w.blob.size())});
      c.send(w.blob.substr(0, third));
      return;
    }
    c.respond("503 Service Unavailable", "");
  });
  kh_test::expect_status([&] { w.install(s.origin()); }, KH_ERROR_NETWORK);
  CHECK(w.partial_size() == third);
  // A file:// hub has no Range: it starts over, and the result is right.
  auto file_hub = open_hub("file://" + w.hub_dir);
  w.cache.ensure_package(*file_hub, kRepo, *w.release, *w.variant);
  CHECK(kh_test::read_text(w.cache.root() + "/" + blob_path(w.variant->sha256)) == w.blob);
  CHECK_FALSE(path_exists(w.partial()));
}

TEST_CASE("a failed download of less than 1 MiB leaves tmp/ as it was") {
  World w;
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) {
    if (r.index == 0) {  // 100 KB, then the connection drops; retries answer 503
      c.send_head("200 OK", {"Content-Length: " + std::to_string(w.blob.size())});
      c.send(w.blob.substr(0, 100000));
      return;
    }
    c.respond("503 Service Unavailable", "");
  });
  kh_test::expect_status([&] { w.install(s.origin()); }, KH_ERROR_NETWORK);
  CHECK(kh_test::names_in(w.cache.root() + "/tmp").empty());
}

TEST_CASE("a download whose write fails (a full disk) removes its partial, however large, and says why") {
  World w(4 << 20);
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) { serve(w.blob, 0, r, c); });
  // The child's files may not grow past 2 MiB: its write fails there, as on a full disk
  // (EFBIG rather than ENOSPC, through the same path), past the size a network failure keeps.
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit two_mib{2 << 20, 2 << 20};
    ::setrlimit(RLIMIT_FSIZE, &two_mib);
    try {
      w.install(s.origin());
    } catch (const kh::StatusError& e) {
      const std::string msg = e.what();
      ::_exit(e.status() == KH_ERROR_IO && msg.find("cannot write the download of blob sha256:" + w.variant->sha256 +
                                                    " from " + s.origin() + "/hub: File too large") != std::string::npos
                  ? 0 : 2);
    }
    ::_exit(1);
  }
  int st = 0;
  REQUIRE(::waitpid(child, &st, 0) == child);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);  // 1: it went through; 2: another error
  CHECK(kh_test::names_in(w.cache.root() + "/tmp").empty());
}

TEST_CASE("what a killed install of a blob left is taken over or removed by the next get of that blob") {
  World w;
  FaultServer s([&](const HttpRequest& r, HttpConnection& c) { serve(w.blob, 0, r, c); });
  const std::string tmp = w.cache.root() + "/tmp";
  make_directories(tmp);
  // Killed after its download was whole, during the install: the whole download, an
  // extraction folder and (an older kh's) archive copy, just now (no age rule applies).
  kh_test::write_text(w.partial(), w.blob);
  make_directories(tmp + "/" + w.variant->sha256 + ".pkg-999999-0a0b0c/lib");
  kh_test::write_text(tmp + "/" + w.variant->sha256 + ".blob-999999-0a0b0c", w.blob.substr(0, 1000));
  w.install(s.origin());
  CHECK(s.request_count() == 0);  // the whole download was taken over, not fetched again
  CHECK(kh_test::read_text(w.cache.root() + "/" + blob_path(w.variant->sha256)) == w.blob);
  CHECK(kh_test::names_in(tmp).empty());
}

TEST_CASE("work files of dead processes are swept; live ones are kept") {
  World w;
  const std::string tmp = w.cache.root() + "/tmp";
  make_directories(tmp);
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  int st = 0;
  ::waitpid(gone, &st, 0);
  const std::string sha(64, 'a');
  const std::string dead = tmp + "/" + sha + ".blob-" + std::to_string(gone) + "-0a0b0c";
  const std::string dead_dir = tmp + "/" + sha + ".pkg-" + std::to_string(gone) + "-0a0b0c";
  const std::string live = tmp + "/" + sha + ".blob-" + std::to_string(::getppid()) + "-0a0b0c";
  const std::string fresh = tmp + "/" + std::string(64, 'b') + ".blob-" + std::to_string(gone) + "-0a0b0c";
  kh_test::write_text(dead, "x");
  make_directories(dead_dir);
  kh_test::write_text(live, "x");
  kh_test::write_text(fresh, "x");  // dead, but changed just now: may be another namespace's
  const utimbuf old{std::time(nullptr) - 600, std::time(nullptr) - 600};
  for (const std::string& p : {dead, dead_dir, live}) REQUIRE(::utime(p.c_str(), &old) == 0);

  SUBCASE("by the next install") {
    auto file_hub = open_hub("file://" + w.hub_dir);
    w.cache.ensure_package(*file_hub, kRepo, *w.release, *w.variant);
  }
  SUBCASE("by cache gc, whatever its age threshold") { collect_garbage(w.cache, 24 * 3600, false); }
  CHECK_FALSE(path_exists(dead));
  CHECK_FALSE(path_exists(dead_dir));
  CHECK(path_exists(live));
  CHECK(path_exists(fresh));
}
