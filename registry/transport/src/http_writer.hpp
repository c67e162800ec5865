// Writing to an http(s) hub (the write half of the http backend): HEAD, PUT and DELETE of
// single files, as a WebDAV-enabled server (nginx: dav_methods PUT DELETE) or an object
// store accepts them. Internal to the registry; open_hub_writer() hands out its HubWriter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kh/registry/hub_schemes.hpp"

namespace kh::registry::detail {

class HttpWriter {
 public:
  // Throws StatusError(KH_ERROR_INVALID_ARGUMENT) for a URL open_http_hub would refuse.
  HttpWriter(const std::string& hub_url, HttpOptions options, WriteCredentials credentials);
  ~HttpWriter();
  HttpWriter(const HttpWriter&) = delete;
  HttpWriter& operator=(const HttpWriter&) = delete;

  // The size of the hub's file at rel, nullopt when it has none (404).
  std::optional<uint64_t> remote_size(const std::string& rel);
  // Uploads a local file to rel (the server creates the folders).
  void put(const std::string& rel, const std::string& local_path);
  // Uploads bytes to rel.
  void put_bytes(const std::string& rel, const std::string& bytes);
  // Deletes rel; a file already gone is fine.
  void remove(const std::string& rel);

 private:
  struct Result {
    long status = 0;
    int64_t content_length = -1;
  };
  // One request, retried on transient failures; throws on final ones.
  // A PUT's body: a local file, or bytes in memory.
  struct Body {
    std::string local_path;
    const std::string* bytes = nullptr;
  };
  Result request(const char* method, const std::string& rel, const Body& body);
  Result attempt(const char* method, const std::string& url, const Body& body);

  std::string url_;
  HttpOptions opt_;
  WriteCredentials cred_;
  void* easy_ = nullptr;  // a CURL easy handle (curl.h stays inside http_writer.cpp)
};

}  // namespace kh::registry::detail
