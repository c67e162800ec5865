// docker-registry on loopback for the oci:// hub tests and benchmarks.
#include "registry_fixture.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "nginx_fixture.hpp"
#include "server_util.hpp"

namespace kh_test {

std::string find_docker_registry() { return find_program("docker-registry"); }

RegistryServer::RegistryServer(const std::string& work_dir, const Config& config) : work_(work_dir) {
  const std::string registry = find_docker_registry();
  if (registry.empty())
    throw std::runtime_error("docker-registry is not installed; run scripts/install-deps.sh (Debian package docker-registry)");
  make_test_certificates(work_);
  ::mkdir((work_ + "/certs.d").c_str(), 0700);
  write_text_file(work_ + "/certs.d/ca.crt", read_text_file(work_ + "/ca.pem"));
  port_ = free_loopback_port();
  std::string conf = "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\n";
  conf += "storage:\n  filesystem:\n    rootdirectory: " + work_ + "/data\n";
  if (config.delete_enabled) conf += "  delete:\n    enabled: true\n";
  conf += "http:\n  addr: 127.0.0.1:" + std::to_string(port_) + "\n  secret: kh-test\n";
  conf += "  tls:\n    certificate: " + work_ + "/server.pem\n    key: " + work_ + "/server.key\n";
  if (config.auth == Auth::Htpasswd) {
    // bcrypt at the lowest cost: the registry checks it on every request.
    const std::string cmd = "htpasswd -B -C 4 -b -n " + shell_quote(config.user) + " " + shell_quote(config.password) +
                            " > " + shell_quote(work_ + "/htpasswd") + " 2>" + shell_quote(work_ + "/htpasswd.log");
    if (std::system(cmd.c_str()) != 0)
      throw std::runtime_error("htpasswd failed (apache2-utils installed?): " + read_text_file(work_ + "/htpasswd.log"));
    conf += "auth:\n  htpasswd:\n    realm: kh-test\n    path: " + work_ + "/htpasswd\n";
  } else if (config.auth == Auth::Token) {
    conf += "auth:\n  token:\n    realm: " + config.token_realm + "\n    service: " + config.token_service +
            "\n    issuer: " + config.token_issuer + "\n    rootcertbundle: " + config.token_cert + "\n";
  }
  write_text_file(work_ + "/config.yml", conf);
  pid_ = spawn_logged(registry, {"serve", work_ + "/config.yml"}, work_ + "/registry.log");
  try {
    wait_listening(pid_, "127.0.0.1", port_, work_ + "/registry.log", "docker-registry");
  } catch (...) {
    stop();
    throw;
  }
}

RegistryServer::~RegistryServer() { stop(); }

void RegistryServer::stop() {
  stop_process(pid_);
  pid_ = -1;
}

std::string RegistryServer::log() const { return read_text_file(work_ + "/registry.log"); }

}  // namespace kh_test
