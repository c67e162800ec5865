// SHA-256: NIST vectors, incremental == one-shot, fd and file hashing.
#include <doctest/doctest.h>

#include <string>

#include "kh/registry/sha256.hpp"
#include "test_util.hpp"

using namespace kh::registry;

TEST_CASE("sha256 matches the NIST vectors") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("incremental hashing equals one-shot hashing") {
  std::string data;
  for (int i = 0; i < 100000; ++i) data += static_cast<char>((i * 131) & 0xff);
  for (size_t chunk : {1u, 7u, 64u, 4096u, 65537u}) {
    CAPTURE(chunk);
    Sha256 h;
    for (size_t off = 0; off < data.size(); off += chunk) h.update(data.data() + off, std::min(chunk, data.size() - off));
    CHECK(h.finish_hex() == sha256_hex(data));
  }
}

TEST_CASE("finish_hex twice is refused") {
  Sha256 h;
  h.finish_hex();
  kh_test::expect_status([&] { h.finish_hex(); }, KH_ERROR_INTERNAL);
}

TEST_CASE("fd and file hashing read from the start to the end") {
  kh_test::TempDir dir;
  std::string path = dir / "f.bin";
  std::string data(200000, 'x');
  data[12345] = 'y';
  kh_test::write_text(path, data);
  CHECK(sha256_file_hex(path) == sha256_hex(data));
  int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  ::lseek(fd, 5000, SEEK_SET);  // hashing rewinds first
  CHECK(sha256_fd_hex(fd) == sha256_hex(data));
  ::close(fd);
  kh_test::expect_status([&] { sha256_file_hex(dir / "missing"); }, KH_ERROR_IO);
}

TEST_CASE("is_sha256_hex accepts exactly 64 lowercase hex digits") {
  std::string good(64, 'a');
  CHECK(is_sha256_hex(good));
  CHECK(is_sha256_hex(sha256_hex("x")));
  CHECK_FALSE(is_sha256_hex(std::string(63, 'a')));
  CHECK_FALSE(is_sha256_hex(std::string(65, 'a')));
  CHECK_FALSE(is_sha256_hex(std::string(64, 'A')));
  CHECK_FALSE(is_sha256_hex(std::string(63, 'a') + "g"));
  CHECK_FALSE(is_sha256_hex(""));
}
