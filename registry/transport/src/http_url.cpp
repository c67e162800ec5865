// URL helpers for the registry's libcurl users; see http_url.hpp.
#include "http_url.hpp"

#include <curl/curl.h>

#include "kh/registry/status_error.hpp"

namespace kh::registry::detail {

void global_init() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) fail(KH_ERROR_INTERNAL, std::string("libcurl failed to initialise: ") + curl_easy_strerror(rc));
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::optional<UrlParts> parse_url(const std::string& url) {
  global_init();
  CURLU* u = curl_url();
  if (u == nullptr) fail(KH_ERROR_OUT_OF_MEMORY, "out of memory parsing a URL");
  std::optional<UrlParts> out;
  if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    auto part = [&](CURLUPart what, unsigned flags, std::string* into) {
      char* v = nullptr;
      CURLUcode rc = curl_url_get(u, what, &v, flags);
      if (rc == CURLUE_OK && v != nullptr) *into = v;
      curl_free(v);
      return rc == CURLUE_OK;
    };
    UrlParts p;
    std::string ignored;
    if (part(CURLUPART_SCHEME, 0, &p.scheme) && part(CURLUPART_HOST, 0, &p.host) &&
        part(CURLUPART_PORT, CURLU_DEFAULT_PORT, &p.port)) {
      part(CURLUPART_PATH, 0, &p.path);
      p.scheme = lower(p.scheme);
      p.host = lower(p.host);
      p.has_user = part(CURLUPART_USER, 0, &ignored) || part(CURLUPART_PASSWORD, 0, &ignored);
      p.has_query = part(CURLUPART_QUERY, 0, &ignored);
      p.has_fragment = part(CURLUPART_FRAGMENT, 0, &ignored);
      out = p;
    }
  }
  curl_url_cleanup(u);
  return out;
}

std::string encode_path(const std::string& rel) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : rel) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string strip_slashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace kh::registry::detail
