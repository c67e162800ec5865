// http(s):// hubs: the options of a connection to one hub, and the constructor the scheme
// table uses. install::Settings fills the options from the environment and the config file.
#pragma once

#include <memory>
#include <string>

#include "kh/registry/hub.hpp"

namespace kh::registry {

// The most blob transfers one Hub::fetch_blobs runs at once, whatever the options say.
inline constexpr int kMaxParallelDownloads = 16;

struct HttpOptions {
  // Sent as "Authorization: Bearer <token>" only to the hub's own scheme, host and port;
  // never after a redirect elsewhere, never in a message. Empty: no Authorization header.
  std::string token;
  // A PEM file of CAs to trust instead of the system's (KH_CA_BUNDLE). Empty: system CAs.
  std::string ca_bundle;

  long connect_timeout_s = 15;

  // Deadlines (docs/http-hubs.md, "Deadlines"). One request may take at most
  // max(transfer_min_timeout_s, bytes it may bring / transfer_min_rate) seconds, connect to
  // last byte, whatever the server does; a server that drips a body above the low-speed
  // floor is cut off there, and that is final (not retried). KH_TRANSFER_MIN_TIMEOUT,
  // KH_TRANSFER_MIN_RATE (bytes/s).
  double transfer_min_timeout_s = 30;
  double transfer_min_rate = 64 * 1024;
  // Every request of one Hub (one get or load: metadata, retries, waits, blobs) ends
  // within operation_timeout_s of opening it; 0: no such limit. KH_OPERATION_TIMEOUT.
  double operation_timeout_s = 1800;
  // A transfer slower than low_speed_bytes_per_s for low_speed_time_s seconds is dropped
  // (and retried, resuming where it stopped).
  long low_speed_bytes_per_s = 1024;
  long low_speed_time_s = 30;

  // Attempts per request: connection failures, timeouts, 408, 429, 5xx. A failure after
  // a blob download brought at least 1 MiB since the previous one is not counted (it
  // resumes); every fetch still stops after 64 requests in all.
  int max_attempts = 5;
  // Backoff before attempt n (n >= 1): min(backoff_max_ms, backoff_initial_ms * 2^(n-1)),
  // scaled by a random factor in [0.5, 1]. Retry-After (seconds) replaces it, capped at
  // retry_after_max_s.
  int backoff_initial_ms = 500;
  int backoff_max_ms = 8000;
  int retry_after_max_s = 30;

  // Redirects followed per request. Each hop must stay on https (a plain-http hub may also
  // redirect to its own scheme, host and port); others are refused.
  int max_redirects = 5;

  // Blob transfers Hub::fetch_blobs runs at once (KH_PARALLEL_DOWNLOADS, 1..16).
  int max_parallel = 4;

  enum class Progress { Auto, Never, Always };
  // A progress line on stderr for blob downloads; Auto: only when stderr is a terminal.
  Progress progress = Progress::Auto;
};

// An http:// or https:// hub. Throws StatusError(KH_ERROR_INVALID_ARGUMENT) for a
// malformed URL, one with user:password@ (use a token instead), a query or a fragment.
std::unique_ptr<Hub> open_http_hub(const std::string& url, HttpOptions options);

// The URL without user info and with any query replaced by "?...": safe for messages.
std::string sanitize_url(const std::string& url);

}  // namespace kh::registry
