// One blocking HTTP request on an easy handle, of any method, with a body from memory or
// from a range of a file, following no redirect, keeping the headers writers need: the
// request under every upload (http PUT, OCI pushes) and token fetch. Internal to the registry.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kh/registry/http_options.hpp"

namespace kh::registry::detail {

// Bytes [offset, offset + length) of `bytes` in memory, or else of `file`; none at all
// (Content-Length 0) when length is 0.
struct CallBody {
  const std::string* bytes = nullptr;
  std::string file;
  uint64_t offset = 0, length = 0;
};

struct Call {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string user, password;        // HTTP basic auth when user is not empty
  bool has_body = false;             // PUT, PATCH, POST with `body` (none: Content-Length 0)
  CallBody body;
  size_t keep_body = 64 * 1024;      // bytes of the answer's body kept; the rest is dropped
};

struct Answer {
  long status = 0;     // 0: a transient failure (connection, timeout, reset): may be tried again
  std::string error;   // what failed, when status is 0
  int64_t content_length = -1;
  std::map<std::string, std::string> headers;  // names lowercased (the last of each)
  std::string body;    // at most keep_body bytes
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// Performs `call` on `easy` (a CURL*, reset first). Throws StatusError(KH_ERROR_NETWORK)
// for a failure no retry mends (an untrusted certificate, a malformed URL), naming the
// request; KH_ERROR_IO when a body file cannot be read.
Answer perform_call(void* easy, const HttpOptions& options, const Call& call);

}  // namespace kh::registry::detail
