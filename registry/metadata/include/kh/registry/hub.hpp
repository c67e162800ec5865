// A hub's read half: a static tree of files (see docs/hub.md) reached by URL. Only the
// interface lives here, beside the metadata that names the tree's paths, so that every role
// above (store, trust, transport, publish) may use a hub without depending on a backend. The
// backends (file://, http(s)://, oci://) are transport's; which one serves which URL, and
// open_hub(), are in hub_schemes.hpp. The write half is hub_writer.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kh::registry {

// The answer to a conditional metadata request.
struct MetadataFetch {
  bool not_modified = false;  // the hub said the caller's copy (cached_etag) is current; text is empty
  std::string text;           // the file, when not_modified is false
  std::string etag;           // the validator to store beside the text and send next time; may be empty
};

// One blob of a Hub::fetch_blobs batch.
struct BlobRequest {
  std::string sha256;
  uint64_t size = 0;  // the size the signed index gives
  int out_fd = -1;    // written from its current offset
  // Bytes of the blob already in out_fd just before that offset (an interrupted earlier
  // download): http(s) hubs ask only for the rest (Range), and the whole is verified at
  // the end. Other hubs start over (out_fd is truncated).
  uint64_t resume_from = 0;
  // What the blob is, for the progress line ("org/name 1.0.0"); empty: its digest is shown.
  std::string label;
};

class Hub {
 public:
  virtual ~Hub() = default;
  // The URL as given, normalised (no trailing '/').
  virtual const std::string& url() const = 0;
  // A short, filesystem-safe name for this hub, stable across runs: used for its folder
  // in the cache ("file-<16 hex of sha256(url)>").
  virtual std::string id() const = 0;
  // Reads a metadata file (e.g. "repos/org/name/index.json"). Throws StatusError:
  // KH_ERROR_NOT_FOUND when the hub has no such file, KH_ERROR_NETWORK/KH_ERROR_IO on
  // transfer failures, KH_ERROR_BAD_METADATA when it is larger than max_bytes.
  virtual std::string fetch_metadata(const std::string& relative_path, uint64_t max_bytes) = 0;
  // Same, but when cached_etag is not empty and the hub says that copy is current (HTTP
  // 304), returns not_modified and no text: the caller reuses the text it stored with that
  // ETag (already verified when stored). Hubs without validators (file://) always fetch.
  virtual MetadataFetch fetch_metadata_conditional(const std::string& relative_path, uint64_t max_bytes,
                                                   const std::string& cached_etag) {
    (void)cached_etag;
    MetadataFetch r;
    r.text = fetch_metadata(relative_path, max_bytes);
    return r;
  }
  // Streams blob <sha256> into out_fd (at its current offset), hashing as it goes and
  // never writing more than expected_size bytes. Throws StatusError(KH_ERROR_VERIFICATION)
  // when the size or the digest differs; KH_ERROR_NOT_FOUND when the hub lacks it.
  virtual void fetch_blob(const std::string& sha256, uint64_t expected_size, int out_fd) = 0;
  // Fetches every blob as fetch_blob does. http(s) hubs run several transfers at once on
  // their shared connections (HttpOptions::max_parallel); others fetch one after another.
  // Throws at the first blob that fails; the other outputs may then hold partial bytes,
  // which the caller must discard.
  virtual void fetch_blobs(const std::vector<BlobRequest>& blobs) {
    for (const BlobRequest& b : blobs) {
      if (b.resume_from > 0) rewind_for_restart(b);
      fetch_blob(b.sha256, b.size, b.out_fd);
    }
  }

  // From now until clear_deadline_limit(), every request must end within `seconds` (or by
  // the hub's own operation deadline, if that comes first); `setting` names what set the
  // limit, for messages (e.g. "KH_REFRESH_TIMEOUT"), and `why` how, when not as is. Hubs
  // without deadlines ignore it.
  virtual void set_deadline_limit(double seconds, const std::string& setting, const std::string& why = "") {
    (void)seconds;
    (void)setting;
    (void)why;
  }
  virtual void clear_deadline_limit() {}

 protected:
  // Drops a resumed request's earlier bytes: out_fd truncated to where they began.
  static void rewind_for_restart(const BlobRequest& b);
};

// hub.fetch_metadata(relative_path, max_bytes), or nullopt when the hub has no such file
// (KH_ERROR_NOT_FOUND); every other error is thrown.
std::optional<std::string> fetch_metadata_if_present(Hub& hub, const std::string& relative_path, uint64_t max_bytes);

// Holds a deadline limit on a hub for a scope (Hub::set_deadline_limit).
class ScopedDeadlineLimit {
 public:
  ScopedDeadlineLimit(Hub& hub, double seconds, const std::string& setting, const std::string& why = "") : hub_(hub) {
    hub_.set_deadline_limit(seconds, setting, why);
  }
  ~ScopedDeadlineLimit() { hub_.clear_deadline_limit(); }
  ScopedDeadlineLimit(const ScopedDeadlineLimit&) = delete;
  ScopedDeadlineLimit& operator=(const ScopedDeadlineLimit&) = delete;

 private:
  Hub& hub_;
};

// Copies from a reader to out_fd while hashing; fails with KH_ERROR_VERIFICATION as soon
// as more than expected_size bytes arrive, or at the end if the size or digest differs.
// read(buf, cap) returns the bytes read, 0 at the end; it throws on errors.
// `what` names the blob in messages.
template <typename Reader>
void copy_verified(Reader&& read, int out_fd, const std::string& expected_sha256, uint64_t expected_size,
                   const std::string& what);

}  // namespace kh::registry

#include "kh/registry/copy_verified.inl"
