// Package archives: deterministic creation, extraction round trip, and hostile archives
// (built here with libarchive) that extraction must refuse, naming the entry.
#include <doctest/doctest.h>

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <vector>

#include "kh/registry/archive.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/sha256.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::TempDir;

namespace {

struct Spec {
  std::string name;
  mode_t type = AE_IFREG;
  std::string data;
  std::string link;  // symlink target or hard link target
  bool hardlink = false;
};

// Writes a .tar.zst holding exactly `entries`, as a hostile packer could.
void build_archive(const std::string& path, const std::vector<Spec>& entries) {
  archive* a = archive_write_new();
  REQUIRE(archive_write_add_filter_zstd(a) == ARCHIVE_OK);
  REQUIRE(archive_write_set_format_pax_restricted(a) == ARCHIVE_OK);
  REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
  for (const Spec& s : entries) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, s.name.c_str());
    archive_entry_set_filetype(e, s.type);
    archive_entry_set_perm(e, 0644);
    if (s.hardlink) archive_entry_set_hardlink(e, s.link.c_str());
    if (s.type == AE_IFLNK) archive_entry_set_symlink(e, s.link.c_str());
    if (s.type == AE_IFCHR) archive_entry_set_rdev(e, 0x0103);
    archive_entry_set_size(e, s.type == AE_IFREG && !s.hardlink ? static_cast<la_int64_t>(s.data.size()) : 0);
    REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
    if (!s.data.empty() && !s.hardlink) archive_write_data(a, s.data.data(), s.data.size());
    archive_entry_free(e);
  }
  REQUIRE(archive_write_close(a) == ARCHIVE_OK);
  archive_write_free(a);
}

void make_tree(const TempDir& d) {
  make_directories(d / "src/lib");
  make_directories(d / "src/share/empty");
  kh_test::write_text(d / "src/kh-manifest.json", "{\"fake\": true}\n");
  kh_test::write_text(d / "src/lib/libx.so", std::string(100000, '\x7f') + "ELF-ish", 0700);
  kh_test::write_text(d / "src/share/readme.txt", "hello\n", 0600);
}

std::string expect_bad(const std::string& archive, const std::string& dest, const std::string& entry,
                       const ExtractLimits& limits = {}) {
  make_directories(dest);
  std::string msg = kh_test::expect_status([&] { extract_package_archive(archive, dest, limits); }, KH_ERROR_BAD_ARCHIVE);
  CHECK_MESSAGE(msg.find(archive) != std::string::npos, msg);
  if (!entry.empty()) CHECK_MESSAGE(msg.find("entry '" + entry + "'") != std::string::npos, msg);
  return msg;
}

}  // namespace

TEST_CASE("create_package_archive is deterministic") {
  TempDir d;
  make_tree(d);
  create_package_archive(d / "src", d / "a.tar.zst");
  // Touch the tree (mtimes, and modes that normalise to the same value) and pack again.
  ::chmod((d / "src/lib/libx.so").c_str(), 0755);
  ::chmod((d / "src/share/readme.txt").c_str(), 0644);
  struct timespec ts[2] = {{12345, 0}, {12345, 0}};
  ::utimensat(AT_FDCWD, (d / "src/share/readme.txt").c_str(), ts, 0);
  create_package_archive(d / "src", d / "b.tar.zst");
  std::string a = kh_test::read_text(d / "a.tar.zst"), b = kh_test::read_text(d / "b.tar.zst");
  CHECK(a.size() > 0);
  CHECK(sha256_hex(a) == sha256_hex(b));
  CHECK(a.compare(0, 4, "\x28\xb5\x2f\xfd") == 0);  // a zstd frame
  // No temp files are left beside it.
  CHECK_FALSE(path_exists(d / "a.tar.zst.tmp"));
  // The manifest is the first entry, and read_archive_member finds it.
  CHECK(read_archive_member(d / "a.tar.zst", "kh-manifest.json", 1000) == "{\"fake\": true}\n");
  kh_test::expect_status([&] { read_archive_member(d / "a.tar.zst", "kh-manifest.json", 5); }, KH_ERROR_BAD_ARCHIVE);
  kh_test::expect_status([&] { read_archive_member(d / "a.tar.zst", "nope", 1000); }, KH_ERROR_NOT_FOUND);
}

TEST_CASE("extract round trip keeps bytes and normalises modes") {
  TempDir d;
  make_tree(d);
  create_package_archive(d / "src", d / "a.tar.zst");
  make_directories(d / "out");
  extract_package_archive(d / "a.tar.zst", d / "out");
  CHECK(kh_test::read_text(d / "out/lib/libx.so") == kh_test::read_text(d / "src/lib/libx.so"));
  CHECK(kh_test::read_text(d / "out/share/readme.txt") == "hello\n");
  CHECK(kh_test::read_text(d / "out/kh-manifest.json") == "{\"fake\": true}\n");
  struct stat st;
  REQUIRE(::stat((d / "out/lib/libx.so").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);
  REQUIRE(::stat((d / "out/share/readme.txt").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0644);
  REQUIRE(::stat((d / "out/share/empty").c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
}

TEST_CASE("packing refuses a symlink in the tree") {
  TempDir d;
  make_tree(d);
  REQUIRE(::symlink("/etc/passwd", (d / "src/lib/evil").c_str()) == 0);
  kh_test::expect_status([&] { create_package_archive(d / "src", d / "a.tar.zst"); }, KH_ERROR_INVALID_ARGUMENT);
  CHECK_FALSE(path_exists(d / "a.tar.zst"));
}

TEST_CASE("hostile archives are refused, naming the archive and the entry") {
  TempDir d;
  std::string ar = d / "h.tar.zst";
  int n = 0;
  auto dest = [&] { return d / ("out" + std::to_string(n++)); };

  SUBCASE("parent traversal") {
    build_archive(ar, {{"ok.txt", AE_IFREG, "x"}, {"../x", AE_IFREG, "pwned"}});
    expect_bad(ar, dest(), "../x");
    CHECK_FALSE(path_exists(d / "x"));
  }
  SUBCASE("traversal in the middle") {
    build_archive(ar, {{"a/../../x", AE_IFREG, "pwned"}});
    expect_bad(ar, dest(), "a/../../x");
  }
  SUBCASE("dot component") {
    build_archive(ar, {{"./a", AE_IFREG, "x"}});
    expect_bad(ar, dest(), "./a");
  }
  SUBCASE("absolute path") {
    build_archive(ar, {{"/tmp/kh-abs-evil", AE_IFREG, "pwned"}});
    expect_bad(ar, dest(), "/tmp/kh-abs-evil");
    CHECK_FALSE(path_exists("/tmp/kh-abs-evil"));
  }
  SUBCASE("backslash") {
    build_archive(ar, {{"a\\b", AE_IFREG, "x"}});
    expect_bad(ar, dest(), "a\\b");
  }
  SUBCASE("empty component") {
    build_archive(ar, {{"a//b", AE_IFREG, "x"}});
    expect_bad(ar, dest(), "a//b");
  }
  SUBCASE("symlink") {
    build_archive(ar, {{"lib/evil", AE_IFLNK, "", "/etc/passwd"}});
    std::string msg = expect_bad(ar, dest(), "lib/evil");
    CHECK(msg.find("symbolic link") != std::string::npos);
  }
  SUBCASE("hard link") {
    build_archive(ar, {{"a", AE_IFREG, "x"}, {"b", AE_IFREG, "", "a", true}});
    std::string msg = expect_bad(ar, dest(), "b");
    CHECK(msg.find("hard link") != std::string::npos);
  }
  SUBCASE("character device") {
    build_archive(ar, {{"null", AE_IFCHR}});
    CHECK(expect_bad(ar, dest(), "null").find("character device") != std::string::npos);
  }
  SUBCASE("block device") {
    build_archive(ar, {{"sda", AE_IFBLK}});
    CHECK(expect_bad(ar, dest(), "sda").find("block device") != std::string::npos);
  }
  SUBCASE("fifo") {
    build_archive(ar, {{"pipe", AE_IFIFO}});
    CHECK(expect_bad(ar, dest(), "pipe").find("FIFO") != std::string::npos);
  }
  SUBCASE("duplicate name") {
    build_archive(ar, {{"a.txt", AE_IFREG, "one"}, {"a.txt", AE_IFREG, "two"}});
    CHECK(expect_bad(ar, dest(), "a.txt").find("duplicate") != std::string::npos);
  }
  SUBCASE("duplicate directory") {
    build_archive(ar, {{"d/", AE_IFDIR}, {"d/", AE_IFDIR}});
    expect_bad(ar, dest(), "d/");
  }
  SUBCASE("a file where a directory must go") {
    build_archive(ar, {{"a", AE_IFREG, "x"}, {"a/b", AE_IFREG, "y"}});
    expect_bad(ar, dest(), "a/b");
  }
  SUBCASE("too many entries") {
    std::vector<Spec> many;
    for (int i = 0; i < 11; ++i) many.push_back({"f" + std::to_string(i), AE_IFREG, "x"});
    build_archive(ar, many);
    ExtractLimits lim;
    lim.max_entries = 10;
    CHECK(expect_bad(ar, dest(), "f10", lim).find("more than 10 entries") != std::string::npos);
    lim.max_entries = 11;
    std::string ok = dest();
    make_directories(ok);
    extract_package_archive(ar, ok, lim);
    CHECK(path_exists(ok + "/f10"));
  }
  SUBCASE("too many bytes") {
    build_archive(ar, {{"a", AE_IFREG, std::string(600, 'a')}, {"b", AE_IFREG, std::string(600, 'b')}});
    ExtractLimits lim;
    lim.max_total_bytes = 1000;
    CHECK(expect_bad(ar, dest(), "b", lim).find("1000 bytes") != std::string::npos);
  }
  SUBCASE("truncated archive") {
    std::string big;  // incompressible, so half the archive ends inside this file's data
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < (1 << 20); ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      big += static_cast<char>(x);
    }
    build_archive(ar, {{"kh-manifest.json", AE_IFREG, "{}"}, {"lib/libbig.so", AE_IFREG, big}});
    std::string bytes = kh_test::read_text(ar);
    kh_test::write_text(ar, bytes.substr(0, bytes.size() / 2));
    expect_bad(ar, dest(), "lib/libbig.so");
  }
  SUBCASE("not an archive") {
    kh_test::write_text(ar, "this is not zstd");
    expect_bad(ar, dest(), "");
  }
}

TEST_CASE("a flipped byte in the compressed stream is refused") {
  // The tar headers compress well, so a flip inside the stream breaks either the zstd
  // decoding or a header checksum; try several positions, each must fail.
  TempDir d;
  std::vector<Spec> entries;
  for (int i = 0; i < 40; ++i)
    entries.push_back({"dir" + std::to_string(i % 4) + "/file" + std::to_string(i) + ".txt", AE_IFREG,
                       std::string(200 + i, static_cast<char>('a' + i % 26))});
  build_archive(d / "good.tar.zst", entries);
  std::string good = kh_test::read_text(d / "good.tar.zst");
  REQUIRE(good.size() > 64);
  for (size_t pos : {good.size() / 4, good.size() / 2, good.size() * 3 / 4}) {
    CAPTURE(pos);
    std::string bad = good;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x40);
    std::string ar = d / ("bad" + std::to_string(pos) + ".tar.zst");
    kh_test::write_text(ar, bad);
    expect_bad(ar, d / ("out" + std::to_string(pos)), "");
  }
}

namespace {
// A manifest listing lib/libx.so with `content` (and nothing else).
std::string manifest_listing(const std::string& content) {
  PackageManifest m;
  m.name = "test-org/x";
  m.version = "1.0.0";
  m.variant = "cpu-x86_64-abi1-x86_64-linux";
  m.abi = "1.0";
  m.library = "lib/libx.so";
  m.ops = {{"x", "x(Tensor(a!) out) -> ()"}};
  m.files = {{"lib/libx.so", sha256_hex(content), content.size()}};
  return serialize_package_manifest(m);
}
}  // namespace

TEST_CASE("with check_manifest, entries are checked against the manifest while extracting (issue 16, item 11)") {
  TempDir d;
  const std::string lib = "\x7f" "ELF the library";
  const std::string manifest = manifest_listing(lib);
  const std::string ar = d / "a.tar.zst";
  int n = 0;
  auto dest = [&] { return d / ("out" + std::to_string(n++)); };
  ExtractLimits checked;
  checked.check_manifest = true;

  SUBCASE("a package as its manifest says is extracted") {
    build_archive(ar, {{"kh-manifest.json", AE_IFREG, manifest}, {"lib", AE_IFDIR, ""}, {"lib/libx.so", AE_IFREG, lib}});
    const std::string out = dest();
    make_directories(out);
    extract_package_archive(ar, out, checked);
    CHECK(kh_test::read_text(out + "/lib/libx.so") == lib);
  }
  SUBCASE("an unlisted file is refused before any of its bytes is written") {
    // 64 MiB of zeros (a few KB compressed): with the old order it landed in tmp/ whole.
    build_archive(ar, {{"kh-manifest.json", AE_IFREG, manifest},
                       {"lib/libx.so", AE_IFREG, lib},
                       {"zz-big.bin", AE_IFREG, std::string(64u << 20, '\0')}});
    const std::string out = dest();
    CHECK(expect_bad(ar, out, "zz-big.bin", checked).find("not listed in the package's manifest") != std::string::npos);
    CHECK_FALSE(path_exists(out + "/zz-big.bin"));
  }
  SUBCASE("a listed file of another size is refused from its header") {
    build_archive(ar, {{"kh-manifest.json", AE_IFREG, manifest}, {"lib/libx.so", AE_IFREG, lib + "more"}});
    const std::string out = dest();
    CHECK(expect_bad(ar, out, "lib/libx.so", checked).find("bytes the manifest lists") != std::string::npos);
    CHECK_FALSE(path_exists(out + "/lib/libx.so"));
  }
  SUBCASE("a listed file with other bytes of the right size is refused") {
    std::string other = lib;
    other[5] = 'X';
    build_archive(ar, {{"kh-manifest.json", AE_IFREG, manifest}, {"lib/libx.so", AE_IFREG, other}});
    CHECK(expect_bad(ar, dest(), "lib/libx.so", checked).find("the manifest lists") != std::string::npos);
  }
  SUBCASE("the manifest must come first") {
    build_archive(ar, {{"lib/libx.so", AE_IFREG, lib}, {"kh-manifest.json", AE_IFREG, manifest}});
    const std::string out = dest();
    CHECK(expect_bad(ar, out, "lib/libx.so", checked).find("the first entry must be kh-manifest.json") != std::string::npos);
    CHECK_FALSE(path_exists(out + "/lib/libx.so"));
  }
  SUBCASE("a malformed manifest stops the extraction") {
    build_archive(ar, {{"kh-manifest.json", AE_IFREG, "{\"schema\": 1}"}, {"lib/libx.so", AE_IFREG, lib}});
    expect_bad(ar, dest(), "kh-manifest.json", checked);
  }
  SUBCASE("a directory no listed file needs is refused") {
    build_archive(ar, {{"kh-manifest.json", AE_IFREG, manifest}, {"extra", AE_IFDIR, ""}});
    expect_bad(ar, dest(), "extra/", checked);
  }
}
