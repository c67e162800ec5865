// The registry token server of the oci:// tests; see token_server.hpp.
#include "token_server.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdlib>
#include <ctime>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "server_util.hpp"

namespace kh_test {
namespace {

std::string base64(const std::string& bytes, bool url) {
  static const char* kStd = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  static const char* kUrl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const char* t = url ? kUrl : kStd;
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8) | uint8_t(bytes[i + 2]);
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    out += {t[v >> 18], t[(v >> 12) & 63]};
    if (!url) out += "==";
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8);
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63]};
    if (!url) out += "=";
  }
  return out;
}

std::string unbase64(const std::string& text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+' ? 62 : c == '/' ? 63 : -1;
    if (v < 0) continue;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

std::string url_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

}  // namespace

TokenServer::TokenServer(const std::string& work_dir, const Config& config) : work_(work_dir), config_(config) {
  const std::string d = shell_quote(work_);
  const std::string cmd = "cd " + d +
                          " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout token.key"
                          " -out token.pem -days 2 -subj /CN=kh-test-token-signer"
                          " && openssl x509 -in token.pem -outform DER -out token.der";
  if (std::system(("(" + cmd + ") > " + d + "/openssl.log 2>&1").c_str()) != 0)
    throw std::runtime_error("openssl could not make the token signing key: " + read_text_file(work_ + "/openssl.log"));
  x5c_ = base64(read_text_file(work_ + "/token.der"), false);
  const std::string pem = read_text_file(work_ + "/token.key");
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  key_ = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (key_ == nullptr) throw std::runtime_error("cannot read the token signing key");
  server_ = std::make_unique<FaultServer>([this](const HttpRequest& r, HttpConnection& c) { answer(r, c); });
}

TokenServer::~TokenServer() {
  server_.reset();  // joins the threads that use the key
  EVP_PKEY_free(static_cast<EVP_PKEY*>(key_));
}

void TokenServer::answer(const HttpRequest& r, HttpConnection& c) {
  if (r.target.rfind("/token", 0) != 0) return (void)c.respond("404 Not Found", "");
  // Who asks: Basic credentials of a known user, or nobody.
  std::string user;
  const std::string auth = r.header("authorization");
  if (!auth.empty()) {
    const std::string pair = auth.rfind("Basic ", 0) == 0 ? unbase64(auth.substr(6)) : "";
    const size_t colon = pair.find(':');
    auto known = colon == std::string::npos ? config_.users.end() : config_.users.find(pair.substr(0, colon));
    if (known == config_.users.end() || known->second != pair.substr(colon + 1))
      return (void)c.respond("401 Unauthorized", R"({"details":"wrong user or password"})");
    user = known->first;
  } else if (!config_.anonymous_pull) {
    return (void)c.respond("401 Unauthorized", R"({"details":"credentials required"})");
  }
  std::vector<std::pair<std::string, std::string>> access;  // (repository, actions)
  const size_t q = r.target.find('?');
  std::string query = q == std::string::npos ? "" : r.target.substr(q + 1);
  for (size_t at = 0; at <= query.size();) {
    const size_t amp = query.find('&', at);
    const std::string kv = query.substr(at, amp == std::string::npos ? std::string::npos : amp - at);
    if (kv.rfind("scope=", 0) == 0) {
      const std::string scope = url_decode(kv.substr(6));  // repository:<name>:<actions>
      const size_t a = scope.find(':'), b = scope.rfind(':');
      if (a != std::string::npos && b != a && scope.substr(0, a) == "repository") {
        std::string actions = scope.substr(b + 1);
        if (user.empty()) actions = actions.find("pull") != std::string::npos ? "pull" : "";
        if (!actions.empty()) access.emplace_back(scope.substr(a + 1, b - a - 1), actions);
      }
    }
    if (amp == std::string::npos) break;
    at = amp + 1;
  }
  c.respond("200 OK", nlohmann::json{{"token", sign(user, access)}, {"expires_in", 300}}.dump(),
            {"Content-Type: application/json"});
}

std::string TokenServer::sign(const std::string& subject,
                              const std::vector<std::pair<std::string, std::string>>& access) const {
  nlohmann::json grants = nlohmann::json::array();
  for (const auto& [name, actions] : access) {
    nlohmann::json list = nlohmann::json::array();
    for (size_t at = 0; at <= actions.size();) {
      const size_t comma = actions.find(',', at);
      list.push_back(actions.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    grants.push_back({{"type", "repository"}, {"name", name}, {"actions", list}});
  }
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  static int serial = 0;
  const nlohmann::json header{{"typ", "JWT"}, {"alg", "ES256"}, {"x5c", {x5c_}}};
  const nlohmann::json claims{{"iss", config_.issuer}, {"sub", subject}, {"aud", config_.service},
                              {"exp", now + 300},      {"nbf", now - 10},  {"iat", now},
                              {"jti", std::to_string(now) + "-" + std::to_string(++serial)},
                              {"access", grants}};
  const std::string input = base64(header.dump(), true) + "." + base64(claims.dump(), true);
  // ES256: ECDSA P-256 over SHA-256, the signature as r || s (32 bytes each), not DER.
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  size_t len = 0;
  std::string der;
  if (EVP_DigestSignInit(md, nullptr, EVP_sha256(), nullptr, static_cast<EVP_PKEY*>(key_)) == 1 &&
      EVP_DigestSign(md, nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1) {
    der.resize(len);
    if (EVP_DigestSign(md, reinterpret_cast<unsigned char*>(der.data()), &len,
                       reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1)
      der.clear();
    der.resize(len);
  }
  EVP_MD_CTX_free(md);
  const unsigned char* p = reinterpret_cast<const unsigned char*>(der.data());
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size()));
  if (sig == nullptr) throw std::runtime_error("token signing failed");
  std::string raw(64, '\0');
  BN_bn2binpad(ECDSA_SIG_get0_r(sig), reinterpret_cast<unsigned char*>(raw.data()), 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(sig), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
  ECDSA_SIG_free(sig);
  return input + "." + base64(raw, true);
}

}  // namespace kh_test
