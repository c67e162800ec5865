// Outside text is escaped before any message quotes it (issue 16, item 12): escape and
// BEL bytes in a server's Location header, names in hub metadata, archive entry names.
#include <doctest/doctest.h>

#include <string>

#include "../servers/fault_server.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/repo_index.hpp"
#include "http_test_util.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::FaultServer;
using kh_test::HttpConnection;
using kh_test::HttpRequest;

namespace {

// No C0 control byte, DEL or C1 control may reach a terminal.
bool has_control(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9f)
      return true;
    if (c >= 0x80 && c <= 0x9f) return true;  // a bare C1 byte (8-bit CSI is 0x9b)
  }
  return false;
}

}  // namespace

TEST_CASE("printable escapes control bytes, C1 controls and invalid UTF-8; keeps the rest") {
  CHECK(printable("plain text: a/b@1.0") == "plain text: a/b@1.0");
  CHECK(printable("\x1b]0;owned\x07") == "\\x1b]0;owned\\x07");
  CHECK(printable("line\r\nnext\ttab\x7f") == "line\\x0d\\x0anext\\x09tab\\x7f");
  CHECK(printable("caf\xc3\xa9 \xe2\x9c\x93") == "caf\xc3\xa9 \xe2\x9c\x93");   // é, ✓
  CHECK(printable("\xc2\x9b" "31m") == "\\u009b31m");                           // C1 CSI
  CHECK(printable("\x9b" "31m \xff \xc0\xaf") == "\\x9b31m \\xff \\xc0\\xaf");  // invalid UTF-8
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");                        // a surrogate
  CHECK(printable(std::string(2000, 'a')).size() == 1024 + 3);
  CHECK(printable(std::string("a\0b", 3)) == "a\\x00b");
}

TEST_CASE("a Location header with escape and BEL bytes is escaped in the error") {
  FaultServer s([](const HttpRequest&, HttpConnection& c) {
    c.send_head("302 Found", {"Location: http://127.0.0.2:9/\x1b]0;owned\x07\x1b[2J", "Content-Length: 0"});
  });
  auto hub = open_http_hub(s.origin() + "/hub", kh_test::fast_options());
  const std::string msg =
      kh_test::expect_status([&] { hub->fetch_metadata("repos/a/b/index.json", 1 << 20); }, KH_ERROR_NETWORK);
  CHECK_MESSAGE(!has_control(msg), printable(msg));
  CHECK_MESSAGE(msg.find("to http://127.0.0.2:9/\\x1b]0;owned\\x07\\x1b[2J") != std::string::npos, printable(msg));
}

TEST_CASE("names in hub metadata are escaped in errors") {
  const std::string index = "{\"schema\":1,\"repo\":\"evil\\u001b[31m/x\\u0007\",\"version\":1,\"expires\":\"2030-01-01T00:00:00Z\","
                            "\"releases\":{}}";
  const std::string msg = kh_test::expect_status([&] { parse_repo_index(index, "index.json"); }, KH_ERROR_BAD_METADATA);
  CHECK_MESSAGE(!has_control(msg), printable(msg));
  CHECK_MESSAGE(msg.find("evil\\x1b[31m/x\\x07") != std::string::npos, printable(msg));
  // A key (a version) with a C1 control (JSON escapes decode to the raw bytes).
  const std::string key = "{\"schema\":1,\"repo\":\"a/b\",\"version\":1,\"expires\":\"2030-01-01T00:00:00Z\","
                          "\"releases\":{\"1.0.0\\u009b\":{}}}";
  const std::string m2 = kh_test::expect_status([&] { parse_repo_index(key, "index.json"); }, KH_ERROR_BAD_METADATA);
  CHECK_MESSAGE(!has_control(m2), printable(m2));
}

TEST_CASE("string fields of hub metadata may not hold control characters at all (tools print them as they are)") {
  const std::string index =
      "{\"schema\":1,\"repo\":\"a/b\",\"version\":1,\"expires\":\"2030-01-01T00:00:00Z\",\"releases\":{\"1.0.0\":{"
      "\"yanked\":false,\"variants\":{\"cpu-x86_64-abi1-x86_64-linux\":{\"sha256\":\"" + std::string(64, 'a') +
      "\",\"size\":1,\"abi\":\"1.0\",\"ops\":[{\"name\":\"op\",\"schema\":\"op() -> ()\\u001b]0;owned\\u0007\"}]}}}}}";
  const std::string msg = kh_test::expect_status([&] { parse_repo_index(index, "index.json"); }, KH_ERROR_BAD_METADATA);
  CHECK_MESSAGE(msg.find("holds a control character") != std::string::npos, printable(msg));
  CHECK_MESSAGE(!has_control(msg), printable(msg));
  CHECK(is_printable_text("op(Tensor(a!) out, Tensor x) -> () caf\xc3\xa9"));
  CHECK_FALSE(is_printable_text("a\tb"));
  CHECK_FALSE(is_printable_text("\xc2\x9b"));
  CHECK_FALSE(is_printable_text("\xff"));
}
