// A small HTTP/1.1 server on a loopback address for tests: each connection gets its own
// thread, reads one request, records it (method, target, headers), and hands it to the
// test's handler, which writes whatever bytes the test needs (drops, drips, lies). Every
// response closes its connection. Bounded: request reads time out, the server stops in
// its destructor and joins every thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kh_test {

struct HttpRequest {
  std::string method, target;                  // target as sent: "/hub/x" (or absolute via a proxy)
  std::map<std::string, std::string> headers;  // names lowercased
  int index = 0;                               // 0 for the first request the server got
  bool has(const std::string& name) const { return headers.count(name) != 0; }
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// A connection the handler answers on. Writes never raise SIGPIPE; they report failure.
class HttpConnection {
 public:
  explicit HttpConnection(int fd, const std::atomic<bool>* stop = nullptr) : fd_(fd), stop_(stop) {}
  bool send(const std::string& bytes);
  // "HTTP/1.1 <status>\r\n" + each header + "Connection: close\r\n\r\n".
  bool send_head(const std::string& status, const std::vector<std::string>& headers);
  // A complete response with Content-Length.
  bool respond(const std::string& status, const std::string& body, const std::vector<std::string>& headers = {});
  int fd() const { return fd_; }

  // Slow servers. Each returns false once the client has gone (or the server is stopping)
  // and never runs past max_total, so a handler always ends.
  // Sends `piece` every `every` (a slow drip: 100 bytes every 50 ms is 2 KB/s).
  bool drip(const std::string& piece, std::chrono::milliseconds every, std::chrono::milliseconds max_total);
  // One chunk of a "Transfer-Encoding: chunked" body ("" ends the body).
  bool send_chunk(const std::string& data);
  // Answers nothing: waits until the client closes the connection.
  void hold(std::chrono::milliseconds max_total);
  bool stopping() const { return stop_ != nullptr && stop_->load(); }

 private:
  int fd_;
  const std::atomic<bool>* stop_;
};

class FaultServer {
 public:
  using Handler = std::function<void(const HttpRequest&, HttpConnection&)>;
  // Listens on host (e.g. "127.0.0.1", "127.0.0.2") at a free port.
  explicit FaultServer(Handler handler, const std::string& host = "127.0.0.1");
  ~FaultServer();
  FaultServer(const FaultServer&) = delete;
  FaultServer& operator=(const FaultServer&) = delete;

  int port() const { return port_; }
  std::string origin() const { return "http://" + host_ + ":" + std::to_string(port_); }
  std::vector<HttpRequest> requests() const;
  size_t request_count() const;

 private:
  void accept_loop();
  void serve(int fd);

  Handler handler_;
  std::string host_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<HttpRequest> requests_;
};

}  // namespace kh_test
