// One HTTP GET on a libcurl multi handle, pulled by its reader (Exchange), and how the
// registry judges curl results and statuses. Internal to the registry's libcurl users.
#pragma once

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdint>
#include <cstring>
#include <string>

#include "http_url.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry::detail {

// Bytes an Exchange holds before it pauses the transfer until the reader catches up.
constexpr size_t kBufferHighWater = 1u << 20;
// Bytes of a non-2xx body read (and dropped) before the transfer is cut off.
constexpr uint64_t kMaxDroppedBody = 1u << 20;
// An ETag longer than this, or with control characters, is not stored or sent.
constexpr size_t kMaxEtagBytes = 256;

inline bool is_header_safe(const std::string& v) {
  if (v.empty() || v.size() > kMaxEtagBytes) return false;
  for (unsigned char c : v)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

inline std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// What the last finished request looked like, for messages and the retry decision.
struct Response {
  long status = 0;
  std::string etag, content_range, retry_after;
};

// One GET on the hub's handles. The body of a 2xx response is pulled with read(); bodies
// of other responses are dropped. Bounded by curl's connect and low-speed timeouts.
class Exchange {
 public:
  struct Request {
    std::string url;
    uint64_t range_start = 0;       // > 0: "Range: bytes=N-"
    std::string if_none_match;      // non-empty: "If-None-Match: <etag>"
    bool accept_encoding = false;   // let the server compress (metadata only)
    uint64_t body_limit = 0;        // abort once more than this many body bytes arrive
    bool with_token = false;
    long timeout_ms = 0;            // > 0: the whole request's deadline (CURLOPT_TIMEOUT_MS)
  };

  Exchange(CURLM* multi, CURL* easy, const Request& req, const std::string& token)
      : multi_(multi), easy_(easy), limit_(req.body_limit) {
    errbuf_[0] = '\0';
    if (req.with_token && !token.empty()) headers_ = curl_slist_append(headers_, ("Authorization: Bearer " + token).c_str());
    if (!req.if_none_match.empty())
      headers_ = curl_slist_append(headers_, ("If-None-Match: " + req.if_none_match).c_str());
    std::string range = req.range_start > 0 ? std::to_string(req.range_start) + "-" : "";
    curl_easy_setopt(easy_, CURLOPT_URL, req.url.c_str());
    curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(easy_, CURLOPT_RANGE, range.empty() ? nullptr : range.c_str());
    curl_easy_setopt(easy_, CURLOPT_ACCEPT_ENCODING, req.accept_encoding ? "" : nullptr);
    // A Content-Length over the limit fails before any body byte (CURLE_FILESIZE_EXCEEDED).
    curl_easy_setopt(easy_, CURLOPT_MAXFILESIZE_LARGE,
                     static_cast<curl_off_t>(req.accept_encoding ? 0 : req.body_limit));
    curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, errbuf_);
    curl_easy_setopt(easy_, CURLOPT_TIMEOUT_MS, req.timeout_ms);
    timeout_ms_ = req.timeout_ms;
    started_ = std::chrono::steady_clock::now();
    curl_easy_setopt(easy_, CURLOPT_HEADERDATA, this);
    curl_easy_setopt(easy_, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(easy_, CURLOPT_PRIVATE, this);  // drive_multi() finds the Exchange of a finished handle
    CURLMcode mc = curl_multi_add_handle(multi_, easy_);
    if (mc != CURLM_OK) {
      curl_slist_free_all(headers_);
      fail(KH_ERROR_INTERNAL, std::string("libcurl: cannot start a transfer: ") + curl_multi_strerror(mc));
    }
    try {
      drive_multi(multi_);
    } catch (...) {
      release();
      throw;
    }
  }
  ~Exchange() {
    end_waiting();  // a status line left open by a failure is ended
    release();
  }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  static size_t on_header(char* data, size_t size, size_t count, void* self) {
    auto* ex = static_cast<Exchange*>(self);
    std::string line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {
      ex->response_ = Response{};  // a new response (after 1xx or a proxy's) starts over
      size_t sp = line.find(' ');
      if (sp != std::string::npos) ex->response_.status = std::strtol(line.c_str() + sp + 1, nullptr, 10);
      return size * count;
    }
    size_t colon = line.find(':');
    if (colon == std::string::npos) return size * count;
    std::string name = lower(line.substr(0, colon));
    std::string value = trim(line.substr(colon + 1));
    if (name == "etag") ex->response_.etag = value;
    else if (name == "content-range") ex->response_.content_range = value;
    else if (name == "retry-after") ex->response_.retry_after = value;
    return size * count;
  }

  static size_t on_body(char* data, size_t size, size_t count, void* self) {
    auto* ex = static_cast<Exchange*>(self);
    const size_t n = size * count;
    long status = 0;
    curl_easy_getinfo(ex->easy_, CURLINFO_RESPONSE_CODE, &status);
    ex->response_.status = status;
    if (status < 200 || status > 299) {
      // Error pages and redirect bodies are dropped; an endless one is cut off, and the
      // status alone decides what follows.
      ex->dropped_ += n;
      if (ex->dropped_ <= kMaxDroppedBody) return n;
      ex->cut_error_body_ = true;
      return 0;
    }
    const size_t held = ex->buf_.size() - ex->pos_;
    if (held > 0 && held + n > kBufferHighWater) {
      ex->paused_ = true;
      return CURL_WRITEFUNC_PAUSE;  // curl keeps this chunk and offers it again on unpause
    }
    if (ex->pos_ > 0) {
      ex->buf_.erase(0, ex->pos_);
      ex->pos_ = 0;
    }
    ex->buf_.append(data, n);
    ex->received_ += n;
    if (ex->limit_ > 0 && ex->received_ > ex->limit_) {
      // Keep what arrived so the reader's cap check reports it; stop the transfer now.
      ex->over_limit_ = true;
      return 0;
    }
    return n;
  }

  // Up to cap body bytes, waiting for them; 0 once the transfer has ended (then see
  // result()). Drives every transfer on the multi handle while it waits.
  size_t read(char* out, size_t cap) {
    for (;;) {
      resume_if_drained();
      if (has_body_bytes() || finished_) {
        end_waiting();
        return take(out, cap);
      }
      note_waiting();
      curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
      drive_multi(multi_);
    }
  }
  // Called about once a second, from 2 s on, while no body byte has come (the server is
  // slow to answer, or the connection is slow to open), with the seconds waited; then once
  // with done = true when the wait ends. For the caller's status line.
  void on_waiting(std::function<void(long waited_s, bool done)> f) { waiting_ = std::move(f); }
  // Up to cap of the body bytes already received; never waits.
  size_t take(char* out, size_t cap) {
    size_t k = std::min(cap, buf_.size() - pos_);
    std::memcpy(out, buf_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  // A transfer paused because the reader fell behind goes on once its bytes are taken.
  void resume_if_drained() {
    if (!paused_ || has_body_bytes()) return;
    paused_ = false;
    CURLcode rc = curl_easy_pause(easy_, CURLPAUSE_CONT);
    // Unpausing hands curl's held chunk to on_body at once; when that crosses the body
    // limit the transfer ends there, which is the cap's doing, not an error of curl's:
    // the reader reports the cap (or the size check does).
    if (rc != CURLE_OK && !over_limit_ && !cut_error_body_)
      fail(KH_ERROR_INTERNAL, std::string("libcurl cannot resume a transfer: ") + curl_easy_strerror(rc));
  }
  bool has_body_bytes() const { return pos_ < buf_.size(); }
  void note_waiting() {
    if (!waiting_ || received_ > 0) return;
    const long waited_s = static_cast<long>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_).count());
    if (waited_s < 2 || waited_s == shown_wait_s_) return;
    shown_wait_s_ = waited_s;
    waiting_(waited_s, false);
  }
  void end_waiting() {
    if (shown_wait_s_ == 0) return;
    shown_wait_s_ = 0;
    waiting_(0, true);
  }

  // Called by drive_multi() when libcurl reports this transfer done.
  void on_done(CURLcode result) {
    finished_ = true;
    elapsed_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_).count();
    result_ = result;
    long status = 0;
    if (curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status != 0) response_.status = status;
  }

  // Runs every transfer on `multi` as far as it can go without waiting, and tells each
  // Exchange whose transfer finished.
  static void drive_multi(CURLM* multi) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi, &running);
    if (mc != CURLM_OK) fail(KH_ERROR_INTERNAL, std::string("libcurl: ") + curl_multi_strerror(mc));
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      char* owner = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &owner);
      if (owner != nullptr) reinterpret_cast<Exchange*>(owner)->on_done(m->data.result);
    }
  }
  // Lowers the body limit once the response says how much should follow.
  void set_limit(uint64_t limit) {
    limit_ = limit;
    if (received_ > limit_) over_limit_ = true;
  }

  bool finished() const { return finished_; }
  // CURLE_OK also when only an error page too long to read was cut off.
  CURLcode result() const { return cut_error_body_ && result_ == CURLE_WRITE_ERROR ? CURLE_OK : result_; }
  bool over_limit() const { return over_limit_; }
  // The request ran into its own deadline (Request::timeout_ms), not a connect or
  // low-speed timeout.
  bool hit_deadline() const {
    return finished_ && result_ == CURLE_OPERATION_TIMEDOUT && timeout_ms_ > 0 && elapsed_ms_ + 250 >= timeout_ms_;
  }
  long elapsed_ms() const { return elapsed_ms_; }
  const Response& response() const { return response_; }
  std::string error_detail() const {
    std::string d = errbuf_[0] != '\0' ? std::string(errbuf_) : std::string(curl_easy_strerror(result_));
    return printable(trim(d));  // may quote a server (a reason, a header)
  }
  std::string redirect_url() const {
    char* u = nullptr;
    curl_easy_getinfo(easy_, CURLINFO_REDIRECT_URL, &u);
    return u != nullptr ? u : "";
  }

 private:
  void release() {
    curl_multi_remove_handle(multi_, easy_);
    curl_easy_setopt(easy_, CURLOPT_PRIVATE, nullptr);
    curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, nullptr);
    curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, nullptr);
    curl_slist_free_all(headers_);
    headers_ = nullptr;
  }

  CURLM* multi_;
  CURL* easy_;
  curl_slist* headers_ = nullptr;
  char errbuf_[CURL_ERROR_SIZE];
  Response response_;
  std::string buf_;
  size_t pos_ = 0;
  uint64_t received_ = 0;
  std::function<void(long, bool)> waiting_;
  long shown_wait_s_ = 0;  // the last wait reported (0: none shown)
  uint64_t dropped_ = 0;
  uint64_t limit_;
  bool cut_error_body_ = false;
  bool paused_ = false;
  bool over_limit_ = false;
  bool finished_ = false;
  CURLcode result_ = CURLE_OK;
  long timeout_ms_ = 0, elapsed_ms_ = 0;
  std::chrono::steady_clock::time_point started_;
};

inline bool is_transient(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
    case CURLE_QUIC_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

inline bool is_tls_trust_error(CURLcode rc) {
  return rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_ISSUER_ERROR ||
         rc == CURLE_SSL_CRL_BADFILE;
}

inline bool is_retryable_status(long s) { return s == 408 || s == 429 || (s >= 500 && s <= 599); }
inline bool is_redirect_status(long s) { return s == 301 || s == 302 || s == 303 || s == 307 || s == 308; }

}  // namespace kh::registry::detail
