// The GET side of the http-based backends (http_client.hpp): one multi handle per client,
// with one easy handle for metadata and one per parallel blob transfer, so connections are
// kept alive and shared between requests; retries with jittered backoff; resumed blobs
// (Range); redirects checked hop by hop; authorization only for the server's own origin;
// conditional requests (ETag). One request is an Exchange (http_exchange.hpp).
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
#include <utility>

#include "kh/registry/fs.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/registry/verified_sink.hpp"
#include "http_client.hpp"
#include "http_exchange.hpp"
#include "http_url.hpp"
#include "progress_line.hpp"
#include "kh/registry/detail/internal.hpp"

namespace kh::registry::detail {
namespace {

// Requests one fetch may make in all (retries, resumes, restarts), whatever happens.
constexpr int kMaxRequestsPerFetch = 64;
// Passes over one blob (a restart from byte 0 begins a new pass).
constexpr int kMaxBlobPasses = 8;
// A failure after at least this much progress since the previous one does not count
// against max_attempts (a long download over a flaky link keeps resuming); a slow drip
// that brings less still runs out of attempts.
constexpr uint64_t kResumeProgressBytes = 1u << 20;


// Thrown by BlobStream::read_some when a blob must start again from byte 0 (the server
// ignored Range, or answered with the wrong range): fetch_blobs rewinds its sink.
struct RestartFromZero {};

}  // namespace

class HttpClient::Impl {
 public:
  Impl(std::string url, UrlParts parts, HttpOptions options, std::shared_ptr<HttpAuthorizer> auth)
      : url_(std::move(url)), parts_(std::move(parts)), opt_(std::move(options)), auth_(std::move(auth)) {
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
    // The operation's deadline: the caller's (it began with the operation), else one that
    // begins now, with the hub.
    op_ = opt_.deadline.none() ? Deadline::in(opt_.operation_timeout_s, "KH_OPERATION_TIMEOUT") : opt_.deadline;
  }
  ~Impl() {
    curl_easy_cleanup(easy_);
    for (CURL* e : blob_easies_) curl_easy_cleanup(e);
    curl_multi_cleanup(multi_);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  const std::string& url() const { return url_; }
  std::string id() const {
    const size_t colon = url_.find("://");
    return url_.substr(0, colon) + "-" + sha256_hex(url_).substr(0, 16);
  }
  const HttpOptions& options() const { return opt_; }

  GetResult get(const std::string& start_url, const std::string& relative_path, uint64_t max_bytes,
                const std::string& cached_etag, const std::string& accept) {
    const std::string etag = is_header_safe(cached_etag) ? cached_etag : "";
    Attempts attempts(*this, start_url, relative_path);
    for (;;) {
      Exchange::Request req;
      req.url = attempts.current_url();
      req.if_none_match = etag;
      req.accept_encoding = true;
      req.pause_when_behind = false;  // every byte up to max_bytes is kept anyway
      req.body_limit = max_bytes;
      req.authorization = auth_->authorization(req.url);
      req.accept = accept;
      attempts.arm(req, max_bytes);
      Exchange ex(multi_, easy_, req);
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
        if (text.size() + n > max_bytes) fail_too_large(ex, relative_path, max_bytes);
        text.append(buf, n);
      }
      if (ex.over_limit()) fail_too_large(ex, relative_path, max_bytes);  // whatever curl made of the cut
      const Response& r = ex.response();
      if (ex.result() == CURLE_OK && (r.status == 200 || (r.status == 304 && !etag.empty()))) {
        GetResult out;
        out.content_type = r.content_type;
        out.docker_content_digest = r.docker_content_digest;
        if (r.status == 200) {
          out.fetch.text = std::move(text);
          if (is_header_safe(r.etag)) out.fetch.etag = r.etag;
        } else {
          out.fetch.not_modified = true;
          out.fetch.etag = is_header_safe(r.etag) ? r.etag : etag;
        }
        return out;
      }
      std::this_thread::sleep_for(attempts.after_failure(ex, relative_path));
    }
  }

  // Up to max_parallel transfers at once on the one multi handle (which shares its
  // connections among them): each blob's bytes go through its own VerifiedSink as they
  // arrive; a blob the server makes start over is rewound and fetched again.
  void fetch_blobs(const std::vector<BlobRequest>& blobs, const std::function<std::string(const std::string&)>& blob_url) {
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
        a.stream = std::make_unique<BlobStream>(*this, idle.back(), blob_url(b.sha256), rel, b.size, a.sink->received());
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
    Attempts(Impl& hub, std::string start_url, std::string what)
        : hub_(hub), start_(std::move(start_url)), url_(start_), what_(std::move(what)) {}
    const std::string& current_url() const { return url_; }
    // The fetch made progress: failures counted so far no longer count, and a cut by the
    // rate floor may be resumed (a real link that faltered, not a drip).
    void progressed() {
      failures_ = 0;
      progressed_ = true;
    }
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
      const Deadline& d = hub_.deadline();
      if (!d.none()) {
        const double left = d.left_s();
        if (left <= 0) fail_operation_deadline();
        if (left < limit_s) {
          limit_s = left;
          by_operation_ = true;
        }
      }
      req.timeout_ms = std::max(1L, static_cast<long>(limit_s * 1000));
      req.floor_rate = o.floor_rate;
      req.floor_window_s = o.floor_window_s;
      req.floor_grace_s = o.floor_grace_s;
    }

    // Decides what follows a request that did not succeed: returns how long to wait before
    // trying again (url_ may now be a redirect target), or throws.
    std::chrono::milliseconds after_failure(const Exchange& ex, const std::string& rel) {
      const Response& r = ex.response();
      const std::string shown = sanitize_url(url_);
      const bool progressed = std::exchange(progressed_, false);
      if (ex.floor_cut() && !progressed) fail_floor(ex, rel);
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
      if (ex.floor_cut()) {
        why = "slower than the floor of " + seconds(hub_.opt_.floor_rate) + " bytes/s (KH_TRANSFER_FLOOR_RATE)";
      } else if (ex.result() == CURLE_OK) {
        if (r.status == 404 || r.status == 410)
          fail(KH_ERROR_NOT_FOUND, "hub " + hub_.safe_url() + " has no '" + rel + "' (HTTP " + std::to_string(r.status) +
                                       " from " + shown + "); check the hub URL and the repo name");
        // A challenge the backend can answer (an OCI registry's token flow) is answered once
        // or twice and the request made again at once; a final refusal says what to do.
        if (r.status == 401 && renewals_ < 2 && hub_.same_origin(url_) && hub_.auth_->renew(url_, r.www_authenticate)) {
          ++renewals_;
          return std::chrono::milliseconds(0);
        }
        if (r.status == 401 || r.status == 403)
          fail(KH_ERROR_NETWORK, "GET " + shown + ": HTTP " + std::to_string(r.status) + hub_.auth_->refused_hint());
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
        if (rc == CURLE_BAD_CONTENT_ENCODING)
          fail(KH_ERROR_NETWORK, "hub " + hub_.safe_url() + ": '" + rel + "' came with Content-Encoding '" +
                                     printable(r.content_encoding) + "' that does not decode (" + ex.error_detail() +
                                     "); the server or a proxy between mangles it: report it to the hub's owner");
        if (!is_transient(rc))
          fail(KH_ERROR_NETWORK, "hub " + hub_.safe_url() + ": GET " + shown + ": " + ex.error_detail() +
                                     "; check the hub URL and the network");
        why = ex.error_detail();
      }
      if (++failures_ >= hub_.opt_.max_attempts)
        fail(KH_ERROR_NETWORK, "GET " + shown + ": " + why + " (" + std::to_string(failures_) +
                                   " attempts); check the network or try again later");
      url_ = start_;  // a retry starts from the hub again (a redirect target may be what failed)
      hops_ = 0;
      const std::chrono::milliseconds delay = hub_.retry_delay(failures_, retry_after_s);
      if (hub_.deadline().left_s() <= std::chrono::duration<double>(delay).count()) fail_operation_deadline(why);
      // A wait the user can see, on a terminal: which host, what failed, when the next try is.
      if (hub_.show_progress())
        std::fprintf(stderr, "kh: %s: %s; attempt %d of %d failed, next try in %s s\n", hub_.parts_.origin().c_str(),
                     printable(why).c_str(), failures_, hub_.opt_.max_attempts,
                     seconds(static_cast<double>(delay.count()) / 1000.0).c_str());
      return delay;
    }

    // KH_ERROR_TIMEOUT: which deadline, which hub, what it was waiting for.
    [[noreturn]] void fail_operation_deadline(const std::string& last = "") const {
      const Deadline& d = hub_.deadline();
      fail(KH_ERROR_TIMEOUT, "hub " + hub_.safe_url() + ": " + d.describe() + " passed while waiting for '" +
                                 (what_.empty() ? sanitize_url(url_) : what_) + "' (GET " + sanitize_url(url_) + ")" +
                                 (last.empty() ? "" : "; last failure: " + last) +
                                 "; the hub is too slow or not answering. Try again later, or raise " + d.setting);
    }

    // The rate floor ended the request: which hub, what, how much came, how fast.
    [[noreturn]] void fail_floor(const Exchange& ex, const std::string& rel) const {
      const FloorCut& c = ex.floor_cut_info();
      const HttpOptions& o = hub_.opt_;
      fail(KH_ERROR_NETWORK,
           "hub " + hub_.safe_url() + ": GET '" + rel + "' ended after " + seconds(c.after_s) + " s: " +
               std::to_string(c.bytes) + " bytes received, " + seconds(c.rate) + " bytes/s over the last " +
               seconds(c.span_s) + " s, below the floor of " + seconds(o.floor_rate) +
               " bytes/s (KH_TRANSFER_FLOOR_RATE, measured over KH_TRANSFER_FLOOR_WINDOW=" + seconds(o.floor_window_s) +
               " s after KH_TRANSFER_FLOOR_GRACE=" + seconds(o.floor_grace_s) +
               " s). The hub or the network is stalled or dripping: try again later or use another hub; on a slow "
               "link, lower KH_TRANSFER_FLOOR_RATE");
    }

    static std::string seconds(double s) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4g", s);
      return buf;
    }

   private:
    Impl& hub_;
    std::string start_, url_;
    std::string what_;  // what the requests are for ("repos/a/b/index.json"), for messages
    bool progressed_ = false;  // since the last failure
    int requests_ = 0, failures_ = 0, hops_ = 0, renewals_ = 0;
    double transfer_s_ = 0;     // the last request's transfer deadline
    uint64_t may_bring_ = 0;    // and the size it was derived from
    bool by_operation_ = false; // the operation's deadline came first for it
  };

  // One blob's body, on its own easy handle: one request after another (resuming at the
  // bytes already handed over, after a backoff when one failed) until it is complete.
  class BlobStream {
   public:
    BlobStream(Impl& hub, CURL* easy, std::string url, std::string rel, uint64_t size, uint64_t already = 0)
        : hub_(hub), easy_(easy), rel_(std::move(rel)), size_(size), attempts_(hub, std::move(url), rel_),
          delivered_(already), progress_mark_(already) {}
    CURL* easy() const { return easy_; }

    // Body bytes already received (> 0), 0 at the end of the body (the caller checks the
    // size and digest), nullopt when none are ready yet. Never waits. Throws
    // RestartFromZero when the bytes handed over so far must be discarded.
    std::optional<size_t> read_some(char* out, size_t cap) {
      for (;;) {
        if (!ex_) {
          // Every byte came before the request failed (cut just short of its end): nothing is
          // left to ask for; the caller's VerifiedSink judges what came.
          if (delivered_ >= size_ && size_ > 0) done_ = true;
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
      req.authorization = hub_.auth_->authorization(req.url);
      attempts_.arm(req, size_);
      ex_ = std::make_unique<Exchange>(hub_.multi_, easy_, req);
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

    Impl& hub_;
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

 public:
  bool show_progress() const {
    if (opt_.progress == HttpOptions::Progress::Always) return true;
    if (opt_.progress == HttpOptions::Progress::Never) return false;
    return ::isatty(STDERR_FILENO) == 1;
  }


 private:
  std::string safe_url() const { return sanitize_url(url_); }

 public:
  void set_deadline_limit(double seconds_from_now, const std::string& setting, const std::string& why) {
    limit_ = Deadline::in(seconds_from_now, setting);
    limit_.why = why;
  }
  void clear_deadline_limit() { limit_ = Deadline{}; }

 private:
  // Every request ends by the operation's deadline, or the scoped limit if that is sooner.
  const Deadline& deadline() const { return limit_.at < op_.at ? limit_ : op_; }

  // A metadata body past its cap, with what the server did to get there: a body that
  // inflates past it (Content-Encoding: a gzip bomb) is named as such.
  [[noreturn]] void fail_too_large(const Exchange& ex, const std::string& rel, uint64_t max_bytes) const {
    const std::string& encoding = ex.response().content_encoding;
    std::string how;
    if (!encoding.empty()) {
      const int64_t wire = ex.wire_body_bytes();
      how = " once decoded (Content-Encoding: " + printable(encoding) + (wire >= 0 ? ", from " + std::to_string(wire) +
                                                                                         " bytes on the wire so far" : "") +
            "; a compression bomb?)";
    }
    fail(KH_ERROR_BAD_METADATA, "hub " + safe_url() + ": '" + rel + "' is larger than the " + std::to_string(max_bytes) +
                                    " bytes allowed for it" + how + "; report it to the hub's owner");
  }

  std::string url_;
  UrlParts parts_;
  HttpOptions opt_;
  std::shared_ptr<HttpAuthorizer> auth_;
  CURLM* multi_ = nullptr;
  CURL* easy_ = nullptr;               // metadata requests
  std::vector<CURL*> blob_easies_;     // one per parallel blob transfer, kept for reuse
  std::mt19937 rng_;
  Deadline op_;     // the operation's
  Deadline limit_;  // set_deadline_limit's; none when cleared
};

HttpClient::HttpClient(std::string hub_url, UrlParts origin, HttpOptions options, std::shared_ptr<HttpAuthorizer> auth)
    : impl_(std::make_unique<Impl>(std::move(hub_url), std::move(origin), std::move(options), std::move(auth))) {}
HttpClient::~HttpClient() = default;
const std::string& HttpClient::hub_url() const { return impl_->url(); }
std::string HttpClient::id() const { return impl_->id(); }
const HttpOptions& HttpClient::options() const { return impl_->options(); }
bool HttpClient::show_progress() const { return impl_->show_progress(); }
GetResult HttpClient::get(const std::string& url, const std::string& what, uint64_t max_bytes,
                          const std::string& if_none_match, const std::string& accept) {
  return impl_->get(url, what, max_bytes, if_none_match, accept);
}
void HttpClient::fetch_blobs(const std::vector<BlobRequest>& blobs,
                             const std::function<std::string(const std::string&)>& blob_url) {
  impl_->fetch_blobs(blobs, blob_url);
}
void HttpClient::set_deadline_limit(double seconds, const std::string& setting, const std::string& why) {
  impl_->set_deadline_limit(seconds, setting, why);
}
void HttpClient::clear_deadline_limit() { impl_->clear_deadline_limit(); }

}  // namespace kh::registry::detail
