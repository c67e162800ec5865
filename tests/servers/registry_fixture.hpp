// Debian's docker-registry (CNCF distribution 2.8) on loopback for tests and benchmarks:
// its own storage, config and log under a scratch directory, TLS on 127.0.0.1 with the
// test CA (make_test_certificates), and htpasswd basic auth (bcrypt, `htpasswd -B`) or
// token auth against our TokenServer. Started by the constructor (ready when its TLS port
// answers, well under a second), stopped by the destructor (SIGTERM, then SIGKILL); the
// child also dies with the test process (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <string>

namespace kh_test {

// The docker-registry binary (PATH, then /usr/bin), or "" when it is not installed.
std::string find_docker_registry();

class RegistryServer {
 public:
  enum class Auth { None, Htpasswd, Token };
  struct Config {
    Auth auth = Auth::Htpasswd;
    std::string user = "publisher", password = "pa55word";  // Htpasswd
    // Token: the token server's realm, the service and issuer it signs for, the certificate
    // its tokens chain to (TokenServer gives all four).
    std::string token_realm, token_service, token_issuer, token_cert;
    bool delete_enabled = false;
  };
  // work_dir: an empty scratch directory this server owns. Throws std::runtime_error with
  // the log when the registry does not come up.
  RegistryServer(const std::string& work_dir, const Config& config);
  ~RegistryServer();
  RegistryServer(const RegistryServer&) = delete;
  RegistryServer& operator=(const RegistryServer&) = delete;

  int port() const { return port_; }
  std::string origin() const { return "https://127.0.0.1:" + std::to_string(port_); }
  // "oci://127.0.0.1:<port>/<ns>".
  std::string hub_url(const std::string& ns) const { return "oci://127.0.0.1:" + std::to_string(port_) + "/" + ns; }
  std::string ca_file() const { return work_ + "/ca.pem"; }
  // A folder holding ca.crt, for skopeo --cert-dir.
  std::string cert_dir() const { return work_ + "/certs.d"; }
  std::string log() const;

 private:
  void stop();
  std::string work_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace kh_test
