// Pack -> publish to a file:// hub -> ensure_package into a cache, and every way the hub
// can be wrong: corrupt, truncated or missing blobs, a manifest naming another build.
#include <doctest/doctest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "kh/registry/archive.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/cache_maintenance.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/sha256.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::TempDir;
using json = nlohmann::json;

namespace {

const char* kRepo = "test-org/fake-kernel";
const char* kVariant = "cpu-x86_64-abi1-x86_64-linux";

PackageManifest manifest_for(const std::string& version, const std::string& variant = kVariant) {
  PackageManifest m;
  m.name = kRepo;
  m.version = version;
  m.variant = variant;
  m.abi = "1.0";
  m.ops = {{"fake_op", "fake_op(Tensor(a!) out, Tensor x) -> ()"}};
  return m;
}

// Writes a fake library with the given content and packs it into `dist`.
std::string pack(const TempDir& d, const std::string& dist, const std::string& version, const std::string& content,
                 const std::string& variant = kVariant) {
  make_directories(d / "build");
  std::string lib = d / "build/libkh_fake.so";
  kh_test::write_text(lib, content, 0755);
  return pack_package(lib, manifest_for(version, variant), dist);
}

// Every path under dir (sorted), for "nothing changed" checks; empty when dir is absent.
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> out;
  if (!path_exists(dir)) return out;
  std::vector<std::string> stack{""};
  while (!stack.empty()) {
    std::string rel = stack.back();
    stack.pop_back();
    std::string full = rel.empty() ? dir : dir + "/" + rel;
    DIR* dd = ::opendir(full.c_str());
    REQUIRE(dd != nullptr);
    while (dirent* e = ::readdir(dd)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      std::string r = rel.empty() ? n : rel + "/" + n;
      out.push_back(r);
      struct stat st;
      if (::lstat((dir + "/" + r).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) stack.push_back(r);
    }
    ::closedir(dd);
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Published {
  RepoIndex index;
  const Release* release = nullptr;
  const VariantEntry* variant = nullptr;
};

Published resolve(Hub& hub, const std::string& request) {
  Published p;
  p.index = parse_repo_index(hub.fetch_metadata(repo_index_path(kRepo), 1 << 20), "index");
  p.release = &resolve_release(p.index, parse_version_request(request));
  REQUIRE(!p.release->variants.empty());
  p.variant = &p.release->variants.front();
  return p;
}

void flip_byte(const std::string& path, size_t pos) {
  std::string bytes = kh_test::read_text(path);
  REQUIRE(pos < bytes.size());
  bytes[pos] = static_cast<char>(bytes[pos] ^ 1);
  ::chmod(path.c_str(), 0644);
  kh_test::write_text(path, bytes);
}

// A hub with one published package, and a cache.
struct World {
  TempDir d;
  std::string dist = d / "dist", hub_dir = d / "hub", cache_dir = d / "cache";
  std::string library = std::string("\x7f" "ELF fake library bytes\n") + std::string(5000, 'k');
  std::vector<PublishedVariant> published;
  World() {
    pack(d, dist, "1.0.0", library);
    published = publish_to_file_hub(dist, hub_dir);
  }
  std::string blob_on_hub() const { return hub_dir + "/" + blob_path(published.at(0).sha256); }
};

}  // namespace

TEST_CASE("pack and publish write a hub") {
  World w;
  REQUIRE(w.published.size() == 1);
  const PublishedVariant& pv = w.published[0];
  CHECK(pv.repo == kRepo);
  CHECK(pv.version == "1.0.0");
  CHECK(pv.variant == kVariant);
  CHECK_FALSE(pv.already_present);
  std::string archive = w.dist + "/test-org__fake-kernel-1.0.0-" + kVariant + ".tar.zst";
  REQUIRE(path_exists(archive));
  CHECK(pv.sha256 == sha256_file_hex(archive));
  CHECK(kh_test::read_text(w.blob_on_hub()) == kh_test::read_text(archive));

  json hub = json::parse(kh_test::read_text(w.hub_dir + "/kh-hub.json"));
  CHECK(hub["protocol"] == 1);
  CHECK(hub["name"] == "hub");
  json catalog = json::parse(kh_test::read_text(w.hub_dir + "/catalog.json"));
  REQUIRE(catalog["repos"].size() == 1);
  CHECK(catalog["repos"][0]["repo"] == kRepo);
  CHECK(catalog["repos"][0]["latest"] == "1.0.0");

  RepoIndex idx = parse_repo_index(kh_test::read_text(w.hub_dir + "/" + repo_index_path(kRepo)), "index");
  CHECK(idx.version == 1);
  CHECK(idx.expires_unix > ::time(nullptr) + 364 * 86400);
  REQUIRE(idx.releases.size() == 1);
  const VariantEntry& v = idx.releases[0].variants.at(0);
  CHECK(v.sha256 == pv.sha256);
  CHECK(v.size == pv.size);
  CHECK(v.abi == "1.0");
  CHECK(v.ops.at(0).name == "fake_op");

  PackageManifest m = parse_package_manifest(read_archive_member(archive, kManifestName, 1 << 20), "m");
  CHECK(m.library == "lib/libkh_fake.so");
  REQUIRE(m.files.size() == 1);
  CHECK(m.files[0].path == "lib/libkh_fake.so");
  CHECK(m.files[0].sha256 == sha256_hex(w.library));
  CHECK(m.files[0].size == w.library.size());

  // Packing the same build again gives the same bytes.
  std::string first = kh_test::read_text(archive);
  pack(w.d, w.dist, "1.0.0", w.library);
  CHECK(kh_test::read_text(archive) == first);
}

TEST_CASE("ensure_package installs a verified, read-only, marked tree and reuses it") {
  World w;
  auto hub = open_hub("file://" + w.hub_dir);
  Published p = resolve(*hub, "1");
  Cache cache(w.cache_dir);
  CHECK_FALSE(cache.package_dir(p.variant->sha256).has_value());
  std::string dir = cache.ensure_package(*hub, kRepo, *p.release, *p.variant);
  CHECK(dir == w.cache_dir + "/pkgs/" + p.variant->sha256);
  CHECK(cache.package_dir(p.variant->sha256) == dir);
  CHECK(kh_test::read_text(dir + "/lib/libkh_fake.so") == w.library);
  CHECK(kh_test::read_text(dir + "/" + kCompleteMarker) == p.variant->sha256);
  CHECK(kh_test::read_text(w.cache_dir + "/" + blob_path(p.variant->sha256)) == kh_test::read_text(w.blob_on_hub()));
  for (const char* rel : {"", "/lib", "/lib/libkh_fake.so", "/kh-manifest.json", "/.kh-complete"}) {
    CAPTURE(rel);
    struct stat st;
    REQUIRE(::stat((dir + rel).c_str(), &st) == 0);
    CHECK((st.st_mode & 0222) == 0);
  }
  PackageManifest m = parse_package_manifest(kh_test::read_text(dir + "/kh-manifest.json"), "m");
  verify_tree_against_manifest(dir, m);
  CHECK(listing(w.cache_dir + "/tmp").empty());

  // Second call: reused, not fetched (the hub's blob is gone now).
  ::unlink(w.blob_on_hub().c_str());
  CHECK(cache.ensure_package(*hub, kRepo, *p.release, *p.variant) == dir);

  // A blob in the cache that no longer hashes right is deleted and fetched again.
  remove_tree(dir);
  std::string cached_blob = w.cache_dir + "/" + blob_path(p.variant->sha256);
  flip_byte(cached_blob, 100);
  std::string err = kh_test::expect_status([&] { cache.ensure_package(*hub, kRepo, *p.release, *p.variant); },
                                           KH_ERROR_NOT_FOUND);  // the hub lost it: refetch was attempted
  CHECK_FALSE(path_exists(cached_blob));
  pack(w.d, w.dist, "1.0.0", w.library);
  publish_to_file_hub(w.dist, w.hub_dir);  // restores the blob
  CHECK(cache.ensure_package(*hub, kRepo, *p.release, *p.variant) == dir);
  CHECK(sha256_file_hex(cached_blob) == p.variant->sha256);
}

TEST_CASE("a stale tree without its marker is replaced") {
  World w;
  auto hub = open_hub("file://" + w.hub_dir);
  Published p = resolve(*hub, "latest");
  std::string stale = w.cache_dir + "/pkgs/" + p.variant->sha256;
  make_directories(stale + "/lib");
  kh_test::write_text(stale + "/lib/libkh_fake.so", "half-written");
  Cache cache(w.cache_dir);
  CHECK_FALSE(cache.package_dir(p.variant->sha256).has_value());
  std::string dir = cache.ensure_package(*hub, kRepo, *p.release, *p.variant);
  CHECK(kh_test::read_text(dir + "/lib/libkh_fake.so") == w.library);
  // A marker with the wrong content does not count either.
  ::chmod(dir.c_str(), 0755);
  ::chmod((dir + "/.kh-complete").c_str(), 0644);
  kh_test::write_text(dir + "/.kh-complete", std::string(64, '0'));
  CHECK_FALSE(cache.package_dir(p.variant->sha256).has_value());
}

TEST_CASE("bad blobs on the hub: nothing new outside tmp/") {
  World w;
  auto hub = open_hub("file://" + w.hub_dir);
  Published p = resolve(*hub, "1.0.0");
  Cache cache(w.cache_dir);
  auto check_untouched = [&](kh_status status, const char* needle) {
    std::string msg = kh_test::expect_status([&] { cache.ensure_package(*hub, kRepo, *p.release, *p.variant); }, status);
    CHECK(msg.find(kRepo) != std::string::npos);
    CHECK(msg.find("1.0.0") != std::string::npos);
    CHECK(msg.find(kVariant) != std::string::npos);
    CHECK_MESSAGE(msg.find(needle) != std::string::npos, msg);
    CHECK(listing(w.cache_dir + "/blobs").empty());
    CHECK(listing(w.cache_dir + "/pkgs").empty());
    CHECK(listing(w.cache_dir + "/tmp").empty());
    CHECK_FALSE(cache.package_dir(p.variant->sha256).has_value());
  };
  std::string good = kh_test::read_text(w.blob_on_hub());

  SUBCASE("one flipped byte") {
    flip_byte(w.blob_on_hub(), good.size() / 2);
    check_untouched(KH_ERROR_VERIFICATION, "sha256");
  }
  SUBCASE("truncated") {
    kh_test::write_text(w.blob_on_hub(), good.substr(0, good.size() - 10));
    check_untouched(KH_ERROR_VERIFICATION, "bytes");
  }
  SUBCASE("longer than signed") {
    kh_test::write_text(w.blob_on_hub(), good + "extra");
    check_untouched(KH_ERROR_VERIFICATION, "more than");
  }
  SUBCASE("missing") {
    ::unlink(w.blob_on_hub().c_str());
    check_untouched(KH_ERROR_NOT_FOUND, p.variant->sha256.c_str());
  }
}

TEST_CASE("a manifest naming another build than the index says is refused") {
  World w;
  // An archive whose manifest says "other-variant", listed in the index as kVariant.
  std::string other_dist = w.d / "other-dist";
  std::string archive = pack(w.d, other_dist, "1.0.0", w.library, "other-variant");
  std::string sha = sha256_file_hex(archive);
  RepoIndex idx = parse_repo_index(kh_test::read_text(w.hub_dir + "/" + repo_index_path(kRepo)), "index");
  VariantEntry& v = idx.releases.at(0).variants.at(0);
  v.sha256 = sha;
  v.size = kh_test::read_text(archive).size();
  write_file_atomic(w.hub_dir + "/" + repo_index_path(kRepo), serialize_repo_index(idx));
  write_file_atomic(w.hub_dir + "/" + blob_path(sha), kh_test::read_text(archive));

  auto hub = open_hub("file://" + w.hub_dir);
  Published p = resolve(*hub, "1");
  Cache cache(w.cache_dir);
  std::string msg = kh_test::expect_status([&] { cache.ensure_package(*hub, kRepo, *p.release, *p.variant); },
                                           KH_ERROR_VERIFICATION);
  CHECK(msg.find("other-variant") != std::string::npos);
  CHECK(msg.find(kVariant) != std::string::npos);
  CHECK(listing(w.cache_dir + "/blobs").empty());
  CHECK(listing(w.cache_dir + "/pkgs").empty());

  // install_archive applies the same checks.
  kh_test::expect_status([&] { cache.install_archive(archive, sha, kRepo, "1.0.0", kVariant); }, KH_ERROR_VERIFICATION);
  kh_test::expect_status([&] { cache.install_archive(archive, sha, kRepo, "2.0.0", "other-variant"); },
                         KH_ERROR_VERIFICATION);
  kh_test::expect_status([&] { cache.install_archive(archive, std::string(64, 'e'), kRepo, "1.0.0", "other-variant"); },
                         KH_ERROR_VERIFICATION);
  CHECK(listing(w.cache_dir + "/pkgs").empty());
  std::string dir = cache.install_archive(archive, sha, kRepo, "1.0.0", "other-variant");
  CHECK(kh_test::read_text(dir + "/lib/libkh_fake.so") == w.library);
}

TEST_CASE("republishing: identical bytes are a no-op, other bytes are refused") {
  World w;
  std::string index_path = w.hub_dir + "/" + repo_index_path(kRepo);
  std::string index_before = kh_test::read_text(index_path);

  auto again = publish_to_file_hub(w.dist, w.hub_dir);
  REQUIRE(again.size() == 1);
  CHECK(again[0].already_present);
  CHECK(again[0].sha256 == w.published[0].sha256);
  CHECK(kh_test::read_text(index_path) == index_before);  // version not bumped

  TempDir d2;
  std::string changed = pack(d2, d2 / "dist", "1.0.0", w.library + "different");
  std::string msg = kh_test::expect_status([&] { publish_to_file_hub(d2 / "dist", w.hub_dir); },
                                           KH_ERROR_INVALID_ARGUMENT);
  CHECK(msg.find(w.published[0].sha256) != std::string::npos);
  CHECK(msg.find(sha256_file_hex(changed)) != std::string::npos);
  CHECK(kh_test::read_text(index_path) == index_before);
  CHECK_FALSE(path_exists(w.hub_dir + "/" + blob_path(sha256_file_hex(changed))));

  // A new version: index version grows, catalog follows.
  TempDir d3;
  pack(d3, d3 / "dist", "1.1.0", w.library + "v1.1");
  pack(d3, d3 / "dist", "1.1.0", w.library + "v1.1 gpu", "cuda13.0-sm90a-abi1-x86_64-linux");
  auto res = publish_to_file_hub(d3 / "dist", w.hub_dir);
  CHECK(res.size() == 2);
  RepoIndex idx = parse_repo_index(kh_test::read_text(index_path), "index");
  CHECK(idx.version == 2);
  REQUIRE(idx.releases.size() == 2);
  CHECK(idx.releases[1].variants.size() == 2);
  CHECK(json::parse(kh_test::read_text(w.hub_dir + "/catalog.json"))["repos"][0]["latest"] == "1.1.0");
  for (const Release& r : idx.releases)
    for (const VariantEntry& v : r.variants) CHECK(path_exists(w.hub_dir + "/" + blob_path(v.sha256)));

  // Publishing an empty dist is a mistake worth an error.
  TempDir empty;
  kh_test::expect_status([&] { publish_to_file_hub(empty.path(), w.hub_dir); }, KH_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("list_packages and metadata") {
  World w;
  pack(w.d, w.dist, "0.9.0", w.library + "old");
  pack(w.d, w.dist, "1.0.0", w.library, "cuda13.0-sm80-abi1-x86_64-linux");
  publish_to_file_hub(w.dist, w.hub_dir);
  auto hub = open_hub("file://" + w.hub_dir + "/");
  CHECK(hub->url() == "file://" + w.hub_dir);
  Cache cache(w.cache_dir);
  CHECK(cache.list_packages().empty());
  RepoIndex idx = parse_repo_index(hub->fetch_metadata(repo_index_path(kRepo), 1 << 20), "index");
  for (const Release& r : idx.releases)
    for (const VariantEntry& v : r.variants) cache.ensure_package(*hub, kRepo, r, v);
  auto pkgs = cache.list_packages();
  REQUIRE(pkgs.size() == 3);
  CHECK(pkgs[0].manifest.version == "0.9.0");
  CHECK(pkgs[1].manifest.version == "1.0.0");
  CHECK(pkgs[1].manifest.variant == "cpu-x86_64-abi1-x86_64-linux");
  CHECK(pkgs[2].manifest.variant == "cuda13.0-sm80-abi1-x86_64-linux");
  CHECK(pkgs[0].dir == w.cache_dir + "/pkgs/" + pkgs[0].sha256);
  // An incomplete tree is not listed.
  make_directories(w.cache_dir + "/pkgs/" + std::string(64, '1'));
  CHECK(cache.list_packages().size() == 3);

  CHECK_FALSE(cache.load_metadata(hub->id(), "repos/x/y/index.json").has_value());
  cache.store_metadata(hub->id(), "repos/x/y/index.json", "{\"v\":1}");
  cache.store_metadata(hub->id(), "repos/x/y/index.json", "{\"v\":2}");
  CHECK(cache.load_metadata(hub->id(), "repos/x/y/index.json") == std::string("{\"v\":2}"));
  CHECK(path_exists(w.cache_dir + "/hubs/" + hub->id() + "/repos/x/y/index.json"));
  kh_test::expect_status([&] { cache.store_metadata(hub->id(), "../escape", "x"); }, KH_ERROR_INVALID_ARGUMENT);
  kh_test::expect_status([&] { cache.store_metadata("../x", "a.json", "x"); }, KH_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("open_hub") {
  auto a = open_hub("file:///srv/hub");
  auto b = open_hub("file:///srv/hub/");
  CHECK(a->url() == "file:///srv/hub");
  CHECK(a->id() == b->id());
  CHECK(a->id().rfind("file-", 0) == 0);
  CHECK(a->id().size() == 5 + 16);
  CHECK(a->id() != open_hub("file:///srv/other")->id());
  CHECK(open_hub("https://hub.example.org/")->id().rfind("https-", 0) == 0);  // http(s): test_http_hub*.cpp
  kh_test::expect_status([] { open_hub("https://user:pw@hub.example.org"); }, KH_ERROR_INVALID_ARGUMENT);
  kh_test::expect_status([] { open_hub("ftp://x/y"); }, KH_ERROR_INVALID_ARGUMENT);
  kh_test::expect_status([] { open_hub("file://relative/path"); }, KH_ERROR_INVALID_ARGUMENT);
  kh_test::expect_status([] { open_hub("/srv/hub"); }, KH_ERROR_INVALID_ARGUMENT);

  TempDir d;
  auto h = open_hub("file://" + d.path());
  kh_test::expect_status([&] { h->fetch_metadata("repos/a/b/index.json", 100); }, KH_ERROR_NOT_FOUND);
  kh_test::expect_status([&] { h->fetch_metadata("../etc/passwd", 100); }, KH_ERROR_INVALID_ARGUMENT);
  kh_test::write_text(d / "big.json", std::string(101, ' '));
  kh_test::expect_status([&] { h->fetch_metadata("big.json", 100); }, KH_ERROR_BAD_METADATA);
  CHECK(h->fetch_metadata("big.json", 101).size() == 101);
}


#ifdef KH_TEST_HOOKS
TEST_CASE("a crash at any point leaves nothing that is later trusted") {
  for (const char* point : {"mid-download", "before-blob-rename", "mid-extract", "before-marker"}) {
    CAPTURE(point);
    World w;
    auto hub = open_hub("file://" + w.hub_dir);
    Published p = resolve(*hub, "1");
    Cache cache(w.cache_dir);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::setenv("KH_TEST_CRASH_AT", point, 1);
      try {
        cache.ensure_package(*hub, kRepo, *p.release, *p.variant);
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 86);
    CHECK_FALSE(cache.package_dir(p.variant->sha256).has_value());
    CHECK_FALSE(path_exists(w.cache_dir + "/pkgs/" + p.variant->sha256));
    // The next run recovers: it installs a verified tree, and takes over or removes what
    // the crashed one left in tmp/.
    std::string dir = cache.ensure_package(*hub, kRepo, *p.release, *p.variant);
    CHECK(kh_test::read_text(dir + "/lib/libkh_fake.so") == w.library);
    CHECK(kh_test::names_in(w.cache_dir + "/tmp").empty());
  }
}
#endif

TEST_CASE("a damaged or missing cached library is noticed, listed as damaged, and installed again (issue 16, item 8)") {
  World w;
  auto hub = open_hub("file://" + w.hub_dir);
  Published p = resolve(*hub, "1");
  Cache cache(w.cache_dir);
  const std::string dir = cache.ensure_package(*hub, kRepo, *p.release, *p.variant);
  const std::string lib = dir + "/" + cache.list_packages().at(0).manifest.library;
  REQUIRE(kh_test::read_text(lib) == w.library);
  CHECK(path_exists(dir + "/" + kStampsName));
  // Without the hub's blob, a repair can only come from the cached blob.
  SUBCASE("the library changed in place (one byte)") {
    ::chmod(dir.c_str(), 0755);
    flip_byte(lib, 100);
  }
  SUBCASE("the library deleted") {
    ::chmod(dir.c_str(), 0755);
    REQUIRE(::unlink(lib.c_str()) == 0);
  }
  CHECK_FALSE(cache.package_dir(p.variant->sha256));
  CHECK(cache.list_packages().empty());
  std::vector<CachedPackage> all = cache.list_packages(true);
  REQUIRE(all.size() == 1);
  CHECK(all[0].damaged);
  CHECK_MESSAGE(all[0].problem.find("libkh_fake.so") != std::string::npos, all[0].problem);
  CHECK(cache.package_problem(p.variant->sha256) == all[0].problem);
  // `kernels cache verify` still sees (and reports) the damaged tree.
  std::vector<PackageCheck> checks = verify_cache(cache, false);
  REQUIRE(checks.size() == 1);
  CHECK_FALSE(checks[0].problem.empty());

  // get/load (ensure_package) installs it again, here from the intact cached blob.
  REQUIRE(::unlink(w.blob_on_hub().c_str()) == 0);
  CHECK(cache.ensure_package(*hub, kRepo, *p.release, *p.variant) == dir);
  CHECK(kh_test::read_text(lib) == w.library);
  CHECK(cache.package_dir(p.variant->sha256));
  CHECK_FALSE(cache.list_packages(true).at(0).damaged);
}

TEST_CASE("an intact tree whose files were touched or copied is re-checked once, then cheap again") {
  World w;
  auto hub = open_hub("file://" + w.hub_dir);
  Published p = resolve(*hub, "1");
  Cache cache(w.cache_dir);
  const std::string dir = cache.ensure_package(*hub, kRepo, *p.release, *p.variant);
  const std::string stamps = kh_test::read_text(dir + "/" + kStampsName);
  const std::string lib = dir + "/" + cache.list_packages().at(0).manifest.library;
  // Same bytes, new identity (as a copy of the cache would have).
  ::chmod(dir.c_str(), 0755);
  const std::string copy = dir + "/lib.copy";
  kh_test::write_text(copy, w.library, 0444);
  REQUIRE(::rename(copy.c_str(), lib.c_str()) == 0);
  ::chmod(dir.c_str(), 0555);
  CHECK(cache.package_dir(p.variant->sha256) == dir);  // hashed: intact
  CHECK(kh_test::read_text(dir + "/" + kStampsName) != stamps);  // and recorded again
  CHECK(cache.package_problem(p.variant->sha256).empty());
}
