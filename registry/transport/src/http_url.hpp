// URL helpers shared by the libcurl users of the registry (hub_http.cpp, http_writer.cpp):
// parsing through libcurl's URL API, path encoding, origins. Internal to the registry.
#pragma once

#include <optional>
#include <string>

namespace kh::registry::detail {

// curl_global_init, once per process.
void global_init();

std::string lower(std::string s);
std::string strip_slashes(std::string s);

struct UrlParts {
  std::string scheme, host, port, path;
  bool has_user = false, has_query = false, has_fragment = false;
  std::string origin() const { return scheme + "://" + host + ":" + port; }
};

// nullopt when libcurl cannot parse the URL or it lacks a scheme, host or port.
std::optional<UrlParts> parse_url(const std::string& url);

// Percent-encodes a safe relative path for a URL: unreserved characters and '/' stay.
std::string encode_path(const std::string& rel);

}  // namespace kh::registry::detail
