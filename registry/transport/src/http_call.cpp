// One blocking HTTP request; see http_call.hpp.
#include "http_call.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "http_exchange.hpp"
#include "kh/registry/detail/internal.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry::detail {
namespace {

// The request's body for CURLOPT_READDATA: bytes in memory, or a file's range.
struct Source {
  const std::string* bytes = nullptr;
  int fd = -1;
  uint64_t left = 0;  // bytes still to send
  size_t at = 0;      // in `bytes`
  ~Source() {
    if (fd >= 0) ::close(fd);
  }
  static size_t read(char* buf, size_t size, size_t count, void* self) {
    auto* s = static_cast<Source*>(self);
    const size_t want = static_cast<size_t>(std::min<uint64_t>(size * count, s->left));
    if (s->bytes != nullptr) {
      std::memcpy(buf, s->bytes->data() + s->at, want);
      s->at += want;
      s->left -= want;
      return want;
    }
    for (;;) {
      if (want == 0) return 0;
      ssize_t n = ::read(s->fd, buf, want);
      if (n > 0) s->left -= static_cast<uint64_t>(n);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return CURL_READFUNC_ABORT;
    }
  }
};

struct Sink {
  Answer* answer;
  size_t keep;
  static size_t body(char* data, size_t size, size_t count, void* self) {
    auto* s = static_cast<Sink*>(self);
    const size_t n = size * count;
    if (s->answer->body.size() < s->keep) s->answer->body.append(data, std::min(n, s->keep - s->answer->body.size()));
    return n;
  }
  static size_t header(char* data, size_t size, size_t count, void* self) {
    auto* s = static_cast<Sink*>(self);
    const std::string line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {
      s->answer->headers.clear();  // a new response (after 100 Continue) starts over
      return size * count;
    }
    const size_t colon = line.find(':');
    if (colon != std::string::npos) s->answer->headers[lower(line.substr(0, colon))] = trim(line.substr(colon + 1));
    return size * count;
  }
};

}  // namespace

Answer perform_call(void* easy, const HttpOptions& opt, const Call& call) {
  CURL* e = static_cast<CURL*>(easy);
  curl_easy_reset(e);
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  for (const std::string& h : call.headers) headers = curl_slist_append(headers, h.c_str());
  Answer a;
  Sink sink{&a, call.keep_body};
  Source source;
  curl_easy_setopt(e, CURLOPT_URL, call.url.c_str());
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, opt.connect_timeout_s);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, opt.low_speed_bytes_per_s);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, opt.low_speed_time_s);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "kh/0.1 (kernel hub)");
  curl_easy_setopt(e, CURLOPT_HEADEROPT, static_cast<long>(CURLHEADER_SEPARATE));  // never to a proxy
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Sink::body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Sink::header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &sink);
  if (!opt.ca_bundle.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, opt.ca_bundle.c_str());
  // The operation's deadline bounds every call (a token service that never answers too).
  if (!opt.deadline.none()) {
    const double left = opt.deadline.left_s();
    if (left <= 0)
      fail(KH_ERROR_TIMEOUT, opt.deadline.describe() + " passed before " + call.method + " " + sanitize_url(call.url) +
                                 "; try again, or raise " + opt.deadline.setting);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, std::max(1L, static_cast<long>(left * 1000)));
  }
  if (!call.user.empty()) {
    curl_easy_setopt(e, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(e, CURLOPT_USERNAME, call.user.c_str());
    curl_easy_setopt(e, CURLOPT_PASSWORD, call.password.c_str());
  }
  if (call.method == "HEAD") {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (call.method == "GET") {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else {
    const uint64_t length = call.has_body ? call.body.length : 0;
    if (length > 0 && call.body.bytes != nullptr) {
      if (call.body.offset + length > call.body.bytes->size()) fail(KH_ERROR_INTERNAL, "an upload's range passes its bytes");
      source.bytes = call.body.bytes;
      source.at = static_cast<size_t>(call.body.offset);
    } else if (length > 0) {
      source.fd = ::open(call.body.file.c_str(), O_RDONLY | O_CLOEXEC);
      if (source.fd < 0) fail_errno("cannot open '" + call.body.file + "' to upload it", errno);
      if (::lseek(source.fd, static_cast<off_t>(call.body.offset), SEEK_SET) < 0)
        fail_errno("cannot seek in '" + call.body.file + "'", errno);
    }
    source.left = length;
    const curl_off_t size = static_cast<curl_off_t>(length);
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);  // a body of `size` bytes (0 for none), sent as is
    curl_easy_setopt(e, CURLOPT_READFUNCTION, &Source::read);
    curl_easy_setopt(e, CURLOPT_READDATA, &source);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, size);
    if (call.method != "PUT") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, call.method.c_str());
  }
  const CURLcode rc = curl_easy_perform(e);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, nullptr);  // errbuf, sink and source end with this call
  curl_easy_setopt(e, CURLOPT_READDATA, nullptr);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, nullptr);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, nullptr);
  curl_slist_free_all(headers);
  const std::string detail = errbuf[0] != '\0' ? std::string(errbuf) : std::string(curl_easy_strerror(rc));
  if (rc == CURLE_OPERATION_TIMEDOUT && opt.deadline.passed())
    fail(KH_ERROR_TIMEOUT, opt.deadline.describe() + " passed while waiting for " + call.method + " " +
                               sanitize_url(call.url) + "; the server is too slow or not answering. Try again later, or "
                               "raise " + opt.deadline.setting);
  if (rc != CURLE_OK) {
    if (is_transient(rc)) {
      a.error = printable(trim(detail));
      return a;  // status 0: may be tried again
    }
    const std::string shown = call.method + " " + sanitize_url(call.url) + ": " + printable(trim(detail));
    if (is_tls_trust_error(rc))
      fail(KH_ERROR_NETWORK, shown + "; if the server uses a private CA, set KH_CA_BUNDLE to its PEM file");
    fail(KH_ERROR_NETWORK, shown);
  }
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &a.status);
  curl_off_t length = -1;
  if (curl_easy_getinfo(e, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK) a.content_length = length;
  return a;
}

}  // namespace kh::registry::detail
