// Resolved builds -> verified package trees in the cache; see install.hpp.
#include "kh/install/install.hpp"

#include <algorithm>
#include <ctime>
#include <mutex>
#include <optional>

#include "installed.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::install {

std::vector<InstalledPackage> install(Session& session, const std::vector<Resolution>& resolved) {
  std::vector<InstalledPackage> out(resolved.size());
  std::vector<std::string> hubs;
  for (const Resolution& r : resolved)
    if (!r.installed && std::find(hubs.begin(), hubs.end(), r.hub_url) == hubs.end()) hubs.push_back(r.hub_url);
  for (const std::string& hub_url : hubs) {
    if (hub_url.empty()) fail(KH_ERROR_INTERNAL, "a build to download was resolved without a hub");
    std::vector<size_t> which;
    std::vector<registry::Cache::PackageRequest> batch;
    for (size_t i = 0; i < resolved.size(); ++i)
      if (!resolved[i].installed && resolved[i].hub_url == hub_url) {
        which.push_back(i);
        batch.push_back({resolved[i].repo, &resolved[i].release, &resolved[i].build});
      }
    // The session's connection to this hub: the one its index came through. The cache
    // checked each tree's manifest against the build resolved (repo, version, variant,
    // every file) and hands it back parsed: it is not read again here.
    std::vector<registry::InstalledTree> trees = session.cache().ensure_packages(session.hub(hub_url), batch);
    for (size_t k = 0; k < which.size(); ++k) {
      const Resolution& r = resolved[which[k]];
      out[which[k]] = describe_installed(trees[k].dir, r.build.sha256, r.hub_url, std::move(trees[k].manifest));
      out[which[k]].downloaded = true;
      out[which[k]].download_bytes = r.build.size;
    }
  }
  for (size_t i = 0; i < resolved.size(); ++i)
    if (resolved[i].installed) out[i] = *resolved[i].installed;
  return out;
}

namespace {

// Recent answers in this process. A host that loads the same spec again within the
// metadata TTL gets the same answer the hub metadata gave a moment ago, without reading
// and parsing it again; the package tree must still be complete, and the library is still
// opened and checked by the loader. Never used when the caller asks for fresh metadata
// (metadata_max_age_s == 0, as `kernels get` does).
struct Memo {
  std::string spec, hub_url, cache_root, variant, lockfile, selection_key;
  bool offline = false;
  int64_t at = 0;
  InstalledPackage package;
  bool same_request(const std::string& s, const Options& o) const {
    return spec == s && hub_url == o.hub_url && cache_root == o.cache_root && variant == o.variant &&
           lockfile == o.lockfile && selection_key == o.selection_key && offline == o.offline;
  }
};

std::mutex g_memo_mutex;
std::vector<Memo> g_memo;
constexpr size_t kMaxMemo = 64;

int64_t now_s() { return static_cast<int64_t>(std::time(nullptr)); }

std::optional<InstalledPackage> recall(const std::string& spec, const Options& options) {
  if (options.metadata_max_age_s <= 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(g_memo_mutex);
  for (const Memo& m : g_memo) {
    if (!m.same_request(spec, options)) continue;
    if (now_s() - m.at >= options.metadata_max_age_s) return std::nullopt;
    // Still complete and intact (one lstat per file): a damaged tree is installed again.
    if (!registry::Cache(m.cache_root).package_dir(m.package.sha256)) return std::nullopt;
    return m.package;
  }
  return std::nullopt;
}

void remember(const std::string& spec, const Options& options, const InstalledPackage& package) {
  if (options.metadata_max_age_s <= 0) return;
  std::lock_guard<std::mutex> lock(g_memo_mutex);
  for (Memo& m : g_memo)
    if (m.same_request(spec, options)) {
      m.at = now_s();
      m.package = package;
      return;
    }
  if (g_memo.size() >= kMaxMemo) g_memo.erase(g_memo.begin());
  g_memo.push_back(Memo{spec, options.hub_url, options.cache_root, options.variant, options.lockfile,
                        options.selection_key, options.offline, now_s(), package});
}

}  // namespace

InstalledPackage get(Session& session, const std::string& spec) {
  if (auto recent = recall(spec, session.options())) return *recent;
  InstalledPackage package = install(session, {resolve(session, spec)}).front();
  remember(spec, session.options(), package);
  return package;
}

}  // namespace kh::install
