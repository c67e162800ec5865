// Registry authentication: challenges, Basic, the bearer-token flow; see oci_auth.hpp.
#include "oci_auth.hpp"

#include <curl/curl.h>

#include <nlohmann/json.hpp>

#include "http_call.hpp"
#include "http_exchange.hpp"
#include "http_url.hpp"
#include "kh/registry/json_limits.hpp"
#include "kh/registry/minisign.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry::detail {
namespace {

constexpr size_t kMaxTokenAnswer = 64 * 1024;

bool same_origin(const std::string& url, const std::string& origin) {
  auto p = parse_url(url);
  return p && p->origin() == origin;
}

}  // namespace

AuthChallenge parse_auth_challenge(const std::string& header) {
  AuthChallenge c;
  size_t i = 0;
  while (i < header.size() && header[i] != ' ') ++i;
  c.scheme = lower(header.substr(0, i));
  while (i < header.size()) {
    while (i < header.size() && (header[i] == ' ' || header[i] == ',')) ++i;
    const size_t eq = header.find('=', i);
    if (eq == std::string::npos) break;
    const std::string key = lower(trim(header.substr(i, eq - i)));
    i = eq + 1;
    std::string value;
    if (i < header.size() && header[i] == '"') {
      for (++i; i < header.size() && header[i] != '"'; ++i) {
        if (header[i] == '\\' && i + 1 < header.size()) ++i;
        value += header[i];
      }
      ++i;  // the closing quote
    } else {
      const size_t end = header.find(',', i);
      value = trim(header.substr(i, end == std::string::npos ? std::string::npos : end - i));
      i = end == std::string::npos ? header.size() : end;
    }
    c.params[key] = value;
  }
  return c;
}

OciAuthorizer::OciAuthorizer(std::string origin, std::string scope, RegistryCredentials credentials, HttpOptions options)
    : origin_(std::move(origin)), scope_(std::move(scope)), cred_(std::move(credentials)), opt_(std::move(options)) {
  global_init();
  easy_ = curl_easy_init();
  if (easy_ == nullptr) fail(KH_ERROR_OUT_OF_MEMORY, "libcurl: out of memory");
}

OciAuthorizer::~OciAuthorizer() { curl_easy_cleanup(static_cast<CURL*>(easy_)); }

std::string OciAuthorizer::authorization(const std::string& url) {
  if (!same_origin(url, origin_)) return "";  // never to a blob redirect's host
  if (!token_.empty()) return "Bearer " + token_;
  if (!cred_.bearer.empty()) return "Bearer " + cred_.bearer;
  if (basic_ && !cred_.user.empty()) return "Basic " + minisign::base64_encode(cred_.user + ":" + cred_.password);
  return "";
}

bool OciAuthorizer::renew(const std::string& url, const std::string& www_authenticate) {
  (void)url;
  const AuthChallenge c = parse_auth_challenge(www_authenticate);
  if (c.scheme == "basic") {
    if (cred_.user.empty()) {
      why_ = "the registry asks for a user and password";
      return false;
    }
    if (basic_) {
      why_ = "the registry refused the user and password";
      return false;
    }
    basic_ = true;
    return true;
  }
  if (c.scheme == "bearer") {
    std::string token = fetch_token(c);
    if (token.empty() || token == token_) return false;
    token_ = std::move(token);
    return true;
  }
  why_ = "the registry's challenge '" + printable(www_authenticate, 200) + "' is neither Basic nor Bearer";
  return false;
}

std::string OciAuthorizer::fetch_token(const AuthChallenge& c) {
  const auto realm_it = c.params.find("realm");
  if (realm_it == c.params.end() || realm_it->second.empty()) {
    why_ = "the registry's Bearer challenge names no realm";
    return "";
  }
  const std::string& realm = realm_it->second;
  const auto realm_url = parse_url(realm);
  const auto registry_url = parse_url(origin_);
  // Credentials go to the realm over https, or over http only to the registry's own host
  // (a registry on loopback with its token service beside it).
  if (!realm_url || (realm_url->scheme != "https" &&
                     !(realm_url->scheme == "http" && registry_url && realm_url->host == registry_url->host))) {
    why_ = "the token realm " + sanitize_url(realm) + " is not https; kh sends no credentials there";
    return "";
  }
  std::string url = realm + (realm.find('?') == std::string::npos ? "?" : "&");
  const auto service = c.params.find("service");
  if (service != c.params.end()) url += "service=" + percent_encode(service->second, false) + "&";
  const auto scope = c.params.find("scope");
  if (scope != c.params.end() && scope->second != scope_) url += "scope=" + percent_encode(scope->second, false) + "&";
  url += "scope=" + percent_encode(scope_, false);
  Call call;
  call.url = url;
  call.user = cred_.user;
  call.password = cred_.password;
  call.keep_body = kMaxTokenAnswer;
  Answer a;
  for (int attempt = 1;; ++attempt) {
    a = perform_call(easy_, opt_, call);
    if (a.status != 0 && !is_retryable_status(a.status)) break;
    if (attempt >= opt_.max_attempts) {
      why_ = "the token service " + sanitize_url(realm) + " did not answer (" +
             (a.status == 0 ? a.error : "HTTP " + std::to_string(a.status)) + ")";
      return "";
    }
  }
  if (a.status == 401 || a.status == 403) {
    why_ = "the token service " + sanitize_url(realm) + " refused " +
           (cred_.user.empty() ? std::string("anonymous access") : "the credentials of user '" + printable(cred_.user) + "'");
    return "";
  }
  if (a.status != 200) {
    why_ = "the token service " + sanitize_url(realm) + " answered HTTP " + std::to_string(a.status);
    return "";
  }
  std::string token;
  try {
    check_json_depth(a.body, "the token service's answer", KH_ERROR_NETWORK);
    const nlohmann::json j = nlohmann::json::parse(a.body);
    if (j.contains("token") && j["token"].is_string()) token = j["token"].get<std::string>();
    if (token.empty() && j.contains("access_token") && j["access_token"].is_string())
      token = j["access_token"].get<std::string>();
  } catch (const nlohmann::json::exception&) {
  }
  if (token.empty() || token.find_first_of("\r\n") != std::string::npos) {
    why_ = "the token service " + sanitize_url(realm) + " gave no usable token";
    return "";
  }
  return token;
}

std::string OciAuthorizer::refused_hint() const {
  return "; the registry refused access" + (why_.empty() ? std::string() : " (" + why_ + ")") +
         ": set KH_REGISTRY_AUTH=user:password, or log in so that the `auths` of ~/.docker/config.json (or "
         "$DOCKER_CONFIG/config.json) hold this registry, or set KH_TOKEN to a registry token";
}

}  // namespace kh::registry::detail
