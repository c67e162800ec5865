// The fault-injecting loopback HTTP server used by the http hub tests.
#include "fault_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace kh_test {

namespace {
constexpr size_t kMaxRequestHead = 64 * 1024;

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}
}  // namespace

bool HttpConnection::send(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

bool HttpConnection::send_head(const std::string& status, const std::vector<std::string>& headers) {
  std::string head = "HTTP/1.1 " + status + "\r\n";
  for (const auto& h : headers) head += h + "\r\n";
  head += "Connection: close\r\n\r\n";
  return send(head);
}

bool HttpConnection::respond(const std::string& status, const std::string& body, const std::vector<std::string>& headers) {
  std::vector<std::string> all = headers;
  all.push_back("Content-Length: " + std::to_string(body.size()));
  return send_head(status, all) && send(body);
}

bool HttpConnection::drip(const std::string& piece, std::chrono::milliseconds every,
                          std::chrono::milliseconds max_total) {
  const auto end = std::chrono::steady_clock::now() + max_total;
  while (std::chrono::steady_clock::now() < end) {
    if (stopping() || !send(piece)) return false;
    pollfd p{fd_, POLLIN, 0};  // readable here means the client closed (or reset) it
    if (::poll(&p, 1, static_cast<int>(every.count())) > 0) {
      char c;
      if (::recv(fd_, &c, 1, MSG_DONTWAIT) <= 0) return false;
    }
  }
  return true;
}

bool HttpConnection::send_chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return send(size + data + "\r\n");
}

void HttpConnection::hold(std::chrono::milliseconds max_total) {
  const auto end = std::chrono::steady_clock::now() + max_total;
  while (!stopping() && std::chrono::steady_clock::now() < end) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      char c;
      if (::recv(fd_, &c, 1, MSG_DONTWAIT) <= 0) return;
    }
  }
}

FaultServer::FaultServer(Handler handler, const std::string& host) : handler_(std::move(handler)), host_(host) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("fault server: socket: " + std::string(std::strerror(errno)));
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 || (ntohl(addr.sin_addr.s_addr) >> 24) != 127) {
    ::close(listen_fd_);
    throw std::runtime_error("fault server: only 127.0.0.0/8 addresses, not " + host);
  }
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 64) != 0) {
    int err = errno;
    ::close(listen_fd_);
    throw std::runtime_error("fault server: bind/listen on " + host + ": " + std::strerror(err));
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FaultServer::~FaultServer() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers.swap(workers_);
  }
  for (auto& t : workers)
    if (t.joinable()) t.join();
}

std::vector<HttpRequest> FaultServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t FaultServer::request_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

void FaultServer::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    workers_.emplace_back([this, fd] { serve(fd); });
  }
}

void FaultServer::serve(int fd) {
  timeval tv{5, 0};  // a client that never finishes its request does not hold a thread long
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  // (the send timeout also bounds a handler writing to a client that stopped reading)
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < kMaxRequestHead && !stop_) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    head.append(buf, static_cast<size_t>(n));
  }
  size_t end = head.find("\r\n\r\n");
  if (end == std::string::npos) {
    ::close(fd);
    return;
  }
  HttpRequest req;
  size_t line_end = head.find("\r\n");
  std::string line = head.substr(0, line_end);
  size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 != std::string::npos && sp2 > sp1) {
    req.method = line.substr(0, sp1);
    req.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  }
  size_t pos = line_end + 2;
  while (pos < end) {
    size_t e = head.find("\r\n", pos);
    std::string h = head.substr(pos, e - pos);
    pos = e + 2;
    size_t colon = h.find(':');
    if (colon == std::string::npos) continue;
    std::string value = h.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    req.headers[lower(h.substr(0, colon))] = value;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    req.index = static_cast<int>(requests_.size());
    requests_.push_back(req);
  }
  HttpConnection conn(fd, &stop_);
  try {
    handler_(req, conn);
  } catch (...) {
  }
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

}  // namespace kh_test
