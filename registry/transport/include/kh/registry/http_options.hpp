// http(s):// hubs: the options of a connection to one hub, and the constructor the scheme
// table uses. install::Settings fills the options from the environment and the config file.
#pragma once

#include <memory>
#include <string>

#include "kh/registry/deadline.hpp"
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
  // Every request of one Hub (one get or load: metadata, retries, waits, blobs) ends by
  // the operation's deadline: `deadline` when set (install::Session sets it when the
  // operation begins: kh_load_options.timeout_ms, --timeout, KH_OPERATION_TIMEOUT), else
  // operation_timeout_s after opening the hub; 0: no such limit. Passing it is
  // KH_ERROR_TIMEOUT, naming the hub and what was awaited.
  Deadline deadline;
  double operation_timeout_s = 1800;

  // The rate floor (docs/http-hubs.md, "Deadlines"): once a request has run floor_grace_s
  // seconds (connecting, TLS, a server that thinks before it answers), fewer than
  // floor_rate bytes/s (headers and body) over the last floor_window_s seconds end it. A
  // drip, a slowloris, a server that stalls before or after its headers are all cut there,
  // and that is final, unless the request had brought kResumeProgressBytes since the last
  // failure (a real link that faltered: it resumes, within the operation's deadline).
  // KH_TRANSFER_FLOOR_RATE (0: no floor), KH_TRANSFER_FLOOR_WINDOW, KH_TRANSFER_FLOOR_GRACE.
  double floor_rate = 8 * 1024;
  double floor_window_s = 10;
  double floor_grace_s = 10;
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
