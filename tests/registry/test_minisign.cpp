// minisign keys and signatures: round trips, every tampering, malformed files, the legacy
// form, and interop both ways with the stock `minisign` tool (skipped when absent).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "kh/registry/minisign.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "test_util.hpp"
#include "../../registry/trust/src/crypto.hpp"

using namespace kh::registry;
using kh_test::expect_status;
using kh_test::TempDir;

namespace {

std::string hex(const uint8_t* p, size_t n) {
  static const char k[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += k[p[i] >> 4];
    s += k[p[i] & 15];
  }
  return s;
}

// Replaces line `n` (0-based) of a signature text.
std::string with_line(const std::string& text, size_t n, const std::string& line) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  lines.at(n) = line;
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string line_of(const std::string& text, size_t n) {
  size_t start = 0;
  for (size_t i = 0; i < n; ++i) start = text.find('\n', start) + 1;
  return text.substr(start, text.find('\n', start) - start);
}

bool have_minisign() { return std::system("command -v minisign >/dev/null 2>&1") == 0; }

int run(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

}  // namespace

TEST_CASE("BLAKE2b: RFC 7693's vector and agreement with OpenSSL's BLAKE2B-512") {
  uint8_t out[64];
  crypto::blake2b(out, 64, "abc");
  CHECK(hex(out, 64) ==
        "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923");
  // Lengths around the 128-byte block boundary, where the final-block logic matters.
  for (size_t n : {0u, 1u, 127u, 128u, 129u, 255u, 256u, 257u, 1000u}) {
    CAPTURE(n);
    std::string msg(n, '\0');
    for (size_t i = 0; i < n; ++i) msg[i] = static_cast<char>(i * 7 + 3);
    crypto::blake2b(out, 64, msg);
    crypto::Blake2b512 ref = crypto::blake2b_512(msg);
    CHECK(hex(out, 64) == hex(ref.data(), 64));
  }
  // BLAKE2b-256 is its own function, not a truncation (RFC 7693 appendix-style check).
  uint8_t short_out[32];
  crypto::blake2b(short_out, 32, "");
  CHECK(hex(short_out, 32) == "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");
}

TEST_CASE("base64 is strict and canonical") {
  std::string out;
  CHECK(minisign::base64_decode("", &out));
  CHECK(minisign::base64_decode("aGVsbG8=", &out));
  CHECK(out == "hello");
  CHECK(minisign::base64_encode("hello") == "aGVsbG8=");
  CHECK_FALSE(minisign::base64_decode("aGVsbG8", &out));    // length
  CHECK_FALSE(minisign::base64_decode("aGVsbG9=", &out));   // non-zero padding bits
  CHECK_FALSE(minisign::base64_decode("aGV*bG8=", &out));   // alphabet
  CHECK_FALSE(minisign::base64_decode("aG=sbG8=", &out));   // '=' inside
  CHECK_FALSE(minisign::base64_decode("aGVsbG8=\n", &out));
}

TEST_CASE("signatures: round trip and every tampering") {
  const minisign::SecretKey key = minisign::generate_key();
  const minisign::PublicKey pk = key.public_key();
  const std::string msg = "the exact bytes of an index";
  const std::string text = minisign::sign(key, msg, "timestamp:1\tfile:index.json\thashed");
  const minisign::Signature sig = minisign::parse_signature(text, "index.json.minisig");
  CHECK(sig.key_id_hex() == pk.key_id_hex());
  CHECK(sig.trusted_comment == "timestamp:1\tfile:index.json\thashed");
  minisign::verify(pk, sig, msg, "index.json.minisig");

  SUBCASE("public and secret key files round trip") {
    CHECK(minisign::parse_public_key(pk.file_text(), "kh.pub") == pk);
    CHECK(minisign::parse_public_key(pk.base64(), "-P") == pk);
    minisign::SecretKey again = minisign::parse_secret_key(key.file_text(), "kh.key");
    CHECK(again.seed == key.seed);
    CHECK(again.public_key() == pk);
    CHECK(pk.key_id_hex().size() == 16);
  }
  SUBCASE("tampered message") {
    std::string m = expect_status([&] { minisign::verify(pk, sig, msg + " ", "index.json.minisig"); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("index.json.minisig") != std::string::npos);
    CHECK(m.find("does not match the signed bytes") != std::string::npos);
  }
  SUBCASE("tampered trusted comment") {
    std::string t = with_line(text, 2, "trusted comment: timestamp:2\tfile:index.json\thashed");
    auto forged = minisign::parse_signature(t, "index.json.minisig");
    std::string m = expect_status([&] { minisign::verify(pk, forged, msg, "index.json.minisig"); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("trusted comment") != std::string::npos);
  }
  SUBCASE("tampered signature bytes") {
    minisign::Signature bad = sig;
    bad.signature[5] ^= 1;
    expect_status([&] { minisign::verify(pk, bad, msg, "s"); }, KH_ERROR_SIGNATURE);
  }
  SUBCASE("wrong key (same id forged onto another key)") {
    minisign::PublicKey other = minisign::generate_key().public_key();
    other.key_id = pk.key_id;
    std::string m = expect_status([&] { minisign::verify(other, sig, msg, "s"); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("does not match") != std::string::npos);
  }
  SUBCASE("key id mismatch") {
    minisign::PublicKey other = minisign::generate_key().public_key();
    std::string m = expect_status([&] { minisign::verify(other, sig, msg, "index.json.minisig"); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("signed by key " + pk.key_id_hex()) != std::string::npos);
    CHECK(m.find(other.key_id_hex()) != std::string::npos);
  }
  SUBCASE("the untrusted comment is not covered, and changing it changes nothing") {
    std::string t = with_line(text, 0, "untrusted comment: anything at all");
    minisign::verify(pk, minisign::parse_signature(t, "s"), msg, "s");
  }
  SUBCASE("CRLF line ends and a missing final newline are accepted") {
    std::string crlf;
    for (char c : text) {
      if (c == '\n') crlf += '\r';
      crlf += c;
    }
    minisign::verify(pk, minisign::parse_signature(crlf, "s"), msg, "s");
    minisign::verify(pk, minisign::parse_signature(text.substr(0, text.size() - 1), "s"), msg, "s");
  }
}

TEST_CASE("the legacy un-hashed 'Ed' signature form is refused") {
  const minisign::SecretKey key = minisign::generate_key();
  std::string text = minisign::sign(key, "m", "c");
  std::string raw;
  REQUIRE(minisign::base64_decode(line_of(text, 1), &raw));
  raw[1] = 'd';  // "ED" -> "Ed"
  std::string legacy = with_line(text, 1, minisign::base64_encode(raw));
  std::string m = expect_status([&] { minisign::parse_signature(legacy, "old.minisig"); }, KH_ERROR_SIGNATURE);
  CHECK(m.find("old.minisig") != std::string::npos);
  CHECK(m.find("legacy") != std::string::npos);
}

TEST_CASE("malformed signature and key files: each a clear KH_ERROR_SIGNATURE naming the file") {
  const minisign::SecretKey key = minisign::generate_key();
  const std::string text = minisign::sign(key, "m", "c");
  struct Case {
    const char* name;
    std::string text;
    const char* needle;
  };
  std::string raw;
  REQUIRE(minisign::base64_decode(line_of(text, 1), &raw));
  const Case cases[] = {
      {"empty", "", "expected 4 lines"},
      {"three lines", text.substr(0, text.rfind('\n', text.size() - 2) + 1), "expected 4 lines"},
      {"five lines", text + "extra\n", "expected 4 lines"},
      {"no untrusted prefix", with_line(text, 0, "comment: x"), "untrusted comment: "},
      {"no trusted prefix", with_line(text, 2, "trusted: x"), "trusted comment: "},
      {"bad base64", with_line(text, 1, "RUQ*"), "not valid base64"},
      {"short signature", with_line(text, 1, minisign::base64_encode(raw.substr(0, 40))), "decodes to 40 bytes"},
      {"unknown algorithm", with_line(text, 1, minisign::base64_encode("XX" + raw.substr(2))), "unknown signature algorithm"},
      {"bad global signature", with_line(text, 3, "AAAA"), "decodes to 3 bytes"},
      {"NUL byte", std::string("untrusted comment: a\0b\n", 23) + text.substr(text.find('\n') + 1), "NUL"},
      {"huge", std::string(100000, 'a'), "larger than"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    std::string m = expect_status([&] { minisign::parse_signature(c.text, "repos/x/y/index.json.minisig"); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("repos/x/y/index.json.minisig") != std::string::npos);
    CHECK_MESSAGE(m.find(c.needle) != std::string::npos, m);
  }
  expect_status([] { minisign::parse_public_key("untrusted comment: x\nnot base64!\n", "kh.pub"); }, KH_ERROR_SIGNATURE);
  expect_status([] { minisign::parse_public_key("a\nb\nc\n", "kh.pub"); }, KH_ERROR_SIGNATURE);
  // A signature pasted where a public key belongs: right base64, wrong length.
  expect_status([&] { minisign::parse_public_key(line_of(text, 1), "kh.pub"); }, KH_ERROR_SIGNATURE);
}

TEST_CASE("secret keys: encrypted refused, damage detected, unencrypted minisign form accepted") {
  const minisign::SecretKey key = minisign::generate_key();
  const std::string file = key.file_text();
  std::string raw;
  REQUIRE(minisign::base64_decode(line_of(file, 1), &raw));
  SUBCASE("encrypted") {
    std::string enc = raw;
    enc[2] = 'S';
    enc[3] = 'c';
    std::string m = expect_status(
        [&] { minisign::parse_secret_key(with_line(file, 1, minisign::base64_encode(enc)), "sk"); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("encrypted") != std::string::npos);
  }
  SUBCASE("damaged seed") {
    std::string bad = raw;
    bad[2 + 2 + 2 + 32 + 8 + 8 + 8 + 3] ^= 1;
    std::string m = expect_status(
        [&] { minisign::parse_secret_key(with_line(file, 1, minisign::base64_encode(bad)), "sk"); }, KH_ERROR_SIGNATURE);
    CHECK(m.find("damaged") != std::string::npos);
  }
  SUBCASE("a zero checksum (minisign 0.11 -G -W) is accepted") {
    std::string zero = raw;
    std::fill(zero.end() - 32, zero.end(), '\0');
    CHECK(minisign::parse_secret_key(with_line(file, 1, minisign::base64_encode(zero)), "sk").seed == key.seed);
  }
}

TEST_CASE("interop: the stock minisign tool signs, kh verifies") {
  if (!have_minisign()) {
    MESSAGE("minisign is not installed (apt-get install minisign); skipping");
    return;
  }
  TempDir d;
  kh_test::write_text(d / "msg", "bytes signed by minisign\n");
  REQUIRE(run("minisign -G -W -p " + d / "pk" + " -s " + d / "sk") == 0);
  REQUIRE(run("minisign -S -s " + d / "sk" + " -m " + d / "msg" + " -t 'kh interop'") == 0);
  minisign::PublicKey pk = read_public_key_file(d / "pk");
  minisign::Signature sig = minisign::parse_signature(kh_test::read_text(d / "msg.minisig"), d / "msg.minisig");
  CHECK(sig.trusted_comment == "kh interop");
  minisign::verify(pk, sig, kh_test::read_text(d / "msg"), d / "msg.minisig");
  expect_status([&] { minisign::verify(pk, sig, "other bytes", d / "msg.minisig"); }, KH_ERROR_SIGNATURE);
  // kh also reads the secret key minisign made, and signs with it.
  minisign::SecretKey sk = read_secret_key_file(d / "sk");
  CHECK(sk.public_key() == pk);
  // And minisign's legacy form (-l) is refused.
  REQUIRE(run("minisign -S -l -s " + d / "sk" + " -m " + d / "msg" + " -x " + d / "legacy.minisig") == 0);
  expect_status([&] { minisign::parse_signature(kh_test::read_text(d / "legacy.minisig"), "legacy.minisig"); },
                KH_ERROR_SIGNATURE);
}

TEST_CASE("interop: kh signs, the stock minisign tool verifies (and signs with kh's key file)") {
  if (!have_minisign()) {
    MESSAGE("minisign is not installed (apt-get install minisign); skipping");
    return;
  }
  TempDir d;
  const minisign::SecretKey key = minisign::generate_key();
  write_key_pair_files(d.path(), "kh", key, false);
  const std::string msg = "bytes signed by kh\n";
  kh_test::write_text(d / "msg", msg);
  kh_test::write_text(d / "msg.minisig", minisign::sign(key, msg, minisign::default_trusted_comment("msg")));
  CHECK(run("minisign -Vm " + d / "msg" + " -p " + d / "kh.pub") == 0);
  kh_test::write_text(d / "msg", msg + "tampered");
  CHECK(run("minisign -Vm " + d / "msg" + " -p " + d / "kh.pub") != 0);
  // kh's secret key file is an unencrypted minisign secret key.
  kh_test::write_text(d / "msg", msg);
  REQUIRE(run("minisign -S -s " + d / "kh.key" + " -m " + d / "msg" + " -x " + d / "by-minisign.minisig") == 0);
  minisign::verify(key.public_key(), minisign::parse_signature(kh_test::read_text(d / "by-minisign.minisig"), "s"), msg, "s");
}

TEST_CASE("key files: the secret key is private and never silently overwritten") {
  TempDir d;
  const minisign::SecretKey key = minisign::generate_key();
  write_key_pair_files(d.path(), "kh", key, false);
  struct stat st {};
  REQUIRE(::stat((d / "kh.key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  expect_status([&] { write_key_pair_files(d.path(), "kh", key, false); }, KH_ERROR_INVALID_ARGUMENT);
  CHECK(read_secret_key_file(d / "kh.key").public_key() == key.public_key());
  ::chmod((d / "kh.key").c_str(), 0644);
  std::string m = expect_status([&] { read_secret_key_file(d / "kh.key"); }, KH_ERROR_INVALID_ARGUMENT);
  CHECK(m.find("chmod 600") != std::string::npos);
}
