// The GET side of every http-based backend (http(s):// hubs, oci:// registries): one
// libcurl multi handle with one easy handle for metadata and one per parallel blob
// transfer, so connections are kept alive and shared; retries with jittered backoff;
// deadlines; resumed blobs (Range); redirects checked hop by hop; authorization only for
// the server's own origin, as its HttpAuthorizer says. Internal to the registry.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http_exchange.hpp"
#include "http_url.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"

namespace kh::registry::detail {

// How a backend's requests authenticate.
class HttpAuthorizer {
 public:
  virtual ~HttpAuthorizer() = default;
  // The Authorization header value for a request to `url`, "" for none. Asked for every
  // request, a redirect target's too: answer only for the server's own origin.
  virtual std::string authorization(const std::string& url) = 0;
  // After a 401 from the server's own origin with this challenge: true when new
  // credentials were obtained and the request should be made again at once.
  virtual bool renew(const std::string& url, const std::string& www_authenticate) {
    (void)url;
    (void)www_authenticate;
    return false;
  }
  // What a final 401 or 403 tells the user to do ("; set KH_TOKEN ...").
  virtual std::string refused_hint() const = 0;
};

// A GET's answer, with what the headers said.
struct GetResult {
  MetadataFetch fetch;
  std::string content_type, docker_content_digest;
};

class HttpClient {
 public:
  // hub_url: the hub as the user named it (messages, the cache id); origin: the server
  // every request goes to first. Throws StatusError(KH_ERROR_OUT_OF_MEMORY).
  HttpClient(std::string hub_url, UrlParts origin, HttpOptions options, std::shared_ptr<HttpAuthorizer> auth);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  const std::string& hub_url() const;
  // "<hub URL's scheme>-<16 hex of sha256(hub URL)>".
  std::string id() const;
  const HttpOptions& options() const;
  bool show_progress() const;

  // One GET of a body of at most max_bytes, with retries, redirects and deadlines.
  // `what` names it in messages ("repos/org/name/index.json"); if_none_match non-empty: a
  // conditional request (a 304 gives not_modified). KH_ERROR_NOT_FOUND on 404 and 410.
  GetResult get(const std::string& url, const std::string& what, uint64_t max_bytes, const std::string& if_none_match,
                const std::string& accept = "");
  // Hub::fetch_blobs, blob <sha256> being at blob_url(sha256).
  void fetch_blobs(const std::vector<BlobRequest>& blobs, const std::function<std::string(const std::string&)>& blob_url);

  void set_deadline_limit(double seconds, const std::string& setting, const std::string& why = "");
  void clear_deadline_limit();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// A hub whose every request goes through one HttpClient (an http(s) hub, an OCI registry
// hub): what does not depend on where the hub's files lie is written once here. A subclass
// says where they lie: fetch_metadata_conditional, and blob_url for the blobs.
class HttpClientHub : public Hub {
 public:
  HttpClientHub(std::string hub_url, UrlParts origin, HttpOptions options, std::shared_ptr<HttpAuthorizer> auth)
      : client_(std::move(hub_url), std::move(origin), std::move(options), std::move(auth)) {}

  const std::string& url() const override { return client_.hub_url(); }
  std::string id() const override { return client_.id(); }

  std::string fetch_metadata(const std::string& relative_path, uint64_t max_bytes) override {
    return fetch_metadata_conditional(relative_path, max_bytes, "").text;
  }
  // Pure again: Hub's default calls fetch_metadata, which calls this.
  MetadataFetch fetch_metadata_conditional(const std::string& relative_path, uint64_t max_bytes,
                                           const std::string& cached_etag) override = 0;
  void fetch_blob(const std::string& sha256, uint64_t expected_size, int out_fd) override {
    fetch_blobs({BlobRequest{sha256, expected_size, out_fd}});
  }
  void fetch_blobs(const std::vector<BlobRequest>& blobs) override {
    client_.fetch_blobs(blobs, [this](const std::string& sha256) { return blob_url(sha256); });
  }
  void set_deadline_limit(double seconds, const std::string& setting, const std::string& why) override {
    client_.set_deadline_limit(seconds, setting, why);
  }
  void clear_deadline_limit() override { client_.clear_deadline_limit(); }

  // Where blob <sha256> is fetched from.
  virtual std::string blob_url(const std::string& sha256) const = 0;

 protected:
  HttpClient client_;
};

}  // namespace kh::registry::detail
