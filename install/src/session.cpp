// A session's hubs and verified indexes; see session.hpp.
#include "kh/install/session.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>

#include "kh/registry/cache_layout.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::install {
namespace {

Options with_fallbacks(Options o, const Settings& s) {
  if (o.hub_url.empty()) o.hub_url = s.hub;
  if (o.cache_root.empty()) o.cache_root = s.cache_root();
  if (o.variant.empty()) o.variant = s.target;
  if (o.lockfile.empty()) o.lockfile = s.lockfile;
  o.offline = o.offline || s.offline;
  o.allow_expired = o.allow_expired || s.allow_expired;
  if (o.timeout_s <= 0) {
    o.timeout_s = s.operation_timeout_s;
    o.timeout_setting = "KH_OPERATION_TIMEOUT";
  }
  if (o.trusted_root.empty() && !s.trusted_root_file.empty()) {
    const int fd = registry::open_regular_file(s.trusted_root_file, "KH_TRUSTED_ROOT file '" + s.trusted_root_file + "'");
    if (fd < 0)
      fail(KH_ERROR_INVALID_ARGUMENT, "KH_TRUSTED_ROOT='" + s.trusted_root_file + "' cannot be opened (" +
                                          std::strerror(errno) + "); it must name a hub's root.json");
    o.trusted_root = registry::read_descriptor(fd, "KH_TRUSTED_ROOT file '" + s.trusted_root_file + "'",
                                               registry::kMaxRootBytes, KH_ERROR_INVALID_ARGUMENT);
    o.trusted_root_source = "KH_TRUSTED_ROOT=" + s.trusted_root_file;
  }
  return o;
}

// Age in seconds of a cached metadata file, or -1 if absent.
int64_t metadata_age_s(const registry::Cache& cache, const std::string& hub_id, const std::string& rel) {
  struct stat st {};
  const std::string path = registry::cache_layout::hub_metadata_file(cache.root(), hub_id, rel);
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(std::time(nullptr)) - static_cast<int64_t>(st.st_mtime);
}

}  // namespace

registry::LockPolicy with_deadline(registry::LockPolicy policy, const registry::Deadline& deadline) {
  policy.deadline = deadline;
  return policy;
}

Session::Session(Settings settings, Options options, BuildChooser chooser)
    : settings_(std::move(settings)),
      options_(with_fallbacks(std::move(options), settings_)),
      deadline_(registry::Deadline::in(options_.timeout_s, options_.timeout_setting)),
      cache_(options_.cache_root, with_deadline(settings_.lock_policy(), deadline_)),
      chooser_(std::move(chooser)) {}

registry::Hub& Session::hub(const std::string& url) {
  auto it = hubs_.find(url);
  if (it == hubs_.end()) {
    registry::HubAccess access = settings_.hub_access(url);
    access.http.deadline = deadline_;
    access.locks.deadline = deadline_;
    it = hubs_.emplace(url, registry::open_hub(url, access)).first;
  }
  return *it->second;
}

void Session::check_trusted_root(registry::Hub& h, const std::string& hub_url) {
  if (options_.trusted_root.empty() || !roots_checked_.insert(h.id()).second) return;
  registry::TrustStore(cache_, h.id()).pin_or_match(options_.trusted_root, options_.trusted_root_source, hub_url);
}

const std::string& Session::require_hub(const std::string& what) const {
  if (options_.hub_url.empty())
    fail(KH_ERROR_INVALID_ARGUMENT, "no hub to fetch " + what +
                                        " from: pass --hub URL (kh_load_options.hub) or set KH_HUB, e.g. KH_HUB=file:///srv/kh-hub");
  return options_.hub_url;
}

const registry::RepoIndex& Session::index(const std::string& repo, const std::string& hub_url) {
  const auto key = std::make_pair(hub_url, repo);
  auto it = indexes_.find(key);
  if (it == indexes_.end()) it = indexes_.emplace(key, load_index(repo, hub_url)).first;
  return it->second;
}

registry::RepoIndex Session::load_index(const std::string& repo, const std::string& hub_url) {
  registry::Hub& h = hub(hub_url);
  const std::string rel = registry::repo_index_path(repo);
  registry::TrustOptions trust = settings_.trust_options();
  trust.allow_expired = trust.allow_expired || options_.allow_expired;
  check_trusted_root(h, hub_url);
  const int64_t age = metadata_age_s(cache_, h.id(), rel);
  if (options_.offline || (age >= 0 && age < options_.metadata_max_age_s)) {
    // The cached copy is verified again against the pinned root on every read.
    try {
      if (auto index = registry::load_verified_cached_index(cache_, h.id(), hub_url, repo, trust)) return *index;
    } catch (const StatusError&) {
      if (options_.offline) throw;  // online, a cached copy that no longer verifies is fetched again
    }
    if (options_.offline)
      fail(KH_ERROR_OFFLINE, "no cached metadata for " + repo + " from " + hub_url +
                                 " and offline mode allows no download; run `kernels get` for it while online first");
  }
  const int64_t grace = settings_.stale_grace_s;
  const bool can_fall_back = grace > 0 && age >= 0 && age <= options_.metadata_max_age_s + grace;
  try {
    // A hub that stalls must not hold a load that has a verified copy to fall back on: it
    // gets KH_REFRESH_TIMEOUT, and never more than half of what is left of the operation's
    // deadline, so that the fallback still has time to load.
    std::optional<registry::ScopedDeadlineLimit> limit;
    if (can_fall_back) {
      const double half_left = deadline_.left_s() / 2;
      if (half_left < settings_.refresh_timeout_s)
        limit.emplace(h, std::max(half_left, 0.001), deadline_.setting,
                      "half of what was left of " + deadline_.setting + "; the rest is for the cached copy");
      else
        limit.emplace(h, settings_.refresh_timeout_s, "KH_REFRESH_TIMEOUT");
    }
    return registry::fetch_verified_index(h, cache_, repo, trust);
  } catch (const StatusError& e) {
    // Stale-if-error: the hub cannot be asked (network, deadline) or the cache cannot take
    // the answer (read-only, a lock held too long). Not for what the hub said (signatures,
    // rollback, expiry, malformed metadata): those are never papered over.
    if (e.status() != KH_ERROR_NETWORK && e.status() != KH_ERROR_IO && e.status() != KH_ERROR_TIMEOUT) throw;
    if (!can_fall_back) throw;
    std::optional<registry::RepoIndex> index;
    try {
      index = registry::load_verified_cached_index(cache_, h.id(), hub_url, repo, trust);
    } catch (const StatusError&) {
    }
    if (!index) throw;
    std::fprintf(stderr,
                 "kh: warning: %s\nkh: warning: using the cached metadata of %s instead (verified, %lld s old; "
                 "KH_STALE_GRACE allows up to %lld s past its TTL)\n",
                 e.what(), repo.c_str(), static_cast<long long>(age), static_cast<long long>(grace));
    return *index;
  }
}

}  // namespace kh::install
