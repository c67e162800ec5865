// `kernels mirror`; see mirror.hpp. The source is read through a session on a scratch
// cache whose only pinned root is the one the mirror trusts, so every index is verified
// exactly as a client of the source verifies it; builds are fetched through verified
// sinks (size and sha256 of the signed index); then registry::write_mirror copies them.
#include "kh/install/mirror.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "kh/install/resolve.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/hub_directory.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/lockfile.hpp"
#include "kh/registry/package_spec.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::install {
namespace {

constexpr uint64_t kMaxRootsWalked = 1024;

// A scratch folder, removed with everything in it at scope exit.
struct Scratch {
  std::string dir;
  explicit Scratch(const std::string& tmp) {
    std::string templ = tmp + "/kh-mirror-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr)
      fail(KH_ERROR_IO, "cannot create a scratch folder in " + tmp + ": " + std::strerror(errno) + "; set TMPDIR");
    dir = templ;
  }
  ~Scratch() {
    try {
      registry::remove_tree(dir);
    } catch (...) {
    }
  }
};

bool is_url(const std::string& s) { return s.find("://") != std::string::npos; }

// What the mirror will copy, repo by repo.
struct Selection {
  std::map<std::string, std::set<std::string>> builds;  // repo -> sha256 of the builds to copy
};

void add_builds(Selection& sel, const std::string& repo, const std::vector<registry::VariantEntry>& builds) {
  for (const auto& b : builds) sel.builds[repo].insert(b.sha256);
}

// The source's roots, root/1 up to the newest: those the mirror's trust store verified
// must be byte for byte what the source serves now (the chain the mirror's clients walk).
std::vector<std::string> source_roots(registry::Hub& src, const registry::TrustStore& verified) {
  std::vector<std::string> roots;
  for (uint64_t n = 1; n <= kMaxRootsWalked; ++n) {
    const std::string rel = "root/" + std::to_string(n) + ".root.json";
    std::optional<std::string> text = registry::fetch_metadata_if_present(src, rel, registry::kMaxRootBytes);
    if (!text) break;
    const std::string stored = verified.dir() + "/" + rel;
    if (registry::path_exists(stored) && registry::read_file(stored, registry::kMaxRootBytes) != *text)
      fail(KH_ERROR_SIGNATURE, "mirror: " + src.url() + " now serves another " + rel + " than the one just verified; "
                                   "mirror again");
    roots.push_back(std::move(*text));
  }
  return roots;
}

}  // namespace

MirrorResult mirror(const Settings& settings, const MirrorRequest& request, const BuildChooser& chooser) {
  if (request.destination.empty() == request.bundle.empty())
    fail(KH_ERROR_INVALID_ARGUMENT, "kernels mirror: name a destination hub, or --bundle FILE (not both)");
  Scratch scratch(settings.tmp_dir);

  // 1. The source: a hub, or a bundle unpacked into a file:// hub.
  const bool from_bundle = !is_url(request.source);
  std::string source_url = request.source;
  if (from_bundle) {
    if (!registry::path_exists(request.source))
      fail(KH_ERROR_NOT_FOUND, "kernels mirror: '" + request.source + "' is neither a hub URL nor a bundle file");
    registry::make_directories(scratch.dir + "/source");
    registry::unpack_bundle(request.source, scratch.dir + "/source");
    source_url = "file://" + scratch.dir + "/source";
  }

  // 2. The root to verify it against, pinned in a scratch cache of its own.
  std::string root_text;
  std::string root_source;
  registry::Cache user_cache(settings.cache_root(), settings.lock_policy());
  if (!request.trust_root.empty()) {
    root_text = registry::read_file(request.trust_root, registry::kMaxRootBytes);
    root_source = request.trust_root;
  } else {
    const std::string pinned_for = from_bundle ? request.destination : request.source;
    if (!pinned_for.empty()) {
      const std::string id = registry::open_hub(pinned_for, settings.hub_access(pinned_for))->id();
      if (auto t = registry::TrustStore(user_cache, id).pinned_root_text()) {
        root_text = *t;
        root_source = "the root pinned for " + pinned_for;
      }
    }
  }
  if (root_text.empty())
    fail(KH_ERROR_SIGNATURE,
         "kernels mirror: no root of trust to verify " + request.source + " against: pin the " +
             (from_bundle ? std::string("destination's root (`kernels trust <root.json> --hub DST`)")
                          : "source's root (`kernels trust <root.json> --hub " + request.source + "`)") +
             ", or pass --trust <root.json> (obtained over a channel you trust)");
  Settings scratch_settings = settings;
  scratch_settings.cache = scratch.dir + "/cache";
  scratch_settings.lockfile.clear();
  scratch_settings.offline = false;
  scratch_settings.allow_unsigned = false;  // a mirror copies only what verifies
  Options options;
  options.hub_url = source_url;
  options.cache_root = scratch_settings.cache;
  options.lockfile = request.lockfile;
  options.allow_expired = request.allow_expired;
  Session session(scratch_settings, options, chooser);
  registry::Hub& src = session.hub(source_url);
  registry::TrustStore trust(session.cache(), src.id());
  trust.pin_root(root_text, root_source);

  // 3. What to copy.
  Selection sel;
  std::vector<std::string> specs = request.specs;
  std::optional<registry::Lockfile> lock;
  if (!request.lockfile.empty()) lock = registry::load_lockfile(request.lockfile);
  if (specs.empty() && lock)
    for (const auto& [repo, locked] : lock->packages) specs.push_back(repo);
  if (!specs.empty()) {
    for (const std::string& spec : specs) {
      const Resolution r = resolve(session, spec, request.target);
      if (!request.all_targets) {
        add_builds(sel, r.repo, {r.build});
        continue;
      }
      // Every build of the release (the caller's chooser took any); with a lockfile, every
      // build it pins.
      std::vector<registry::VariantEntry> all = r.release.variants;
      if (lock) {
        const auto& pinned = lock->packages.at(r.repo).variants;
        all.erase(std::remove_if(all.begin(), all.end(),
                                 [&](const registry::VariantEntry& v) {
                                   auto it = pinned.find(v.key);
                                   return it == pinned.end() || it->second != v.sha256;
                                 }),
                  all.end());
      }
      add_builds(sel, r.repo, all);
    }
  } else {
    registry::require_kh_hub(src);
    for (const registry::CatalogEntry& e : registry::read_catalog(src)) {
      const registry::RepoIndex& index = session.index(e.repo, source_url);
      for (const registry::Release& rel : index.releases) {
        std::vector<registry::VariantEntry> builds;
        for (const auto& v : rel.variants)
          if (request.target.empty() || v.key == request.target) builds.push_back(v);
        add_builds(sel, e.repo, builds);
      }
      sel.builds[e.repo];  // the index is copied even when no build of it is
    }
  }

  // 4. The verified metadata, exactly as signed, and the builds, fetched and verified.
  registry::MirrorContent content;
  content.roots = source_roots(src, trust);
  content.hub_json = registry::fetch_metadata_if_present(src, "kh-hub.json", 1u << 16);
  MirrorResult result;
  std::vector<registry::BlobRequest> downloads;
  registry::DescriptorSet outputs;
  std::vector<int>& fds = outputs.fds;
  registry::make_directories(scratch.dir + "/blobs");
  for (const auto& [repo, shas] : sel.builds) {
    const registry::RepoIndex& index = session.index(repo, source_url);
    const std::string rel = registry::repo_index_path(repo);
    registry::MirrorContent::Index x;
    x.repo = repo;
    x.version = index.version;
    x.text = *session.cache().load_metadata(src.id(), rel);
    x.minisig = session.cache().load_metadata(src.id(), rel + ".minisig").value_or("");
    x.sigs = session.cache().load_metadata(src.id(), rel + ".sigs").value_or("");
    content.indexes.push_back(std::move(x));
    result.repos.push_back(repo);
    for (const registry::Release& r : index.releases)
      for (const registry::VariantEntry& v : r.variants) {
        if (!shas.count(v.sha256)) continue;
        if (std::any_of(content.blobs.begin(), content.blobs.end(),
                        [&](const registry::MirrorContent::Blob& b) { return b.sha256 == v.sha256; }))
          continue;
        const std::string path = scratch.dir + "/blobs/" + v.sha256;
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) fail(KH_ERROR_IO, "cannot create '" + path + "': " + std::strerror(errno));
        fds.push_back(fd);
        const std::string label = repo + " " + registry::to_string(r.version) + " " + v.key;
        downloads.push_back(registry::BlobRequest{v.sha256, v.size, fd, 0, label});
        content.blobs.push_back({v.sha256, v.size, path});
        result.builds.push_back(label);
        result.bytes += v.size;
      }
  }
  if (!downloads.empty()) src.fetch_blobs(downloads);  // each checked against its signed size and sha256

  // 5. The destination: a hub, or a bundle (a file:// hub tree, packed).
  const std::string who = request.who.empty() ? "kernels mirror" : request.who;
  if (!request.bundle.empty()) {
    const std::string tree = scratch.dir + "/bundle";
    registry::make_directories(tree);
    result.report = registry::write_mirror(*registry::open_hub_writer("file://" + tree), content, who);
    ::unlink((tree + "/.kh-publish.lock").c_str());  // the writer's own lock: not part of the hub
    registry::pack_bundle(tree, request.bundle);
    return result;
  }
  std::unique_ptr<registry::HubWriter> dst =
      registry::open_hub_writer(request.destination, settings.hub_access(request.destination));
  result.report = registry::write_mirror(*dst, content, who);

  // 6. Read back as a client of the mirror would: every index verified against the same
  //    root, every copied build there.
  registry::Cache check(scratch.dir + "/check", settings.lock_policy());
  registry::TrustStore(check, dst->reader().id()).pin_root(root_text, root_source);
  registry::TrustOptions t = scratch_settings.trust_options();
  t.allow_expired = request.allow_expired;
  for (const registry::MirrorContent::Index& x : content.indexes) {
    registry::fetch_verified_index(dst->reader(), check, x.repo, t);
    if (check.load_metadata(dst->reader().id(), registry::repo_index_path(x.repo)) != x.text)
      fail(KH_ERROR_VERIFICATION, "mirror: " + request.destination + " serves another index of " + x.repo +
                                      " than the one copied (another writer?); mirror again");
  }
  for (const registry::MirrorContent::Blob& b : content.blobs)
    if (!dst->has_blob(b.sha256, b.size))
      fail(KH_ERROR_VERIFICATION, "mirror: " + request.destination + " lacks blob sha256:" + b.sha256 +
                                      " just after it was copied; mirror again");
  return result;
}

}  // namespace kh::install
