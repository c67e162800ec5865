// nginx on loopback for the http hub tests and the https download benchmark.
#include "nginx_fixture.hpp"

#include "server_util.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kh_test {

std::string find_nginx() { return find_program("nginx"); }

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("cannot bind a loopback port");
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

void make_test_certificates(const std::string& dir) {
  write_text_file(dir + "/server.ext",
                 "subjectAltName=IP:127.0.0.1,IP:127.0.0.2,DNS:localhost\n"
                 "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n");
  const std::string d = shell_quote(dir);
  const std::string cmd =
      "cd " + d +
      " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem"
      " -days 2 -subj /CN=kh-test-ca"
      " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr"
      " -subj /CN=127.0.0.1"
      " && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2"
      " -extfile server.ext";
  const std::string full = "(" + cmd + ") >" + d + "/openssl.log 2>&1";
  if (std::system(full.c_str()) != 0)
    throw std::runtime_error("openssl could not make test certificates: " + read_text_file(dir + "/openssl.log"));
}

NginxServer::NginxServer(const std::string& work_dir, const Config& config) : work_(work_dir) {
  const std::string nginx = find_nginx();
  if (nginx.empty())
    throw std::runtime_error("nginx is not installed; run scripts/install-deps.sh (Debian package nginx-light)");
  make_test_certificates(work_);
  ::mkdir((work_ + "/tmp").c_str(), 0700);
  ::mkdir((work_ + "/logs").c_str(), 0700);  // nginx -p wants it even when every log is elsewhere
  http_port_ = free_loopback_port();
  https_port_ = free_loopback_port();
  const std::string w = work_;
  auto ports = [&](std::string text) {
    for (const auto& [key, port] : {std::pair<std::string, int>{"{HTTP_PORT}", http_port_}, {"{HTTPS_PORT}", https_port_}})
      for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at))
        text.replace(at, key.size(), std::to_string(port));
    return text;
  };
  std::string conf;
  conf += "daemon off;\nmaster_process on;\nworker_processes 1;\n";
  conf += "pid " + w + "/nginx.pid;\n";
  conf += "error_log " + w + "/error.log info;\n";
  if (::geteuid() == 0) conf += "user root root;\n";  // the scratch tree is 0700
  conf += "events { worker_connections 256; }\n";
  conf += "http {\n";
  conf += "  log_format kh '$server_addr $connection $connection_requests $status \"$request\" auth=$http_authorization';\n";
  conf += "  access_log " + w + "/access.log kh;\n";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    conf += std::string("  ") + t + "_temp_path " + w + "/tmp/" + t + ";\n";
  conf += "  types { application/json json; }\n  default_type application/octet-stream;\n";
  conf += "  sendfile on;\n  tcp_nopush on;\n  keepalive_timeout 30;\n  keepalive_requests 10000;\n";
  conf += "  server {\n    listen 127.0.0.1:" + std::to_string(http_port_) + ";\n";
  conf += "    root " + config.root + ";\n" + ports(config.extra_http) + "\n  }\n";
  conf += "  server {\n";
  conf += "    listen 127.0.0.1:" + std::to_string(https_port_) + " ssl http2;\n";
  conf += "    listen 127.0.0.2:" + std::to_string(https_port_) + " ssl http2;\n";
  conf += "    ssl_certificate " + w + "/server.pem;\n    ssl_certificate_key " + w + "/server.key;\n";
  conf += "    root " + config.root + ";\n" + ports(config.extra_https) + "\n  }\n";
  conf += "}\n";
  write_text_file(w + "/nginx.conf", conf);

  const std::string err = w + "/error.log", out = w + "/stdout.log", conf_path = w + "/nginx.conf";
  pid_ = spawn_logged(nginx, {"-e", err, "-p", w, "-c", conf_path}, out);
  try {
    for (const auto& [host, port] : {std::pair<const char*, int>{"127.0.0.1", http_port_}, {"127.0.0.1", https_port_},
                                     {"127.0.0.2", https_port_}})
      wait_listening(pid_, host, port, err, "nginx");
  } catch (...) {
    stop();
    throw;
  }
}

NginxServer::~NginxServer() { stop(); }

void NginxServer::stop() {
  stop_process(pid_);
  pid_ = -1;
}

std::string NginxServer::http_url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(http_port_) + path;
}

std::string NginxServer::https_url(const std::string& path, const std::string& host) const {
  return "https://" + host + ":" + std::to_string(https_port_) + path;
}

std::string NginxServer::access_log() const { return read_text_file(work_ + "/access.log"); }

}  // namespace kh_test
