// HEAD / PUT / DELETE on an http(s) hub for publishing; see http_writer.hpp.
#include "http_writer.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "http_call.hpp"
#include "http_exchange.hpp"
#include "http_url.hpp"
#include "kh/registry/detail/internal.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/status_error.hpp"
#include "publish_lease.hpp"

namespace kh::registry::detail {
namespace {

}  // namespace

HttpWriter::HttpWriter(const std::string& hub_url, HttpOptions options, WriteCredentials credentials)
    : url_(strip_slashes(hub_url)), opt_(std::move(options)), cred_(std::move(credentials)) {
  auto parts = parse_url(url_);
  if (!parts || (parts->scheme != "http" && parts->scheme != "https") || parts->has_user || parts->has_query ||
      parts->has_fragment)
    fail(KH_ERROR_INVALID_ARGUMENT, "hub URL '" + url_ + "' is not an http(s) URL of a folder, without credentials");
  global_init();
  easy_ = curl_easy_init();
  if (easy_ == nullptr) fail(KH_ERROR_OUT_OF_MEMORY, "libcurl: out of memory");
}

HttpWriter::~HttpWriter() { curl_easy_cleanup(static_cast<CURL*>(easy_)); }

std::optional<uint64_t> HttpWriter::remote_size(const std::string& rel) {
  Result r = request("HEAD", rel, {});
  if (r.status == 404 || r.status == 410) return std::nullopt;
  if (r.content_length < 0) return std::nullopt;  // unknown size: upload again to be sure
  return static_cast<uint64_t>(r.content_length);
}

void HttpWriter::put(const std::string& rel, const std::string& local_path) { request("PUT", rel, Body{local_path}); }

void HttpWriter::put_bytes(const std::string& rel, const std::string& bytes) {
  request("PUT", rel, Body{"", &bytes});
}

void HttpWriter::remove(const std::string& rel) { request("DELETE", rel, {}); }

HttpWriter::Result HttpWriter::request(const char* method, const std::string& rel, const Body& body) {
  if (!is_safe_relative_path(rel)) fail(KH_ERROR_INVALID_ARGUMENT, "'" + rel + "' is not a safe relative path");
  const std::string url = url_ + "/" + encode_path(rel);
  const std::string shown = std::string(method) + " " + sanitize_url(url);
  for (int failures = 1;; ++failures) {
    Result r = attempt(method, url, body);
    std::string why;
    if (r.status == 0) {
      why = "connection failed";
    } else if (is_retryable_status(r.status)) {
      why = "HTTP " + std::to_string(r.status);
    } else if (r.status >= 200 && r.status <= 299) {
      return r;
    } else if ((r.status == 404 || r.status == 410) && std::string(method) != "PUT") {
      return r;  // HEAD: absent; DELETE: already gone
    } else if (r.status == 401 || r.status == 403) {
      fail(KH_ERROR_NETWORK, shown + ": HTTP " + std::to_string(r.status) +
                                 "; the hub refused the upload: set KH_PUBLISH_USER and KH_PUBLISH_PASSWORD (basic "
                                 "auth) or KH_PUBLISH_TOKEN (bearer) to credentials allowed to write");
    } else if (r.status == 405 || r.status == 501) {
      fail(KH_ERROR_NETWORK, shown + ": HTTP " + std::to_string(r.status) +
                                 "; the server does not accept uploads there: enable WebDAV PUT and DELETE for the "
                                 "hub's folder (nginx: dav_methods PUT DELETE; create_full_put_path on;)");
    } else if (r.status == 413) {
      fail(KH_ERROR_NETWORK, shown + ": HTTP 413; the server limits upload sizes (nginx: client_max_body_size)");
    } else if (r.status >= 300 && r.status <= 399) {
      fail(KH_ERROR_NETWORK, shown + ": HTTP " + std::to_string(r.status) +
                                 " redirect; uploads follow no redirects: publish to the hub's final URL");
    } else {
      fail(KH_ERROR_NETWORK, shown + ": unexpected HTTP " + std::to_string(r.status));
    }
    if (failures >= opt_.max_attempts)
      fail(KH_ERROR_NETWORK, shown + ": " + why + " (" + std::to_string(failures) + " attempts); try again later");
    const int ms = std::min(opt_.backoff_max_ms, opt_.backoff_initial_ms << std::min(failures - 1, 16));
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
}

HttpWriter::Result HttpWriter::attempt(const char* method, const std::string& url, const Body& body) {
  Call call;
  call.method = method;
  call.url = url;
  if (cred_.user.empty() && !cred_.bearer.empty()) call.headers.push_back("Authorization: Bearer " + cred_.bearer);
  call.user = cred_.user;
  call.password = cred_.password;
  call.keep_body = 0;
  if (call.method == "PUT") {
    call.has_body = true;
    if (body.bytes != nullptr) {
      call.body.bytes = body.bytes;
      call.body.length = body.bytes->size();
    } else {
      struct stat st {};
      if (::stat(body.local_path.c_str(), &st) != 0) fail_errno("cannot stat '" + body.local_path + "'", errno);
      call.body.file = body.local_path;
      call.body.length = static_cast<uint64_t>(st.st_size);
    }
  }
  const Answer a = perform_call(easy_, opt_, call);
  Result r;
  r.status = a.status;  // 0: a transient failure, retried
  r.content_length = a.content_length;
  return r;
}

}  // namespace kh::registry::detail

// ---- The http backend's write half ----

namespace kh::registry {
namespace {

class HttpHubWriter final : public HubWriter {
 public:
  HttpHubWriter(const std::string& url, const HubAccess& access)
      : reader_(open_http_hub(url, access.http)),
        writer_(reader_->url(), access.http, with_read_token(access)),
        lease_(access.lease) {}
  const std::string& url() const override { return reader_->url(); }
  Hub& reader() override { return *reader_; }

  bool has_blob(const std::string& sha256, uint64_t size) override {
    return writer_.remote_size(blob_path(sha256)) == size;  // content-addressed: same name and size, same bytes
  }
  void put_blob(const std::string& sha256, uint64_t size, const std::string& archive_path) override {
    (void)size;
    writer_.put(blob_path(sha256), archive_path);
  }
  void put_metadata(const std::string& rel, const std::string& bytes) override { writer_.put_bytes(rel, bytes); }
  void remove_metadata(const std::string& rel) override { writer_.remove(rel); }
  // A web server offers no lock: a lease file in the hub, taken as detail::acquire_lease says.
  std::unique_ptr<PublishLock> lock_publishers(const std::string& who) override {
    return detail::acquire_lease(*this, who, lease_);
  }

 private:
  // Uploads default to the hub's read token as bearer when no write credentials are set.
  static WriteCredentials with_read_token(const HubAccess& access) {
    WriteCredentials c = access.write;
    if (c.user.empty() && c.bearer.empty()) c.bearer = access.http.token;
    if (c.bearer.find_first_of("\r\n") != std::string::npos)
      fail(KH_ERROR_INVALID_ARGUMENT, "the publish token contains a line break");
    if (c.user.find(':') != std::string::npos) fail(KH_ERROR_INVALID_ARGUMENT, "the publish user name must not contain ':'");
    return c;
  }

  std::unique_ptr<Hub> reader_;
  detail::HttpWriter writer_;
  LeaseTiming lease_;
};

}  // namespace

std::unique_ptr<HubWriter> open_http_hub_writer(const std::string& url, const HubAccess& access) {
  return std::make_unique<HttpHubWriter>(url, access);
}

}  // namespace kh::registry
