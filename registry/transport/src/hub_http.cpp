// http:// and https:// hubs: the static tree of docs/hub.md at a URL, read through the
// shared HttpClient (http_client.hpp) with a bearer token for the hub's own origin.
#include <memory>

#include "http_client.hpp"
#include "http_url.hpp"
#include "kh/registry/detail/internal.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry {
namespace {

// "Authorization: Bearer <token>" to the hub's own scheme, host and port only.
class BearerToOrigin final : public detail::HttpAuthorizer {
 public:
  BearerToOrigin(std::string token, std::string origin) : token_(std::move(token)), origin_(std::move(origin)) {}
  std::string authorization(const std::string& url) override {
    if (token_.empty()) return "";
    auto p = detail::parse_url(url);
    return p && p->origin() == origin_ ? "Bearer " + token_ : "";
  }
  std::string refused_hint() const override {
    return token_.empty() ? "; the hub needs a token: set KH_TOKEN or add one for this hub in "
                            "$XDG_CONFIG_HOME/kh/config.json"
                          : "; the hub refused the token: check KH_TOKEN or the config file";
  }

 private:
  std::string token_, origin_;
};

class HttpHub final : public detail::HttpClientHub {
 public:
  HttpHub(std::string url, detail::UrlParts parts, HttpOptions options)
      : HttpClientHub(url, parts, options, std::make_unique<BearerToOrigin>(options.token, parts.origin())) {}

  MetadataFetch fetch_metadata_conditional(const std::string& relative_path, uint64_t max_bytes,
                                           const std::string& cached_etag) override {
    if (!detail::is_safe_relative_path(relative_path))
      fail(KH_ERROR_INVALID_ARGUMENT, "hub " + sanitize_url(url()) + ": '" + relative_path + "' is not a safe relative path");
    return client_.get(url() + "/" + detail::encode_path(relative_path), relative_path, max_bytes, cached_etag).fetch;
  }
  std::string blob_url(const std::string& sha256) const override { return url() + "/" + blob_path(sha256); }
};

}  // namespace

std::unique_ptr<Hub> open_http_hub(const std::string& url, HttpOptions options) {
  const std::string shown = sanitize_url(url);
  auto parts = detail::parse_url(url);
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
  return std::make_unique<HttpHub>(detail::strip_slashes(url), std::move(*parts), std::move(options));
}

}  // namespace kh::registry
