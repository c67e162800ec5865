// nginx (the Debian package) on loopback for tests and benchmarks: its own prefix,
// config, pid file and logs under a scratch directory; http on 127.0.0.1, https on
// 127.0.0.1 and 127.0.0.2 with a test CA and a server certificate made with the openssl
// CLI. Started by the constructor, stopped (SIGTERM, then SIGKILL) by the destructor; the
// child also dies with the test process (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <string>

namespace kh_test {

// The nginx binary (PATH, then /usr/sbin), or "" when it is not installed.
std::string find_nginx();

class NginxServer {
 public:
  struct Config {
    std::string root;        // served at "/" on every listener
    // Extra directives inside the http and the https server {} (locations, returns);
    // "{HTTP_PORT}" and "{HTTPS_PORT}" in them become the ports chosen.
    std::string extra_http;
    std::string extra_https;
  };
  // work_dir: an empty scratch directory this server owns (conf, certs, logs, temp files).
  // Throws std::runtime_error with the error log when nginx does not come up.
  NginxServer(const std::string& work_dir, const Config& config);
  ~NginxServer();
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  int http_port() const { return http_port_; }
  int https_port() const { return https_port_; }
  std::string http_url(const std::string& path = "") const;
  std::string https_url(const std::string& path = "", const std::string& host = "127.0.0.1") const;
  std::string ca_file() const { return work_ + "/ca.pem"; }
  // One line per request: "<host> <connection serial> <requests on it> <status>
  // <request line> auth=<Authorization or ->" (the token's value is logged: test only).
  std::string access_log() const;

 private:
  void stop();
  std::string work_;
  int http_port_ = 0, https_port_ = 0;
  pid_t pid_ = -1;
};

// Makes ca.pem/ca.key and server.pem/server.key (SAN: IP 127.0.0.1, IP 127.0.0.2,
// DNS localhost) in dir with the openssl CLI. Throws std::runtime_error on failure.
void make_test_certificates(const std::string& dir);

// A TCP port on 127.0.0.1 that nothing listens on right now.
int free_loopback_port();

}  // namespace kh_test
