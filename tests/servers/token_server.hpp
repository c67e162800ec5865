// A token server for docker-registry's token auth (the distribution spec's bearer-token
// flow), ours because the registry needs one and Debian ships none: on loopback over
// http, it checks Basic credentials against its users and answers
// GET /token?service=...&scope=repository:<name>:<actions> with {"token": <JWT>}, an ES256
// JWT whose x5c header carries a self-signed certificate the registry trusts
// (rootcertbundle). Anonymous requests get pull access only when allowed; a user gets the
// actions asked for. Every request is recorded.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fault_server.hpp"

namespace kh_test {

class TokenServer {
 public:
  struct Config {
    std::map<std::string, std::string> users{{"publisher", "pa55word"}};
    bool anonymous_pull = true;
    std::string service = "kh-test-registry", issuer = "kh-test-token-server";
  };
  // work_dir: an empty scratch directory (the signing key and certificate, made with the
  // openssl CLI). Throws std::runtime_error when they cannot be made.
  TokenServer(const std::string& work_dir, const Config& config);
  ~TokenServer();
  TokenServer(const TokenServer&) = delete;
  TokenServer& operator=(const TokenServer&) = delete;

  std::string realm() const { return server_->origin() + "/token"; }
  const std::string& service() const { return config_.service; }
  const std::string& issuer() const { return config_.issuer; }
  std::string cert_file() const { return work_ + "/token.pem"; }
  std::vector<HttpRequest> requests() const { return server_->requests(); }

 private:
  void answer(const HttpRequest& r, HttpConnection& c);
  std::string sign(const std::string& subject, const std::vector<std::pair<std::string, std::string>>& access) const;

  std::string work_;
  Config config_;
  std::string x5c_;   // base64 DER of the certificate
  void* key_ = nullptr;  // EVP_PKEY*
  std::unique_ptr<FaultServer> server_;
};

}  // namespace kh_test
