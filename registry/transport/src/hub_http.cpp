// http:// and https:// hubs through libcurl: one multi handle per Hub, with one easy
// handle for metadata and one per parallel blob transfer, so connections are kept alive
// and shared between requests; retries with jittered backoff; resumed blobs (Range);
// redirects checked hop by hop; a bearer token only for the hub's own origin; conditional
// metadata requests (ETag). One request is an Exchange (http_exchange.hpp); where the
// options come from is http_config.cpp.
#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <random>
#include <thread>

#include "kh/registry/fs.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/registry/verified_sink.hpp"
#include "http_exchange.hpp"
#include "http_url.hpp"
#include "progress_line.hpp"
#include "internal.hpp"

namespace kh::registry {
namespace {

// Requests one fetch may make in all (retries, resumes, restarts), whatever happens.
constexpr int kMaxRequestsPerFetch = 64;
// Passes over one blob (a restart from byte 0 begins a new pass).
constexpr int kMaxBlobPasses = 8;
// A failure after at least this much progress since the previous one does not count
// against max_attempts (a long download over a flaky link keeps resuming); a slow drip
// that brings less still runs out of attempts.
constexpr uint64_t kResumeProgressBytes = 1u << 20;

using detail::encode_path;
using detail::Exchange;
using detail::is_header_safe;
using detail::is_redirect_status;
using detail::is_retryable_status;
using detail::is_tls_trust_error;
using detail::is_transient;
using detail::ProgressLine;
using detail::Response;
using detail::global_init;
using detail::lower;
using detail::parse_url;
using detail::strip_slashes;
using detail::UrlParts;

// Thrown by BlobStream::read_some when a blob must start again from byte 0 (the server
// ignored Range, or answered with the wrong range): fetch_blobs rewinds its sink.
struct RestartFromZero {};

class HttpHub final : public Hub {
 public:
  HttpHub(std::string url, UrlParts parts, HttpOptions options)
      : url_(std::move(url)), parts_(std::move(parts)), opt_(std::move(options)) {
    global_init();
    multi_ = curl_multi_init();
    easy_ = curl_easy_init();
    if (multi_ == nullptr || easy_ == nullptr) {
      if (easy_ != nullptr) curl_easy_cleanup(easy_);
      if (multi_ != nullptr) curl_multi_cleanup(multi_);
      fail(KH_ERROR_OUT_OF_MEMORY, "libcurl: out of memory opening hub " + sanitize_url(url_));
    }
    std::random_device rd;
    rng_.seed(rd());
    configure(easy_);
    op_deadline_ = opt_.operation_timeout_s > 0
                       ? std::chrono::steady_clock::now() +
                             std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(opt_.operation_timeout_s))
                       : std::chrono::steady_clock::time_point::max();
  }
  ~HttpHub() override {
    curl_easy_cleanup(easy_);
    for (CURL* e : blob_easies_) curl_easy_cleanup(e);
    curl_multi_cleanup(multi_);
  }
  HttpHub(const HttpHub&) = delete;
  HttpHub& operator=(const HttpHub&) = delete;

  const std::string& url() const override { return url_; }
  std::string id() const override { return parts_.scheme + "-" + sha256_hex(url_).substr(0, 16); }

  std::string fetch_metadata(const std::string& relative_path, uint64_t max_bytes) override {
    return fetch_metadata_conditional(relative_path, max_bytes, "").text;
  }

  MetadataFetch fetch_metadata_conditional(const std::string& relative_path, uint64_t max_bytes,
                                           const std::string& cached_etag) override {
    if (!detail::is_safe_relative_path(relative_path))
      fail(KH_ERROR_INVALID_ARGUMENT, "hub " + safe_url() + ": '" + relative_path + "' is not a safe relative path");
    const std::string start_url = url_ + "/" + encode_path(relative_path);
    const std::string etag = is_header_safe(cached_etag) ? cached_etag : "";
    Attempts attempts(*this, start_url);
    for (;;) {
      Exchange::Request req;
      req.url = attempts.current_url();
      req.if_none_match = etag;
      req.accept_encoding = true;
      req.body_limit = max_bytes;
      req.with_token = same_origin(req.url);
      attempts.arm(req, max_bytes);
      Exchange ex(multi_, easy_, req, opt_.token);
      if (show_progress()) {
        // A hub slow to answer is visible on a terminal: host, seconds waited, attempt.
        const std::string host = parts_.origin();
        const int attempt = attempts.attempt();
        ex.on_waiting([host, attempt](long waited_s, bool done) {
          if (done)
            std::fputs("\n", stderr);
          else
            std::fprintf(stderr, "\rkh: waiting for %s to answer (%ld s, attempt %d)", host.c_str(), waited_s, attempt);
          std::fflush(stderr);
        });
      }
      std::string text;
      char buf[1 << 16];
      for (;;) {
        size_t n = ex.read(buf, sizeof buf);
        if (n == 0) break;
        if (text.size() + n > max_bytes)
          fail(KH_ERROR_BAD_METADATA, "hub " + safe_url() + ": '" + relative_path + "' is larger than the " +
                                          std::to_string(max_bytes) + " bytes allowed for it");
        text.append(buf, n);
      }
      if (ex.over_limit())  // whatever curl made of the cut (a write error, a failed unpause)
        fail(KH_ERROR_BAD_METADATA, "hub " + safe_url() + ": '" + relative_path + "' is larger than the " +
                                        std::to_string(max_bytes) + " bytes allowed for it");
      const Response& r = ex.response();
      if (ex.result() == CURLE_OK && r.status == 200) {
        MetadataFetch out;
        out.text = std::move(text);
        if (is_header_safe(r.etag)) out.etag = r.etag;
        return out;
      }
      if (ex.result() == CURLE_OK && r.status == 304 && !etag.empty()) {
        MetadataFetch out;
        out.not_modified = true;
        out.etag = is_header_safe(r.etag) ? r.etag : etag;
        return out;
      }
      std::this_thread::sleep_for(attempts.after_failure(ex, relative_path));
    }
  }

  void fetch_blob(const std::string& sha256, uint64_t expected_size, int out_fd) override {
    fetch_blobs({BlobRequest{sha256, expected_size, out_fd}});
  }

  // Up to max_parallel transfers at once on the one multi handle (which shares its
  // connections among them): each blob's bytes go through its own VerifiedSink as they
  // arrive; a blob the server makes start over is rewound and fetched again.
  void fetch_blobs(const std::vector<BlobRequest>& blobs) override {
    for (const BlobRequest& b : blobs)
      if (!is_sha256_hex(b.sha256))
        fail(KH_ERROR_INVALID_ARGUMENT, "hub " + safe_url() + ": '" + b.sha256 + "' is not a sha256 digest");
    struct Active {
      const BlobRequest* request;
      std::unique_ptr<VerifiedSink> sink;
      std::unique_ptr<BlobStream> stream;
      int passes = 1;
    };
    uint64_t total = 0;
    for (const BlobRequest& b : blobs) total += b.size;
    // Names the package when there is one ("kh: org/name 1.0.0  3.1/12.0 MiB ...").
    std::string label = "kh: " + std::to_string(blobs.size()) + " packages";
    if (blobs.size() == 1)
      label = "kh: " + (blobs[0].label.empty() ? "sha256:" + blobs[0].sha256.substr(0, 12) : printable(blobs[0].label));
    ProgressLine progress(show_progress(), label, total);
    const size_t width = static_cast<size_t>(std::clamp(opt_.max_parallel, 1, kMaxParallelDownloads));
    while (blob_easies_.size() < std::min(width, blobs.size())) {
      CURL* e = curl_easy_init();
      if (e == nullptr) fail(KH_ERROR_OUT_OF_MEMORY, "libcurl: out of memory opening hub " + safe_url());
      blob_easies_.push_back(e);
      configure(e);
    }
    std::vector<Active> active;
    std::vector<CURL*> idle(blob_easies_.begin(), blob_easies_.begin() + std::min(width, blobs.size()));
    size_t next = 0;
    uint64_t finished_bytes = 0;
    std::vector<char> buf(1 << 16);
    while (next < blobs.size() || !active.empty()) {
      while (next < blobs.size() && !idle.empty()) {
        const BlobRequest& b = blobs[next++];
        const std::string rel = blob_path(b.sha256);
        Active a;
        a.request = &b;
        a.sink = std::make_unique<VerifiedSink>(b.out_fd, b.sha256, b.size, "blob sha256:" + b.sha256 + " from " + safe_url(),
                                                b.resume_from);
        // A resumed download asks only for the rest (Range from the bytes already there).
        a.stream = std::make_unique<BlobStream>(*this, idle.back(), url_ + "/" + rel, rel, b.size, a.sink->received());
        idle.pop_back();
        active.push_back(std::move(a));
      }
      bool moved = false;
      for (size_t i = 0; i < active.size();) {
        Active& a = active[i];
        bool done = false;
        try {
          while (std::optional<size_t> n = a.stream->read_some(buf.data(), buf.size())) {
            if (*n == 0) {
              a.sink->finish();
              done = true;
              break;
            }
            a.sink->write(buf.data(), *n);
            moved = true;
          }
        } catch (const RestartFromZero&) {
          if (++a.passes > kMaxBlobPasses)
            fail(KH_ERROR_NETWORK, a.sink->what() + ": the server restarted the download " +
                                       std::to_string(a.passes - 1) + " times; try again later");
          a.sink->restart();
          moved = true;
        }
        if (done) {
          finished_bytes += a.request->size;
          idle.push_back(a.stream->easy());
          active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
          moved = true;
          continue;
        }
        ++i;
      }
      uint64_t done_bytes = finished_bytes;
      for (const Active& a : active) done_bytes += a.sink->received();
      progress.update(done_bytes);
      if (moved || active.empty()) continue;
      // Nothing to hand over: wait for the network, or for the earliest retry to be due.
      auto wait = std::chrono::milliseconds(1000);
      for (const Active& a : active) wait = std::min(wait, a.stream->wait_hint());
      curl_multi_poll(multi_, nullptr, 0, static_cast<int>(wait.count()), nullptr);
      Exchange::drive_multi(multi_);
    }
    progress.update(total, true);
  }

 private:
  // Counts requests and failures for one fetch, sleeps between attempts, follows checked
  // redirects, and throws once a failure is final.
  class Attempts {
   public:
    Attempts(HttpHub& hub, std::string start_url) : hub_(hub), start_(std::move(start_url)), url_(start_) {}
    const std::string& current_url() const { return url_; }
    // The fetch made progress: failures counted so far no longer count.
    void progressed() { failures_ = 0; }
    // Which attempt the next request is (1 for the first), for status lines.
    int attempt() const { return failures_ + 1; }

    // Gives a request that may bring up to `may_bring` body bytes its deadline: the
    // transfer's (from that size and the floor rate), or what is left of the operation's
    // when that comes first. Throws once the operation's deadline has passed.
    void arm(Exchange::Request& req, uint64_t may_bring) {
      const HttpOptions& o = hub_.opt_;
      transfer_s_ = std::max(o.transfer_min_timeout_s, static_cast<double>(may_bring) / o.transfer_min_rate);
      may_bring_ = may_bring;
      double limit_s = transfer_s_;
      by_operation_ = false;
      if (hub_.deadline() != std::chrono::steady_clock::time_point::max()) {
        const double left =
            std::chrono::duration<double>(hub_.deadline() - std::chrono::steady_clock::now()).count();
        if (left <= 0) fail_operation_deadline();
        if (left < limit_s) {
          limit_s = left;
          by_operation_ = true;
        }
      }
      req.timeout_ms = std::max(1L, static_cast<long>(limit_s * 1000));
    }

    // Decides what follows a request that did not succeed: returns how long to wait before
    // trying again (url_ may now be a redirect target), or throws.
    std::chrono::milliseconds after_failure(const Exchange& ex, const std::string& rel) {
      const Response& r = ex.response();
      const std::string shown = sanitize_url(url_);
      if (ex.hit_deadline()) {
        if (by_operation_) fail_operation_deadline();
        fail(KH_ERROR_NETWORK,
             "GET " + shown + ": cut off after " + seconds(ex.elapsed_ms() / 1000.0) +
                 " s, the deadline of a transfer of up to " + std::to_string(may_bring_) + " bytes (max(" +
                 seconds(hub_.opt_.transfer_min_timeout_s) + " s, size at " + seconds(hub_.opt_.transfer_min_rate) +
                 " bytes/s) = " + seconds(transfer_s_) +
                 " s): the server sends too slowly or has stalled. Try again later; on a slow link, raise "
                 "KH_TRANSFER_MIN_TIMEOUT (seconds) or lower KH_TRANSFER_MIN_RATE (bytes/s)");
      }
      if (++requests_ >= kMaxRequestsPerFetch)
        fail(KH_ERROR_NETWORK, "GET " + shown + ": gave up after " + std::to_string(requests_) +
                                   " requests; the hub or the network is unstable: try again later");
      if (ex.result() == CURLE_OK && is_redirect_status(r.status)) {
        std::string next = ex.redirect_url();
        if (next.empty())
          fail(KH_ERROR_NETWORK, "GET " + shown + ": HTTP " + std::to_string(r.status) + " without a Location");
        if (++hops_ > hub_.opt_.max_redirects)
          fail(KH_ERROR_NETWORK, "GET " + sanitize_url(start_) + ": more than " + std::to_string(hub_.opt_.max_redirects) +
                                     " redirects; check the hub URL");
        hub_.check_redirect(url_, next);
        url_ = next;
        return std::chrono::milliseconds(0);
      }
      std::string why;
      int retry_after_s = -1;
      if (ex.result() == CURLE_OK) {
        if (r.status == 404 || r.status == 410)
          fail(KH_ERROR_NOT_FOUND, "hub " + hub_.safe_url() + " has no '" + rel + "' (HTTP " + std::to_string(r.status) +
                                       " from " + shown + "); check the hub URL and the repo name");
        if (r.status == 401 || r.status == 403)
          fail(KH_ERROR_NETWORK, "GET " + shown + ": HTTP " + std::to_string(r.status) +
                                     (hub_.opt_.token.empty()
                                          ? "; the hub needs a token: set KH_TOKEN or add one for this hub in "
                                            "$XDG_CONFIG_HOME/kh/config.json"
                                          : "; the hub refused the token: check KH_TOKEN or the config file"));
        if (!is_retryable_status(r.status))
          fail(KH_ERROR_NETWORK, "GET " + shown + ": unexpected HTTP " + std::to_string(r.status) +
                                     "; check the hub URL, or report it to the hub's owner");
        why = "HTTP " + std::to_string(r.status);
        if ((r.status == 429 || r.status == 503) && !r.retry_after.empty() &&
            r.retry_after.find_first_not_of("0123456789") == std::string::npos && r.retry_after.size() < 8)
          retry_after_s = std::min(std::atoi(r.retry_after.c_str()), hub_.opt_.retry_after_max_s);
      } else {
        CURLcode rc = ex.result();
        if (rc == CURLE_FILESIZE_EXCEEDED)
          fail(KH_ERROR_VERIFICATION, "GET " + shown + ": the server announces more bytes than the signed size; "
                                      "the hub serves other bytes than it signed: report it to the hub's owner");
        if (is_tls_trust_error(rc))
          fail(KH_ERROR_NETWORK, "GET " + shown + ": the TLS certificate is not trusted (" + ex.error_detail() +
                                     "); if the hub uses a private CA, set KH_CA_BUNDLE to its PEM file");
        if (!is_transient(rc))
          fail(KH_ERROR_NETWORK, "GET " + shown + ": " + ex.error_detail() + "; check the hub URL and the network");
        why = ex.error_detail();
      }
      if (++failures_ >= hub_.opt_.max_attempts)
        fail(KH_ERROR_NETWORK, "GET " + shown + ": " + why + " (" + std::to_string(failures_) +
                                   " attempts); check the network or try again later");
      url_ = start_;  // a retry starts from the hub again (a redirect target may be what failed)
      hops_ = 0;
      const std::chrono::milliseconds delay = hub_.retry_delay(failures_, retry_after_s);
      if (std::chrono::steady_clock::now() + delay >= hub_.deadline()) fail_operation_deadline(why);
      // A wait the user can see, on a terminal: which host, what failed, when the next try is.
      if (hub_.show_progress())
        std::fprintf(stderr, "kh: %s: %s; attempt %d of %d failed, next try in %s s\n", hub_.parts_.origin().c_str(),
                     printable(why).c_str(), failures_, hub_.opt_.max_attempts,
                     seconds(static_cast<double>(delay.count()) / 1000.0).c_str());
      return delay;
    }

    [[noreturn]] void fail_operation_deadline(const std::string& last = "") const {
      const bool limited = hub_.limit_ < hub_.op_deadline_;
      const std::string setting = limited ? hub_.limit_setting_ : "KH_OPERATION_TIMEOUT";
      fail(KH_ERROR_NETWORK, "GET " + sanitize_url(url_) + ": the operation's deadline of " +
                                 seconds(limited ? hub_.limit_s_ : hub_.opt_.operation_timeout_s) + " s (" + setting +
                                 ") passed" + (last.empty() ? "" : " (last failure: " + last + ")") +
                                 "; the hub is too slow or not answering. Try again later, or raise " + setting);
    }

    static std::string seconds(double s) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4g", s);
      return buf;
    }

   private:
    HttpHub& hub_;
    std::string start_, url_;
    int requests_ = 0, failures_ = 0, hops_ = 0;
    double transfer_s_ = 0;     // the last request's transfer deadline
    uint64_t may_bring_ = 0;    // and the size it was derived from
    bool by_operation_ = false; // the operation's deadline came first for it
  };

  // One blob's body, on its own easy handle: one request after another (resuming at the
  // bytes already handed over, after a backoff when one failed) until it is complete.
  class BlobStream {
   public:
    BlobStream(HttpHub& hub, CURL* easy, std::string url, std::string rel, uint64_t size, uint64_t already = 0)
        : hub_(hub), easy_(easy), rel_(std::move(rel)), size_(size), attempts_(hub, std::move(url)),
          delivered_(already), progress_mark_(already) {}
    CURL* easy() const { return easy_; }

    // Body bytes already received (> 0), 0 at the end of the body (the caller checks the
    // size and digest), nullopt when none are ready yet. Never waits. Throws
    // RestartFromZero when the bytes handed over so far must be discarded.
    std::optional<size_t> read_some(char* out, size_t cap) {
      for (;;) {
        if (!ex_) {
          if (done_) return 0;
          if (std::chrono::steady_clock::now() < retry_at_) return std::nullopt;
          start_request();
        }
        ex_->resume_if_drained();
        if (ex_->has_body_bytes()) {
          if (!checked_ && !accept_response()) continue;  // may also throw RestartFromZero
          size_t n = ex_->take(out, cap);
          delivered_ += n;
          return n;
        }
        if (!ex_->finished()) return std::nullopt;
        // The transfer ended and every byte it brought was handed over.
        const Response& r = ex_->response();
        if ((ex_->result() == CURLE_OK && (r.status == 200 || r.status == 206)) || ex_->over_limit()) {
          if (!checked_ && !accept_response()) continue;
          ex_.reset();
          done_ = true;
          return 0;  // the caller's VerifiedSink decides whether the size and digest are right
        }
        if (delivered_ >= progress_mark_ + kResumeProgressBytes) attempts_.progressed();
        progress_mark_ = delivered_;
        if (ex_->result() == CURLE_OK && r.status == 416 && range_sent_ > 0) {
          // The server cannot serve the rest: never send it Range again; start over.
          ranges_ok_ = false;
          ex_.reset();
          restart();
          continue;
        }
        retry_at_ = std::chrono::steady_clock::now() + attempts_.after_failure(*ex_, rel_);
        ex_.reset();
      }
    }

    // How long the caller may wait for the network before this stream needs a look.
    std::chrono::milliseconds wait_hint() const {
      if (ex_) return std::chrono::milliseconds(1000);
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(retry_at_ - std::chrono::steady_clock::now());
      return std::max(left, std::chrono::milliseconds(0));
    }

   private:
    void start_request() {
      Exchange::Request req;
      req.url = attempts_.current_url();
      if (!ranges_ok_) restart();
      range_sent_ = delivered_;
      req.range_start = range_sent_;
      // A server may answer a Range with the whole blob (200), so the whole size is the
      // limit until the answer is known; accept_response() tightens it for a 206.
      req.body_limit = size_;
      req.with_token = hub_.same_origin(req.url);
      attempts_.arm(req, size_);
      ex_ = std::make_unique<Exchange>(hub_.multi_, easy_, req, hub_.opt_.token);
      checked_ = false;
    }

    // The first body bytes of a 2xx response are here (or it ended): is it what we asked
    // for? False: it was dropped and another request follows.
    bool accept_response() {
      checked_ = true;
      const Response& r = ex_->response();
      if (r.status == 206) {
        uint64_t first = 0;  // "bytes FIRST-LAST/TOTAL"
        bool ok = false;
        const std::string cr = r.content_range;
        if (cr.rfind("bytes ", 0) == 0) {
          const char* p = cr.c_str() + 6;
          char* end = nullptr;
          errno = 0;
          unsigned long long v = std::strtoull(p, &end, 10);
          ok = errno == 0 && end != p && *end == '-';
          first = v;
        }
        if (ok && first == range_sent_) {
          ex_->set_limit(size_ - range_sent_);
          return true;
        }
        // The wrong part: do not trust this server's ranges again; start from byte 0.
        ranges_ok_ = false;
        ex_.reset();
        if (++bad_ranges_ > 2)
          fail(KH_ERROR_NETWORK, "GET " + sanitize_url(attempts_.current_url()) +
                                     ": the server answers Range requests with the wrong part ('" + printable(cr) +
                                     "'); report it to the hub's owner");
        restart();
        return false;
      }
      if (r.status == 200) {
        if (range_sent_ > 0) restart();  // Range ignored: the whole blob follows, from byte 0
        return true;
      }
      fail(KH_ERROR_NETWORK, "GET " + sanitize_url(attempts_.current_url()) + ": unexpected HTTP " +
                                 std::to_string(r.status) + " for a blob; report it to the hub's owner");
    }

    // Forgets the bytes handed over; if there were any, the caller must start again.
    void restart() {
      const bool had = delivered_ > 0;
      delivered_ = 0;
      progress_mark_ = 0;
      range_sent_ = 0;
      if (had) throw RestartFromZero{};
    }

    HttpHub& hub_;
    CURL* easy_;
    std::string rel_;
    uint64_t size_;
    Attempts attempts_;
    std::unique_ptr<Exchange> ex_;
    std::chrono::steady_clock::time_point retry_at_{};
    uint64_t delivered_ = 0, progress_mark_ = 0, range_sent_ = 0;
    bool checked_ = false, done_ = false, ranges_ok_ = true;
    int bad_ranges_ = 0;
  };

  void configure(CURL* easy) {
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "https");
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);  // each hop is checked here instead
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT, opt_.connect_timeout_s);
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, opt_.low_speed_bytes_per_s);
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, opt_.low_speed_time_s);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, 256L * 1024L);
    curl_easy_setopt(easy, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    // Headers set here go to the server only, never to a proxy.
    curl_easy_setopt(easy, CURLOPT_HEADEROPT, static_cast<long>(CURLHEADER_SEPARATE));
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "kh/0.1 (kernel hub)");
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &Exchange::on_header);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &Exchange::on_body);
    if (!opt_.ca_bundle.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, opt_.ca_bundle.c_str());
    // Proxies: libcurl reads http_proxy, https_proxy, all_proxy and no_proxy itself as
    // long as CURLOPT_PROXY is left unset, which it is here.
  }

  bool same_origin(const std::string& url) const {
    auto p = parse_url(url);
    return p && p->origin() == parts_.origin();
  }

  // Throws unless a redirect from `from` to `to` may be followed.
  void check_redirect(const std::string& from, const std::string& to) const {
    auto p = parse_url(to);
    const std::string shown = "redirect from " + sanitize_url(from) + " to " + sanitize_url(to);
    if (!p) fail(KH_ERROR_NETWORK, shown + ": the target is not a valid URL");
    if (p->has_user) fail(KH_ERROR_NETWORK, shown + " refused: the target carries user credentials");
    if (p->scheme == "https") return;
    if (p->scheme == "http" && parts_.scheme == "http" && p->origin() == parts_.origin()) return;
    fail(KH_ERROR_NETWORK, shown + " refused: a hub may only redirect to https (or, for a plain-http hub, to its own "
                           "origin); fix the hub's server configuration or use its https URL");
  }

  std::chrono::milliseconds retry_delay(int failures, int retry_after_s) {
    int ms;
    if (retry_after_s >= 0) {
      ms = retry_after_s * 1000;
    } else {
      double base = static_cast<double>(opt_.backoff_initial_ms) * static_cast<double>(1u << std::min(failures - 1, 16));
      base = std::min(base, static_cast<double>(opt_.backoff_max_ms));
      std::uniform_real_distribution<double> jitter(0.5, 1.0);
      ms = static_cast<int>(base * jitter(rng_));
    }
    return std::chrono::milliseconds(std::max(ms, 0));
  }

  bool show_progress() const {
    if (opt_.progress == HttpOptions::Progress::Always) return true;
    if (opt_.progress == HttpOptions::Progress::Never) return false;
    return ::isatty(STDERR_FILENO) == 1;
  }

  std::string safe_url() const { return sanitize_url(url_); }

 public:
  void set_deadline_limit(double seconds_from_now, const std::string& setting) override {
    limit_ = std::chrono::steady_clock::now() +
             std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds_from_now));
    limit_s_ = seconds_from_now;
    limit_setting_ = setting;
  }
  void clear_deadline_limit() override { limit_ = std::chrono::steady_clock::time_point::max(); }

 private:
  // Every request ends by the operation's deadline, or the scoped limit if that is sooner.
  std::chrono::steady_clock::time_point deadline() const { return std::min(op_deadline_, limit_); }

  std::string url_;
  UrlParts parts_;
  HttpOptions opt_;
  CURLM* multi_ = nullptr;
  CURL* easy_ = nullptr;               // metadata requests
  std::vector<CURL*> blob_easies_;     // one per parallel blob transfer, kept for reuse
  std::mt19937 rng_;
  std::chrono::steady_clock::time_point op_deadline_;  // max(): none
  std::chrono::steady_clock::time_point limit_ = std::chrono::steady_clock::time_point::max();  // set_deadline_limit
  double limit_s_ = 0;
  std::string limit_setting_;
};

}  // namespace

std::unique_ptr<Hub> open_http_hub(const std::string& url, HttpOptions options) {
  const std::string shown = sanitize_url(url);
  auto parts = parse_url(url);
  if (!parts || (parts->scheme != "http" && parts->scheme != "https") || parts->host.empty())
    fail(KH_ERROR_INVALID_ARGUMENT, "hub URL '" + shown + "' is not a valid http(s) URL, e.g. https://hub.example.com/kh");
  if (parts->has_user)
    fail(KH_ERROR_INVALID_ARGUMENT, "hub URL '" + shown + "' carries user credentials; put a token in KH_TOKEN or "
                                    "$XDG_CONFIG_HOME/kh/config.json instead");
  if (parts->has_query || parts->has_fragment)
    fail(KH_ERROR_INVALID_ARGUMENT, "hub URL '" + shown + "' has a query or fragment; a hub URL names a folder");
  if (!options.ca_bundle.empty() && !path_exists(options.ca_bundle))
    fail(KH_ERROR_INVALID_ARGUMENT, "CA bundle '" + options.ca_bundle + "' (KH_CA_BUNDLE) does not exist");
  if (options.token.find_first_of("\r\n") != std::string::npos)
    fail(KH_ERROR_INVALID_ARGUMENT, "the token for hub " + shown + " contains a line break");
  return std::make_unique<HttpHub>(strip_slashes(url), std::move(*parts), std::move(options));
}

}  // namespace kh::registry
