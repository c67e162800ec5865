// The content-addressed cache: verified blobs, unpacked read-only trees (complete when
// their marker exists), each hub's last verified metadata, and crash-safe installs.
#include "kh/registry/cache.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <memory>

#include "kh/registry/archive.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/registry/detail/internal.hpp"

namespace kh::registry {

namespace {

// A partial download this large is worth keeping for the next try after a network failure
// or a deadline (the transport resumes it with Range); a smaller one (a drip, a stall at
// the start) is removed, so a failed get leaves the cache as it was.
constexpr uint64_t kResumableBytes = 1u << 20;

using cache_layout::blob_file;
using cache_layout::blob_lock;
std::string tmp_dir(const std::string& root) { return cache_layout::under(root, cache_layout::kTmpDir); }
std::string pkgs_dir(const std::string& root) { return cache_layout::under(root, cache_layout::kPackagesDir); }

// Removes whatever it names when it goes out of scope, unless released.
struct Cleanup {
  std::string path;
  ~Cleanup() {
    if (path.empty()) return;
    try {
      remove_tree(path);
    } catch (...) {  // best effort: tmp/ may be cleared at any time anyway
    }
  }
};

// Read-only files and directories below `dir` (not dir itself: renaming a directory
// needs write access to it, to update its "..").
void make_read_only_below(const std::string& dir) {
  std::vector<detail::TreeEntry> entries = detail::list_tree(dir);
  // Deepest first, so a directory is still writable while its children change.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    mode_t m = it->type == detail::TreeEntry::Type::Directory || (it->mode & 0111) ? 0555 : 0444;
    if (::chmod((dir + "/" + it->path).c_str(), m) != 0)
      detail::fail_errno("cannot make '" + dir + "/" + it->path + "' read-only", errno);
  }
}

void write_marker(const std::string& dir, const std::string& sha) {
  std::string path = dir + "/" + kCompleteMarker;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (fd < 0) detail::fail_errno("cannot create '" + path + "'", errno);
  try {
    detail::write_all(fd, sha.data(), sha.size(), "'" + path + "'");
    if (::fsync(fd) != 0) detail::fail_errno("cannot sync '" + path + "'", errno);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  detail::fsync_directory(dir);
}

// One line per regular file below dir (marker and stamps excepted), sorted by path:
// "<size> <mtime ns> <ctime ns> <inode> <path>".
std::string tree_stamps(const std::string& dir) {
  std::string out;
  for (const detail::TreeEntry& e : detail::list_tree(dir)) {
    if (e.type != detail::TreeEntry::Type::File || e.path == kCompleteMarker || e.path == kStampsName) continue;
    struct stat st {};
    if (::lstat((dir + "/" + e.path).c_str(), &st) != 0) detail::fail_errno("cannot stat '" + dir + "/" + e.path + "'", errno);
    char buf[160];
    std::snprintf(buf, sizeof buf, "%llu %lld.%09ld %lld.%09ld %llu ", static_cast<unsigned long long>(st.st_size),
                  static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec, static_cast<long long>(st.st_ctim.tv_sec),
                  st.st_ctim.tv_nsec, static_cast<unsigned long long>(st.st_ino));
    out += buf + e.path + "\n";
  }
  return out;
}

// Writes dir's stamps file (read-only, like the tree).
void write_stamps(const std::string& dir) {
  const std::string path = dir + "/" + kStampsName;
  write_file_atomic(path, tree_stamps(dir));
  if (::chmod(path.c_str(), 0444) != 0) detail::fail_errno("cannot make '" + path + "' read-only", errno);
}

// The pid in a work file's name ("<sha>.blob-<pid>-<hex>", "<sha>.pkg-<pid>-<hex>"), else 0.
long work_file_pid(const std::string& name) {
  for (const char* kind : {".blob-", ".pkg-"}) {
    const size_t at = name.find(kind);
    if (at != 64) continue;
    const size_t from = at + std::string(kind).size();
    const size_t dash = name.find('-', from);
    if (dash == std::string::npos || dash == from || dash - from > 10) return 0;
    const std::string digits = name.substr(from, dash - from);
    if (digits.find_first_not_of("0123456789") != std::string::npos) return 0;
    return std::strtol(digits.c_str(), nullptr, 10);
  }
  return 0;
}

// Removes what installs of blob `sha` left in tmp/ (its extraction folders, archive copies
// of older kh versions): called with the blob's lock held, so whoever made them is gone.
// Its partial download (<sha>.partial) is the caller's to resume or take over.
void remove_abandoned_work(const std::string& tmp_root, const std::string& sha) {
  if (!path_exists(tmp_root)) return;
  for (const std::string& name : detail::list_names(tmp_root))
    if (name.size() > sha.size() && name.compare(0, sha.size(), sha) == 0 &&
        (name.compare(sha.size(), 5, ".pkg-") == 0 || name.compare(sha.size(), 6, ".blob-") == 0))
      remove_tree(tmp_root + "/" + name);
}

// Does `blob` hold exactly sha256/size? (A blob in the cache is re-hashed before reuse.)
bool blob_is_intact(const std::string& blob, const std::string& sha, std::optional<uint64_t> size) {
  struct stat st;
  if (::lstat(blob.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (size && static_cast<uint64_t>(st.st_size) != *size) return false;
  try {
    return sha256_file_hex(blob) == sha;
  } catch (const StatusError&) {
    return false;
  }
}

// Copies a local file into a new file in tmp/, verifying size and digest on the way.
void copy_into(const std::string& from, const std::string& to, const std::string& sha) {
  OwnedFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.fd < 0) detail::fail_errno("cannot open archive '" + from + "'", errno);
  struct stat st;
  if (::fstat(in.fd, &st) != 0) detail::fail_errno("cannot stat archive '" + from + "'", errno);
  OwnedFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (out.fd < 0) detail::fail_errno("cannot create '" + to + "'", errno);
  const std::string read_failure = "cannot read archive '" + from + "'";
  copy_verified([&](char* buf, size_t cap) { return read_some(in.fd, buf, cap, read_failure); }, out.fd, sha,
                static_cast<uint64_t>(st.st_size), "archive '" + from + "'");
  if (::fsync(out.fd) != 0) detail::fail_errno("cannot sync '" + to + "'", errno);
}

struct Expected {
  std::string repo, version, variant;
  std::string label() const { return repo + "@" + version + " (variant " + variant + ")"; }
};

// The common install, with the blob lock held: extract the verified archive `archive` (the
// cached blob, or a verified download in tmp/ that moves into blobs/ once its tree checks
// out) under tmp/, check its manifest and files, then publish blob and tree with renames,
// marker last. A failure removes whatever this install made in tmp/, the download
// included: a full disk or a bad archive leaves nothing behind.
InstalledTree install_locked(const std::string& root, const std::string& sha, const Expected& want,
                             const std::string& archive) {
  const std::string blob = blob_file(root, sha);
  const std::string final_dir = cache_layout::package_dir(root, sha);
  const std::string tmp_root = tmp_dir(root);
  make_directories(tmp_root);
  const std::string& source_blob = archive;
  Cleanup tmp_blob;  // a download in tmp/: ours until it is moved into blobs/
  if (archive != blob) tmp_blob.path = archive;

  Cleanup work;
  work.path = tmp_root + "/" + sha + ".pkg-" + std::to_string(::getpid()) + "-" + detail::random_hex(6);
  if (::mkdir(work.path.c_str(), 0755) != 0) detail::fail_errno("cannot create '" + work.path + "'", errno);
  ExtractLimits limits;
  limits.check_manifest = true;  // unlisted or mis-sized files refused before their bytes land in tmp/
  // The manifest, parsed once here, is the one the files were checked against while they
  // were written; it is checked below against the index and handed to the caller.
  std::optional<PackageManifest> parsed = extract_package_archive(source_blob, work.path, limits);
  for (const char* reserved : {kCompleteMarker, kStampsName})
    if (path_exists(work.path + "/" + reserved))
      fail(KH_ERROR_BAD_ARCHIVE, "archive sha256:" + sha + " holds a file named '" + reserved +
                                     "', which kh reserves; the package is unsafe: report it to the hub's owner");
  if (!parsed || !path_exists(work.path + "/" + kManifestName))
    fail(KH_ERROR_BAD_ARCHIVE, "archive sha256:" + sha + " has no " + kManifestName +
                                   "; it is not a kh package: report it to the hub's owner");
  PackageManifest& m = *parsed;
  auto mismatch = [&](const char* field, const std::string& got, const std::string& expected) {
    fail(KH_ERROR_VERIFICATION, std::string("the package's manifest names ") + field + " '" + printable(got) + "' but the index says '" +
                                    expected + "'; the hub's index and blob disagree: report it to the hub's owner");
  };
  if (m.name != want.repo) mismatch("repo", m.name, want.repo);
  if (m.version != want.version) mismatch("version", m.version, want.version);
  if (m.variant != want.variant) mismatch("variant", m.variant, want.variant);
  verify_tree_against_manifest(work.path, m);

  if (!tmp_blob.path.empty()) {
    KH_TEST_HOOK("before-blob-rename");
    make_directories(detail::parent_path(blob));
    if (::rename(tmp_blob.path.c_str(), blob.c_str()) != 0)
      detail::fail_errno("cannot move the blob into '" + blob + "'", errno);
    tmp_blob.path.clear();
    detail::fsync_directory(detail::parent_path(blob));
  }

  make_read_only_below(work.path);
  write_stamps(work.path);  // after the chmods (they change ctime), before the marker
  KH_TEST_HOOK("before-marker");
  write_marker(work.path, sha);
  make_directories(pkgs_dir(root));
  if (path_exists(final_dir)) remove_tree(final_dir);  // a stale tree without its marker
  if (::rename(work.path.c_str(), final_dir.c_str()) != 0)
    detail::fail_errno("cannot move the package into '" + final_dir + "'", errno);
  work.path.clear();
  ::chmod(final_dir.c_str(), 0555);
  detail::fsync_directory(pkgs_dir(root));
  return InstalledTree{final_dir, std::move(m)};
}

// A tree the cache already holds (installed earlier, or by another process meanwhile): its
// manifest, read once here, must name the build that was asked for.
InstalledTree present_tree(const std::string& dir, const Expected& want) {
  const std::string path = dir + "/" + kManifestName;
  PackageManifest m = parse_package_manifest(read_regular_file(path, kMaxPackageManifestBytes), path);
  if (m.name != want.repo || m.version != want.version || m.variant != want.variant)
    fail(KH_ERROR_VERIFICATION, "cached package " + dir + " is " + m.name + " " + m.version + " (" + m.variant +
                                    ") but the index says " + want.repo + " " + want.version + " (" + want.variant + ")");
  return InstalledTree{dir, std::move(m)};
}

}  // namespace

void verify_tree_against_manifest(const std::string& dir, const PackageManifest& manifest) {
  auto bad = [&](const std::string& file, const std::string& what) {
    fail(KH_ERROR_VERIFICATION, "package " + manifest.name + "@" + manifest.version + " (" + manifest.variant +
                                    ") in '" + dir + "': file '" + printable(file) + "': " + what +
                                    "; the package does not match its manifest: delete it and fetch it again");
  };
  std::map<std::string, const ManifestFile*> expected;
  for (const ManifestFile& f : manifest.files) expected[f.path] = &f;
  std::map<std::string, detail::TreeEntry> found;
  for (detail::TreeEntry& e : detail::list_tree(dir)) {
    if (e.type == detail::TreeEntry::Type::Directory) continue;
    if (e.type != detail::TreeEntry::Type::File) bad(e.path, "not a regular file or directory");
    if (e.path == kManifestName || e.path == kCompleteMarker || e.path == kStampsName) continue;
    if (expected.find(e.path) == expected.end()) bad(e.path, "not listed in the manifest");
    found[e.path] = e;
  }
  for (const auto& [path, f] : expected) {
    auto it = found.find(path);
    if (it == found.end()) bad(path, "missing");
    if (it->second.size != f->size)
      bad(path, "size " + std::to_string(it->second.size) + " bytes, the manifest says " + std::to_string(f->size));
    std::string h = sha256_regular_file_hex(dir + "/" + path);
    if (h != f->sha256) bad(path, "sha256 " + h + ", the manifest says " + f->sha256);
  }
}

bool detail::is_orphaned_work(const std::string& tmp_dir, const std::string& name) {
  const long pid = work_file_pid(name);
  if (pid <= 0 || pid == ::getpid()) return false;
  if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) return false;  // alive (or not ours to ask)
  struct stat st;
  if (::lstat((tmp_dir + "/" + name).c_str(), &st) != 0) return false;
  // Untouched for a minute too: a process in another pid namespace sharing this cache
  // looks dead from here, but its work in progress keeps changing.
  return std::time(nullptr) - st.st_mtime > 60;
}

void detail::sweep_orphans(const std::string& tmp_dir) {
  if (!path_exists(tmp_dir)) return;
  for (const std::string& name : detail::list_names(tmp_dir)) {
    try {
      if (is_orphaned_work(tmp_dir, name)) remove_tree(tmp_dir + "/" + name);
    } catch (const StatusError&) {  // best effort: gc tries again
    }
  }
}

namespace {

std::string with_context(const std::string& root, const Expected& want, const std::function<std::string()>& body) {
  try {
    return body();
  } catch (const StatusError& e) {
    fail(e.status(), "cannot install " + want.label() + " into cache '" + root + "': " + e.what());
  }
}

}  // namespace

Cache::Cache(std::string root, LockPolicy locks) : root_(std::move(root)), locks_(locks) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

namespace {

// The complete tree of sha256 (its marker names it), or "".
std::string complete_tree(const std::string& root, const std::string& sha256) {
  if (!is_sha256_hex(sha256)) return "";
  std::string dir = cache_layout::package_dir(root, sha256);
  std::string marker = dir + "/" + kCompleteMarker;
  struct stat st;
  if (::lstat(marker.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  try {
    if (read_regular_file(marker, 256) != sha256) return "";
  } catch (const StatusError&) {
    return "";
  }
  return dir;
}

// "" when the complete tree at dir is intact, else what is wrong with it. Cheap when the
// stamps match; else the whole tree is hashed against its manifest.
std::string tree_problem(const std::string& dir) {
  const std::string stamps_path = dir + "/" + kStampsName;
  std::string recorded;
  try {
    recorded = path_exists(stamps_path) ? read_regular_file(stamps_path, 16u << 20) : "";
    if (!recorded.empty() && tree_stamps(dir) == recorded) return "";
  } catch (const StatusError&) {  // a file that cannot be stat'ed: the full check says what
  }
  try {
    const std::string manifest_path = dir + "/" + kManifestName;
    if (!path_exists(manifest_path)) return std::string(kManifestName) + " is missing";
    verify_tree_against_manifest(dir, parse_package_manifest(read_regular_file(manifest_path, kMaxPackageManifestBytes),
                                                             manifest_path));
  } catch (const StatusError& e) {
    return e.what();
  }
  // Intact, but no longer as recorded (a copied cache, a touched file, an older kh):
  // record it again so the next check is cheap. Best effort, and no lock (the caller may
  // hold this blob's): a read-only cache cannot, and two processes write the same bytes.
  if (::chmod(dir.c_str(), 0755) == 0) {
    try {
      write_stamps(dir);
    } catch (const StatusError&) {
    }
    ::chmod(dir.c_str(), 0555);
  }
  return "";
}

}  // namespace

std::optional<std::string> Cache::package_dir(const std::string& sha256) const {
  const std::string dir = complete_tree(root_, sha256);
  if (dir.empty() || !tree_problem(dir).empty()) return std::nullopt;
  return dir;
}

std::optional<std::string> Cache::complete_package_dir(const std::string& sha256) const {
  std::string dir = complete_tree(root_, sha256);
  if (dir.empty()) return std::nullopt;
  return dir;
}

std::string Cache::package_problem(const std::string& sha256) const {
  const std::string dir = complete_tree(root_, sha256);
  return dir.empty() ? "" : tree_problem(dir);
}

std::string Cache::ensure_package(Hub& hub, const std::string& repo, const Release& release,
                                  const VariantEntry& variant) {
  return ensure_packages(hub, {PackageRequest{repo, &release, &variant}}).front().dir;
}

std::vector<InstalledTree> Cache::ensure_packages(Hub& hub, const std::vector<PackageRequest>& packages) {
  std::vector<Expected> wants;
  for (const PackageRequest& p : packages) {
    Expected want{p.repo, to_string(p.release->version), p.variant->key};
    if (!is_sha256_hex(p.variant->sha256))
      fail(KH_ERROR_INVALID_ARGUMENT, want.label() + ": '" + p.variant->sha256 + "' is not a sha256 digest");
    wants.push_back(std::move(want));
  }
  std::vector<InstalledTree> trees(packages.size());
  std::map<std::string, std::vector<size_t>> missing;  // sha256 -> the requests for it; sorted: the lock order
  for (size_t i = 0; i < packages.size(); ++i) {
    if (auto dir = package_dir(packages[i].variant->sha256)) trees[i] = present_tree(*dir, wants[i]);
    else missing[packages[i].variant->sha256].push_back(i);
  }
  if (missing.empty()) return trees;

  // Any error names the package it is about (its digest is in the message), else the first.
  auto fail_for = [&](const StatusError& e) {
    const Expected* want = &wants[missing.begin()->second.front()];
    for (const auto& [sha, idx] : missing)
      if (std::string(e.what()).find(sha) != std::string::npos) want = &wants[idx.front()];
    fail(e.status(), "cannot install " + want->label() + " into cache '" + root_ + "': " + e.what());
  };
  try {
    check_free_space(packages, missing);  // before anything is written
  } catch (const StatusError& e) {
    fail_for(e);
  }
  const std::string tmp_root = tmp_dir(root_);
  std::vector<std::unique_ptr<FileLock>> locks;
  std::map<std::string, Cleanup> downloaded;  // sha256 -> its download in tmp/ (<sha>.partial)
  std::map<std::string, std::string> archives;  // sha256 -> the verified archive to install from
  try {
    for (const auto& [sha, idx] : missing) locks.push_back(std::make_unique<FileLock>(blob_lock(root_, sha), locks_));
    // Under the locks: what no other process installed meanwhile, and whose blob the
    // cache lacks, is downloaded in one batch into tmp/.
    make_directories(tmp_root);
    std::vector<BlobRequest> batch;
    DescriptorSet open_outputs;
    std::vector<int>& fds = open_outputs.fds;
    for (const auto& [sha, idx] : missing) {
      const uint64_t size = packages[idx.front()].variant->size;
      const std::string cached_blob = blob_file(root_, sha);
      if (package_dir(sha)) continue;
      // Whoever made these held this lock, and let go of it: they are dead (kill -9).
      remove_abandoned_work(tmp_root, sha);
      if (blob_is_intact(cached_blob, sha, size)) {
        archives[sha] = cached_blob;
        continue;
      }
      if (path_exists(cached_blob)) remove_tree(cached_blob);  // corrupt or truncated: never trusted again
      Cleanup& tmp = downloaded[sha];
      // One name per blob (its lock is ours): what an interrupted download (kill -9,
      // Ctrl-C, a lost network) left is resumed from where it stopped, not thrown away;
      // the whole is verified at the end all the same. One that is already whole (killed
      // after its download, during its install) is taken as it is once it hashes right.
      tmp.path = tmp_root + "/" + sha + ".partial";
      uint64_t have = 0;
      struct stat st;
      if (::lstat(tmp.path.c_str(), &st) == 0) {
        if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == size && blob_is_intact(tmp.path, sha, size)) {
          archives[sha] = tmp.path;
          continue;
        }
        if (S_ISREG(st.st_mode) && st.st_size > 0 && static_cast<uint64_t>(st.st_size) < size)
          have = static_cast<uint64_t>(st.st_size);
        else
          remove_tree(tmp.path);
      }
      int fd = ::open(tmp.path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0) detail::fail_errno("cannot create '" + tmp.path + "'", errno);
      fds.push_back(fd);
      if (::lseek(fd, static_cast<off_t>(have), SEEK_SET) != static_cast<off_t>(have))
        detail::fail_errno("cannot resume '" + tmp.path + "'", errno);
      const PackageRequest& pkg = packages[idx.front()];
      batch.push_back(BlobRequest{sha, size, fd, have, pkg.repo + " " + to_string(pkg.release->version)});
    }
    detail::sweep_orphans(tmp_root);  // work files of processes that died (kill -9), of other blobs
    // A download that failed on the way (the network, a deadline) keeps the bytes it got
    // for the next try, when they are worth resuming; anything else leaves nothing.
    auto keep_partials = [&](const StatusError& e) {
      if (e.status() != KH_ERROR_NETWORK && e.status() != KH_ERROR_TIMEOUT) return;
      for (auto& [sha, tmp] : downloaded) {
        struct stat part;
        if (::lstat(tmp.path.c_str(), &part) == 0 && static_cast<uint64_t>(part.st_size) >= kResumableBytes)
          tmp.path.clear();
      }
    };
    try {
      hub.fetch_blobs(batch);
    } catch (const StatusError& e) {
      const bool resumed = std::any_of(batch.begin(), batch.end(), [](const BlobRequest& b) { return b.resume_from > 0; });
      if (e.status() != KH_ERROR_VERIFICATION || !resumed) {
        keep_partials(e);
        throw;
      }
      // The bytes kept from an earlier try may be what is wrong: once more, from byte 0.
      for (BlobRequest& b : batch) {
        if (::ftruncate(b.out_fd, 0) != 0 || ::lseek(b.out_fd, 0, SEEK_SET) != 0)
          detail::fail_errno("cannot rewind the download of sha256:" + b.sha256, errno);
        b.resume_from = 0;
      }
      try {
        hub.fetch_blobs(batch);
      } catch (const StatusError& again) {
        keep_partials(again);
        throw;
      }
    }
    for (size_t k = 0; k < fds.size(); ++k)
      if (::fsync(fds[k]) != 0) detail::fail_errno("cannot sync the download of sha256:" + batch[k].sha256, errno);
  } catch (const StatusError& e) {
    fail_for(e);
  }

  for (const auto& [sha, idx] : missing) {
    InstalledTree tree;
    if (auto done = package_dir(sha)) {
      tree = present_tree(*done, wants[idx.front()]);  // another process installed it meanwhile
    } else {
      auto it = downloaded.find(sha);
      if (it != downloaded.end()) {
        archives[sha] = it->second.path;
        it->second.path.clear();  // install_locked's now: it moves it into blobs/ or removes it
      }
      try {
        if (archives.count(sha) == 0) fail(KH_ERROR_INTERNAL, "no verified archive of sha256:" + sha + " to install");
        tree = install_locked(root_, sha, wants[idx.front()], archives[sha]);
      } catch (const StatusError& e) {
        fail_for(e);
      }
    }
    for (size_t i : idx) trees[i] = tree;
  }
  return trees;
}

void Cache::check_free_space(const std::vector<PackageRequest>& packages,
                             const std::map<std::string, std::vector<size_t>>& missing) const {
  uint64_t need = 0;
  std::string what;
  for (const auto& [sha, idx] : missing) {
    const uint64_t size = packages[idx.front()].variant->size;
    struct stat st {};
    if (::stat(blob_file(root_, sha).c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) == size) continue;
    uint64_t have = 0;  // a partial download already there takes no more room
    if (::stat((tmp_dir(root_) + "/" + sha + ".partial").c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) <= size)
      have = static_cast<uint64_t>(st.st_size);
    need += size - have;
    const PackageRequest& p = packages[idx.front()];
    what += std::string(what.empty() ? "" : ", ") + p.repo + " " + to_string(p.release->version) + " (sha256:" + sha +
            ", " + std::to_string(size) + " bytes)";
  }
  if (need == 0) return;
  // The cache may not exist yet: its nearest existing folder is on the same filesystem.
  std::string on = root_;
  struct statvfs fs {};
  while (::statvfs(on.c_str(), &fs) != 0) {
    if (errno != ENOENT || on == "/" || on == ".") return;  // cannot tell: the writes will say
    on = detail::parent_path(on);
  }
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (need <= free_bytes) return;
  fail(KH_ERROR_IO, "not enough free space to download " + what + ": it needs " + std::to_string(need) +
                        " bytes (the size the signed index gives) and the filesystem of the cache '" + root_ +
                        "' has " + std::to_string(free_bytes) +
                        " bytes free; nothing was written. Free some space (`kernels cache gc --drop-archives` drops "
                        "archives of installed packages) or set KH_CACHE to a larger filesystem");
}

std::string Cache::install_archive(const std::string& archive_path, const std::string& sha256,
                                   const std::string& expected_repo, const std::string& expected_version,
                                   const std::string& expected_variant) {
  Expected want{expected_repo, expected_version, expected_variant};
  if (!is_sha256_hex(sha256))
    fail(KH_ERROR_INVALID_ARGUMENT, want.label() + ": '" + sha256 + "' is not a sha256 digest");
  if (auto dir = package_dir(sha256)) return *dir;
  return with_context(root_, want, [&] {
    FileLock lock(blob_lock(root_, sha256), locks_);
    if (auto dir = package_dir(sha256)) return *dir;
    const std::string tmp_root = tmp_dir(root_);
    make_directories(tmp_root);
    remove_abandoned_work(tmp_root, sha256);
    const std::string blob = blob_file(root_, sha256);
    if (blob_is_intact(blob, sha256, std::nullopt)) return install_locked(root_, sha256, want, blob).dir;
    if (path_exists(blob)) remove_tree(blob);  // corrupt or truncated
    Cleanup copy;
    copy.path = tmp_root + "/" + sha256 + ".blob-" + std::to_string(::getpid()) + "-" + detail::random_hex(6);
    copy_into(archive_path, copy.path, sha256);
    const std::string archive = copy.path;
    copy.path.clear();  // install_locked's now
    return install_locked(root_, sha256, want, archive).dir;
  });
}

namespace {
std::string metadata_file(const std::string& root, const std::string& hub_id, const std::string& rel) {
  if (!detail::is_safe_relative_path(hub_id) || hub_id.find('/') != std::string::npos)
    fail(KH_ERROR_INVALID_ARGUMENT, "hub id '" + hub_id + "' is not a safe directory name");
  if (!detail::is_safe_relative_path(rel))
    fail(KH_ERROR_INVALID_ARGUMENT, "metadata path '" + rel + "' is not a safe relative path");
  return cache_layout::hub_metadata_file(root, hub_id, rel);
}
}  // namespace

void Cache::store_metadata(const std::string& hub_id, const std::string& relative_path, const std::string& text,
                           const std::string& etag) {
  const std::string path = metadata_file(root_, hub_id, relative_path);
  // The old ETag goes first and the new one last: a crash between never pairs an ETag
  // with text it does not describe (which would make a 304 keep stale text).
  const std::string etag_path = path + ".etag";
  if (::unlink(etag_path.c_str()) != 0 && errno != ENOENT) detail::fail_errno("cannot remove '" + etag_path + "'", errno);
  write_file_atomic(path, text);
  if (!etag.empty()) write_file_atomic(etag_path, etag);
}

std::optional<std::string> Cache::load_metadata(const std::string& hub_id, const std::string& relative_path) const {
  std::string path = metadata_file(root_, hub_id, relative_path);
  if (!path_exists(path)) return std::nullopt;
  return read_regular_file(path, kMaxIndexBytes);  // the largest kind of metadata
}

void Cache::touch_metadata(const std::string& hub_id, const std::string& relative_path) {
  const std::string path = metadata_file(root_, hub_id, relative_path);
  if (::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) != 0 && errno != ENOENT)
    detail::fail_errno("cannot update the time of '" + path + "'", errno);
}

void Cache::drop_metadata(const std::string& hub_id, const std::string& relative_path) {
  const std::string path = metadata_file(root_, hub_id, relative_path);
  for (const std::string& p : {path + ".etag", path})  // the validator first: never one without its copy
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) detail::fail_errno("cannot remove '" + p + "'", errno);
}

std::string Cache::load_metadata_etag(const std::string& hub_id, const std::string& relative_path) const {
  const std::string path = metadata_file(root_, hub_id, relative_path) + ".etag";
  if (!path_exists(path)) return "";
  return read_regular_file(path, 1024);
}

std::vector<CachedPackage> Cache::list_packages(bool include_damaged) const {
  std::vector<CachedPackage> out;
  std::string pkgs = pkgs_dir(root_);
  if (!path_exists(pkgs)) return out;
  struct Listed {
    CachedPackage pkg;
    std::optional<Version> version;
  };
  std::vector<Listed> listed;
  for (const std::string& name : detail::list_names(pkgs)) {
    const std::string dir = complete_tree(root_, name);
    if (dir.empty()) continue;  // incomplete or foreign: not a package
    const std::string problem = tree_problem(dir);
    if (!problem.empty() && !include_damaged) continue;  // ensure_package replaces it
    try {
      PackageManifest m = parse_package_manifest(read_regular_file(dir + "/" + kManifestName, kMaxPackageManifestBytes),
                                                 dir + "/" + kManifestName);
      std::optional<Version> v = parse_version(m.version);
      listed.push_back({CachedPackage{name, dir, std::move(m), !problem.empty(), problem}, v});
    } catch (const StatusError&) {
      continue;  // not even its manifest reads: nothing to list it by
    }
  }
  std::sort(listed.begin(), listed.end(), [](const Listed& a, const Listed& b) {
    if (a.pkg.manifest.name != b.pkg.manifest.name) return a.pkg.manifest.name < b.pkg.manifest.name;
    if (a.version && b.version) {
      int c = compare_versions(*a.version, *b.version);
      if (c != 0) return c < 0;
    }
    if (a.pkg.manifest.variant != b.pkg.manifest.variant) return a.pkg.manifest.variant < b.pkg.manifest.variant;
    return a.pkg.sha256 < b.pkg.sha256;
  });
  for (Listed& l : listed) out.push_back(std::move(l.pkg));
  return out;
}

}  // namespace kh::registry
