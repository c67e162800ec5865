// How kh authenticates to an OCI registry (distribution spec, "Authentication"): anonymous
// first; on a 401, the challenge says how: `Basic realm=...` takes the user's credentials
// as they are, `Bearer realm=...,service=...,scope=...` sends them (or nothing) to the
// realm for a short-lived token, which then goes to the registry. The credentials go only
// to the registry's own origin and to its realm; the token only to the registry; neither
// follows a blob redirect to another host. Internal to the registry (hub_oci.cpp).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "http_client.hpp"
#include "kh/registry/hub_schemes.hpp"

namespace kh::registry::detail {

// A WWW-Authenticate challenge: its scheme ("basic", "bearer", lowercased) and parameters.
struct AuthChallenge {
  std::string scheme;
  std::map<std::string, std::string> params;  // realm, service, scope, error
};
// Parses `Bearer realm="...",service="...",scope="..."`; the scheme is empty when the
// value is not a challenge.
AuthChallenge parse_auth_challenge(const std::string& header);

class OciAuthorizer final : public HttpAuthorizer {
 public:
  // origin: the registry's "https://host:port"; scope: what this client needs
  // ("repository:<ns>:pull", or ":pull,push" to publish).
  OciAuthorizer(std::string origin, std::string scope, RegistryCredentials credentials, HttpOptions options);
  ~OciAuthorizer() override;

  std::string authorization(const std::string& url) override;
  bool renew(const std::string& url, const std::string& www_authenticate) override;
  std::string refused_hint() const override;

 private:
  // A token from the realm for `scopes`; "" with why_ set when the realm refused.
  std::string fetch_token(const AuthChallenge& c);

  std::string origin_, scope_;
  RegistryCredentials cred_;
  HttpOptions opt_;
  void* easy_ = nullptr;  // a CURL easy handle for token requests
  std::string token_;     // from the realm
  bool basic_ = false;    // the registry asked for Basic
  std::string why_;       // what the last renewal met, for the final message
};

}  // namespace kh::registry::detail
