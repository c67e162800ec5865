// The table of hub schemes (hub_schemes.hpp): a backend is one row here and its file.
#include "kh/registry/hub_schemes.hpp"

#include "kh/registry/status_error.hpp"

namespace kh::registry {

// Each backend's constructors, defined in its own file.
std::unique_ptr<Hub> open_file_hub(const std::string& url, const HubAccess& access);               // hub_file.cpp
std::unique_ptr<HubWriter> open_file_hub_writer(const std::string& url, const HubAccess& access);  // hub_file.cpp
std::unique_ptr<HubWriter> open_http_hub_writer(const std::string& url, const HubAccess& access);  // http_writer.cpp

namespace {

std::unique_ptr<Hub> open_http_hub_with(const std::string& url, const HubAccess& access) {
  return open_http_hub(url, access.http);
}

}  // namespace

const std::vector<HubScheme>& hub_schemes() {
  static const std::vector<HubScheme> table = {
      {"file", "file:///absolute/path", &open_file_hub, &open_file_hub_writer},
      {"http", "http://host/path", &open_http_hub_with, &open_http_hub_writer},
      {"https", "https://host/path", &open_http_hub_with, &open_http_hub_writer},
  };
  return table;
}

namespace {

const HubScheme& scheme_of(const std::string& url) {
  const size_t colon = url.find("://");
  std::string scheme = colon == std::string::npos ? "" : url.substr(0, colon);
  for (char& c : scheme)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  for (const HubScheme& s : hub_schemes())
    if (scheme == s.scheme) return s;
  std::string known;
  const std::vector<HubScheme>& all = hub_schemes();
  for (size_t i = 0; i < all.size(); ++i)
    known += std::string(i == 0 ? "" : i + 1 == all.size() ? " and " : ", ") + all[i].example;
  fail(KH_ERROR_INVALID_ARGUMENT,
       "hub URL '" + url + "': " + (scheme.empty() ? "no scheme" : "kh cannot read " + scheme + ":// hubs") +
           "; kh reads " + known + " hubs" +
           (colon == std::string::npos && !url.empty() && url[0] == '/' ? " (did you mean file://" + url + "?)" : ""));
}

}  // namespace

std::unique_ptr<Hub> open_hub(const std::string& url, const HubAccess& access) { return scheme_of(url).open(url, access); }

std::unique_ptr<Hub> open_hub(const std::string& url) { return open_hub(url, HubAccess{}); }

std::unique_ptr<HubWriter> open_hub_writer(const std::string& url, const HubAccess& access) {
  const HubScheme& s = scheme_of(url);
  if (s.open_writer == nullptr)
    fail(KH_ERROR_UNSUPPORTED, "hub URL '" + url + "': kh cannot write to " + s.scheme + ":// hubs");
  return s.open_writer(url, access);
}

}  // namespace kh::registry
