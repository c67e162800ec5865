// One HTTP GET on a libcurl multi handle, pulled by its reader (Exchange), and how the
// registry judges curl results and statuses. Internal to the registry's libcurl users.
#pragma once

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>

#include "http_url.hpp"
#include "kh/registry/http_options.hpp"  // sanitize_url
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
  std::string www_authenticate;  // a 401's challenge (OCI registries: Basic or Bearer realm=...)
  std::string content_type;
  std::string docker_content_digest;  // an OCI registry's digest of what it sent
  std::string content_encoding;       // "gzip", "br", ...: what libcurl decoded the body from
};

// Why a request was cut off by the rate floor (Exchange::Request::floor_*).
struct FloorCut {
  double after_s = 0;    // since the request began
  uint64_t bytes = 0;    // headers and body, in all
  double rate = 0;       // bytes/s over the span below
  double span_s = 0;     // the window the rate was measured over
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
    // Pause the transfer while the reader holds kBufferHighWater bytes. Off for a reader that
    // keeps every byte up to body_limit anyway (metadata): pausing buys it nothing, and a
    // paused transfer whose body libcurl is decoding (Content-Encoding) keeps the decoded rest
    // of each read in its own memory, then may fail to resume.
    bool pause_when_behind = true;
    uint64_t body_limit = 0;        // abort once more than this many body bytes arrive
    std::string authorization;      // non-empty: "Authorization: <it>" (the caller checked the origin)
    std::string accept;             // non-empty: "Accept: <it>"
    long timeout_ms = 0;            // > 0: the whole request's deadline (CURLOPT_TIMEOUT_MS)
    // The rate floor (HttpOptions::floor_*): past floor_grace_s, fewer than floor_rate
    // bytes/s over the last floor_window_s seconds end the request (floor_cut()).
    double floor_rate = 0;          // 0: none
    double floor_window_s = 10, floor_grace_s = 10;
  };

  Exchange(CURLM* multi, CURL* easy, const Request& req)
      : multi_(multi), easy_(easy), limit_(req.body_limit), pause_when_behind_(req.pause_when_behind) {
    errbuf_[0] = '\0';
    if (!req.authorization.empty()) headers_ = curl_slist_append(headers_, ("Authorization: " + req.authorization).c_str());
    if (!req.accept.empty()) headers_ = curl_slist_append(headers_, ("Accept: " + req.accept).c_str());
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
    url_ = req.url;
    started_ = std::chrono::steady_clock::now();
    floor_rate_ = req.floor_rate;
    floor_window_ = to_duration(req.floor_window_s);
    floor_grace_ = to_duration(req.floor_grace_s);
    window_origin_ = started_;
    samples_.push_back({started_, 0});
    // libcurl calls on_progress about once a second, and whenever data moves, for as long
    // as the transfer runs (connecting and waiting included): the floor's clock.
    curl_easy_setopt(easy_, CURLOPT_NOPROGRESS, floor_rate_ > 0 ? 0L : 1L);
    curl_easy_setopt(easy_, CURLOPT_XFERINFOFUNCTION, &Exchange::on_progress);
    curl_easy_setopt(easy_, CURLOPT_XFERINFODATA, this);
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
    ex->seen_ += size * count;
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
    else if (name == "www-authenticate") ex->response_.www_authenticate = value;
    else if (name == "content-type") ex->response_.content_type = value;
    else if (name == "docker-content-digest") ex->response_.docker_content_digest = value;
    else if (name == "content-encoding") ex->response_.content_encoding = value;
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
      ex->seen_ += n;
      ex->dropped_ += n;
      if (ex->dropped_ <= kMaxDroppedBody) return n;
      ex->cut_error_body_ = true;
      return 0;
    }
    const size_t held = ex->buf_.size() - ex->pos_;
    if (ex->pause_when_behind_ && held > 0 && held + n > kBufferHighWater) {
      ex->paused_ = true;
      return CURL_WRITEFUNC_PAUSE;  // curl keeps this chunk and offers it again on unpause
    }
    if (ex->pos_ > 0) {
      ex->buf_.erase(0, ex->pos_);
      ex->pos_ = 0;
    }
    ex->buf_.append(data, n);
    ex->received_ += n;
    ex->seen_ += n;
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
    // The time the reader held it up is not the server's: the floor's window starts again.
    window_origin_ = std::chrono::steady_clock::now();
    samples_.assign(1, {window_origin_, seen_});
    CURLcode rc = curl_easy_pause(easy_, CURLPAUSE_CONT);
    // Unpausing hands curl's held chunk to on_body at once; when that crosses the body
    // limit the transfer ends there, which is the cap's doing, not an error of curl's:
    // the reader reports the cap (or the size check does).
    if (rc != CURLE_OK && !over_limit_ && !cut_error_body_)
      fail(KH_ERROR_NETWORK, "GET " + sanitize_url(url_) + ": libcurl could not go on with the transfer after pausing it (" +
                                 curl_easy_strerror(rc) + ")" +
                                 (response_.content_encoding.empty()
                                      ? std::string()
                                      : "; the server sent it with Content-Encoding: " + printable(response_.content_encoding)) +
                                 "; try again, and report it to the hub's owner if it persists");
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
  // The rate floor ended the request (then floor_cut_info() says how).
  bool floor_cut() const { return finished_ && floor_cut_ && result_ == CURLE_ABORTED_BY_CALLBACK; }
  const FloorCut& floor_cut_info() const { return cut_; }
  // Body bytes the server sent, before libcurl decoded them, when known (-1: unknown).
  int64_t wire_body_bytes() const {
    curl_off_t n = -1;
    return curl_easy_getinfo(easy_, CURLINFO_SIZE_DOWNLOAD_T, &n) == CURLE_OK ? static_cast<int64_t>(n) : -1;
  }
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
  using Duration = std::chrono::steady_clock::duration;
  static Duration to_duration(double seconds) {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(std::max(seconds, 0.0)));
  }

  static int on_progress(void* self, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<Exchange*>(self)->floor_holds() ? 0 : 1;  // non-zero: CURLE_ABORTED_BY_CALLBACK
  }

  // The sliding window: samples of (time, bytes seen), one per 100 ms at most, kept back to
  // the one at or before the window's start. False once the floor is broken.
  bool floor_holds() {
    if (floor_rate_ <= 0 || floor_cut_) return !floor_cut_;
    const auto now = std::chrono::steady_clock::now();
    if (paused_) return true;  // the reader is behind, not the server
    if (now - samples_.back().first >= std::chrono::milliseconds(100) || seen_ != samples_.back().second)
      samples_.push_back({now, seen_});
    if (now - started_ < floor_grace_) return true;
    // Measured over the last window, or over what there is of it since the request began
    // (a grace shorter than the window) or since the reader last let it go on.
    const auto from = std::max(now - floor_window_, window_origin_);
    if (now - from < std::min(floor_window_, floor_grace_)) return true;
    while (samples_.size() > 1 && samples_[1].first <= from) samples_.pop_front();
    const double span = std::chrono::duration<double>(now - samples_.front().first).count();
    const double rate = span > 0 ? static_cast<double>(seen_ - samples_.front().second) / span : 0;
    if (rate >= floor_rate_) return true;
    floor_cut_ = true;
    cut_ = FloorCut{std::chrono::duration<double>(now - started_).count(), seen_, rate, span};
    return false;
  }

  void release() {
    curl_multi_remove_handle(multi_, easy_);
    curl_easy_setopt(easy_, CURLOPT_NOPROGRESS, 1L);
    curl_easy_setopt(easy_, CURLOPT_XFERINFODATA, nullptr);
    curl_easy_setopt(easy_, CURLOPT_PRIVATE, nullptr);
    curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, nullptr);
    curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, nullptr);
    curl_slist_free_all(headers_);
    headers_ = nullptr;
  }

  CURLM* multi_;
  CURL* easy_;
  std::string url_;  // for messages
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
  bool pause_when_behind_;
  bool cut_error_body_ = false;
  bool paused_ = false;
  bool over_limit_ = false;
  bool finished_ = false;
  CURLcode result_ = CURLE_OK;
  long timeout_ms_ = 0, elapsed_ms_ = 0;
  std::chrono::steady_clock::time_point started_;
  // The rate floor.
  uint64_t seen_ = 0;  // header and body bytes, kept or dropped
  double floor_rate_ = 0;
  Duration floor_window_{}, floor_grace_{};
  std::chrono::steady_clock::time_point window_origin_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, uint64_t>> samples_;
  bool floor_cut_ = false;
  FloorCut cut_;
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
