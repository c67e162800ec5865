// The write half of a hub: what `kernels publish`, `kernels trust init|rotate` and `kernels
// mirror` need of any backend. Paths are the hub's relative paths (docs/hub.md, "A hub is a
// static tree"); each backend maps them onto its storage (files, WebDAV PUT, an OCI
// registry's blobs and tags). The read half is the same hub's Hub (reader()).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kh/registry/hub.hpp"

namespace kh::registry {

// Held while one publisher changes a hub's metadata: every other kh publisher of the same
// hub waits for it, or is refused with the holder's name (docs/hub.md, "Two publishers").
class PublishLock {
 public:
  virtual ~PublishLock() = default;
  // Throws StatusError(KH_ERROR_NETWORK) when the lock is no longer this publisher's (a
  // lease that ran out, broken by another publisher): nothing more may be written then.
  virtual void check_held() = 0;
};

// How a lease-based publish lock times itself (hubs with no lock of their own: http(s),
// oci; see docs/hub.md, "Two publishers"). A publisher reads the lease, writes its own when
// there is none, waits settle_s and reads it again: it holds the lock only if its own lease
// is still there. A lease written more than settle_s after the read that found the hub free
// is not trusted (a slow write could land after another publisher's check).
struct LeaseTiming {
  double settle_s = 2;
  double ttl_s = 600;   // a lease older than this (by its own clock, plus a minute) is stale: taken over
  double wait_s = 300;  // how long to wait for another publisher's lease before giving up
};

class HubWriter {
 public:
  virtual ~HubWriter() = default;
  // The hub's URL, as its reader gives it.
  virtual const std::string& url() const = 0;
  // The read half of the same hub (same connections and credentials).
  virtual Hub& reader() = 0;
  // True for a hub whose files are the operator's own (file://): its current metadata is
  // taken as it is. A remote hub's is verified as a client verifies it (the publisher's
  // pinned root) before anything is merged into it and signed again.
  virtual bool is_local() const { return false; }

  // Whether the hub holds blob <sha256> with exactly `size` bytes (content-addressed: then
  // it is not sent again). A file hub re-hashes it; a remote hub trusts its name and size.
  virtual bool has_blob(const std::string& sha256, uint64_t size) = 0;
  // Uploads the archive at archive_path (already verified by the caller to be sha256/size)
  // as blob <sha256>. Where the backend can, the far side checks the digest too.
  virtual void put_blob(const std::string& sha256, uint64_t size, const std::string& archive_path) = 0;
  // Writes or replaces one metadata file (an index, its signatures, a root, the catalog).
  virtual void put_metadata(const std::string& relative_path, const std::string& bytes) = 0;
  // Removes one metadata file; one already absent is fine.
  virtual void remove_metadata(const std::string& relative_path) = 0;
  // Writes a repo's index with its signatures as one unit: index.json.minisig (removed when
  // empty) and index.json.sigs (removed when empty), then index.json, so a reader that sees
  // the new index finds its signatures. A backend that can replace the three at once (an
  // OCI registry: one manifest) does; that is what this default does file by file.
  virtual void put_index(const std::string& repo, const std::string& index, const std::string& minisig,
                         const std::string& sigs);

  // Excludes every other kh publisher of this hub until the result is destroyed. `who`
  // names this publisher in what the others are told while they wait.
  virtual std::unique_ptr<PublishLock> lock_publishers(const std::string& who) = 0;
};

}  // namespace kh::registry
