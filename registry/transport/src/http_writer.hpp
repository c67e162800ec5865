// Writing to an http(s) hub for `kernels publish`: HEAD, PUT and DELETE of single files,
// as a WebDAV-enabled server (nginx: dav_methods PUT DELETE) or an object store accepts
// them. Internal to the registry (publish_http.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kh/registry/http_options.hpp"

namespace kh::registry::detail {

// How uploads authenticate. Sent only to the hub's own origin: uploads never follow redirects.
struct HttpWriteCredentials {
  std::string bearer;          // "Authorization: Bearer <bearer>"
  std::string user, password;  // HTTP basic auth, when user is not empty
  // From the environment: KH_PUBLISH_USER + KH_PUBLISH_PASSWORD (basic), else
  // KH_PUBLISH_TOKEN, else the hub's read token (KH_TOKEN or the config file) as bearer.
  static HttpWriteCredentials from_environment(const HttpOptions& read_options);
};

class HttpWriter {
 public:
  // Throws StatusError(KH_ERROR_INVALID_ARGUMENT) for a URL open_http_hub would refuse.
  HttpWriter(const std::string& hub_url, HttpOptions options, HttpWriteCredentials credentials);
  ~HttpWriter();
  HttpWriter(const HttpWriter&) = delete;
  HttpWriter& operator=(const HttpWriter&) = delete;

  // The size of the hub's file at rel, nullopt when it has none (404).
  std::optional<uint64_t> remote_size(const std::string& rel);
  // Uploads a local file to rel (the server creates the folders).
  void put(const std::string& rel, const std::string& local_path);
  // Deletes rel; a file already gone is fine.
  void remove(const std::string& rel);

 private:
  struct Result {
    long status = 0;
    int64_t content_length = -1;
  };
  // One request, retried on transient failures; throws on final ones.
  Result request(const char* method, const std::string& rel, const std::string& local_path);
  Result attempt(const char* method, const std::string& url, const std::string& local_path);

  std::string url_;
  HttpOptions opt_;
  HttpWriteCredentials cred_;
  void* easy_ = nullptr;  // a CURL easy handle (curl.h stays inside http_writer.cpp)
};

}  // namespace kh::registry::detail
