// Yanking a release: its index entry says "yanked", signed and written as publish writes it.
// Resolution skips a yanked release unless a request pins it exactly (repo_index.hpp); its
// builds stay on the hub, so hosts that pinned them (a lockfile, @=1.2.0) keep working.
#include <cstdio>
#include <ctime>

#include "kh/registry/publish.hpp"
#include "kh/registry/semver.hpp"
#include "kh/registry/status_error.hpp"
#include "publish_index.hpp"

namespace kh::registry {
namespace {

constexpr int kMaxRestarts = 3;

YankOutcome yank_once(HubWriter& hub, PublishLock& lock, const std::string& repo, const Version& version,
                      bool yanked, const PublishOptions& options) {
  const std::optional<RootMetadata> root = latest_root(hub.reader());
  if (!options.signing_keys.empty() || root) check_index_signers(root, options.signing_keys, hub.url());
  detail::RepoState state = detail::read_repo(hub, repo, root.has_value(), options);
  if (!state.before)
    fail(KH_ERROR_NOT_FOUND, "yank: hub " + hub.url() + " has no repo " + repo + " (no " + repo_index_path(repo) + ")");
  std::string versions;
  for (Release& rel : state.index.releases) {
    if (compare_versions(rel.version, version) == 0 && to_string(rel.version) == to_string(version)) {
      YankOutcome out;
      out.version = to_string(rel.version);
      out.changed = rel.yanked != yanked;
      if (out.changed) {
        rel.yanked = yanked;
        const int64_t expires =
            static_cast<int64_t>(std::time(nullptr)) + static_cast<int64_t>(options.expires_days) * 86400;
        detail::write_repo_index(hub, lock, root, state, options, expires);
      }
      out.index_version = state.index.version;
      return out;
    }
    versions += (versions.empty() ? "" : ", ") + to_string(rel.version);
  }
  fail(KH_ERROR_NOT_FOUND, "yank: " + repo + " has no release " + to_string(version) + " on hub " + hub.url() +
                               "; its releases: " + (versions.empty() ? "none" : versions));
}

}  // namespace

YankOutcome set_release_yanked(HubWriter& hub, const std::string& repo, const std::string& version_text, bool yanked,
                               const PublishOptions& options) {
  const std::optional<Version> version = parse_version(version_text);
  if (!version)
    fail(KH_ERROR_INVALID_ARGUMENT, "yank: '" + version_text + "' is not an exact version such as 1.2.0 (a yank "
                                    "names one release)");
  std::unique_ptr<PublishLock> lock = hub.lock_publishers(options.who.empty() ? "kernels yank" : options.who);
  for (int pass = 1;; ++pass) {
    try {
      return yank_once(hub, *lock, repo, *version, yanked, options);
    } catch (const detail::IndexChanged& c) {
      if (pass >= kMaxRestarts)
        fail(KH_ERROR_NETWORK, "yank on " + hub.url() + ": " + c.rel + " kept changing meanwhile (another publisher "
                                   "that does not take the hub's publish lock?); run it again");
      std::fprintf(stderr, "kh: %s changed on %s meanwhile; reading it again\n", c.rel.c_str(), hub.url().c_str());
    }
  }
}

}  // namespace kh::registry
