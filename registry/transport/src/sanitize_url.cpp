// URLs safe to print: credentials and queries dropped (sanitize_url, http_options.hpp).
#include <string>

#include "kh/registry/http_options.hpp"
#include "kh/registry/printable.hpp"

namespace kh::registry {

std::string sanitize_url(const std::string& url) {
  std::string s = url;
  size_t scheme_end = s.find("://");
  size_t host_start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  size_t path_start = s.find_first_of("/?#", host_start);
  size_t at = s.rfind('@', path_start == std::string::npos ? std::string::npos : path_start);
  if (at != std::string::npos && at >= host_start && (path_start == std::string::npos || at < path_start))
    s.erase(host_start, at + 1 - host_start);
  size_t q = s.find_first_of("?#");
  if (q != std::string::npos) s = s.substr(0, q) + (s[q] == '?' ? "?..." : "");
  return printable(s);  // a URL may come from a server (Location): no control bytes reach a terminal
}

}  // namespace kh::registry
