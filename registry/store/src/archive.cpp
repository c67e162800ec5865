// Package archives (.tar.zst) through libarchive: deterministic creation, and extraction
// under a strict policy that writes every file itself (never archive_write_disk).
#include "kh/registry/archive.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "kh/registry/fs.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/registry/detail/internal.hpp"

namespace kh::registry {
namespace {

struct ReadArchive {
  archive* a = nullptr;
  ReadArchive() : a(archive_read_new()) {}
  ~ReadArchive() { archive_read_free(a); }
};

struct WriteArchive {
  archive* a = nullptr;
  WriteArchive() : a(archive_write_new()) {}
  ~WriteArchive() { archive_write_free(a); }
};

struct Entry {
  archive_entry* e = archive_entry_new();
  ~Entry() { archive_entry_free(e); }
};

const char* errstr(archive* a) {
  const char* s = archive_error_string(a);
  return s != nullptr ? s : "unknown libarchive error";
}

[[noreturn]] void bad_archive(const std::string& archive_path, const std::string& entry, const std::string& what) {
  std::string where = "archive '" + archive_path + "'";
  if (!entry.empty()) where += ": entry '" + printable(entry) + "'";
  fail(KH_ERROR_BAD_ARCHIVE, where + ": " + what +
                                 "; the archive is corrupt or unsafe: delete it and fetch or rebuild it");
}

// Opens an archive for reading: tar inside zstd, nothing else.
void open_for_read(ReadArchive& ra, const std::string& path) {
  if (ra.a == nullptr) fail(KH_ERROR_OUT_OF_MEMORY, "cannot allocate a libarchive reader");
  archive_read_support_format_tar(ra.a);
  archive_read_support_filter_zstd(ra.a);
  if (archive_read_open_filename(ra.a, path.c_str(), 1 << 16) != ARCHIVE_OK) {
    if (!path_exists(path)) fail(KH_ERROR_NOT_FOUND, "archive '" + path + "' does not exist");
    bad_archive(path, "", std::string("cannot open it as a zstd-compressed tar: ") + errstr(ra.a));
  }
}

// Reads the next header; false at the end. `previous` names the last entry for messages.
bool next_header(ReadArchive& ra, archive_entry** entry, const std::string& path, const std::string& previous) {
  int rc = archive_read_next_header(ra.a, entry);
  if (rc == ARCHIVE_EOF) return false;
  if (rc != ARCHIVE_OK) {
    std::string where = previous.empty() ? "" : "after entry '" + previous + "'";
    bad_archive(path, "", (where.empty() ? "" : where + ": ") + "cannot read the next entry: " + errstr(ra.a));
  }
  return true;
}

const char* type_name(mode_t type) {
  switch (type) {
    case AE_IFLNK: return "a symbolic link";
    case AE_IFCHR: return "a character device";
    case AE_IFBLK: return "a block device";
    case AE_IFIFO: return "a FIFO";
    case AE_IFSOCK: return "a socket";
    default: return "an entry of unknown type";
  }
}

std::string entry_name(archive_entry* e) {
  const char* name = archive_entry_pathname(e);
  return name != nullptr ? name : "";
}

}  // namespace

std::optional<PackageManifest> extract_package_archive(const std::string& archive_path, const std::string& dest_dir,
                                                       const ExtractLimits& limits) {
  ReadArchive ra;
  open_for_read(ra, archive_path);
  // With check_manifest: what the manifest lists, once its entry (the first) is read.
  std::optional<PackageManifest> manifest;
  std::map<std::string, const ManifestFile*> listed;
  std::set<std::string> listed_dirs;
  std::set<std::string> seen;       // explicit entries
  std::set<std::string> made_dirs;  // directories created implicitly or explicitly
  uint64_t count = 0, total = 0;
  std::string previous;
  archive_entry* e = nullptr;
  while (next_header(ra, &e, archive_path, previous)) {
    std::string name = entry_name(e);
    const std::string shown = name.empty() ? "(empty name)" : name;
    if (++count > limits.max_entries)
      bad_archive(archive_path, shown, "more than " + std::to_string(limits.max_entries) + " entries");
    mode_t type = archive_entry_filetype(e);
    if (archive_entry_hardlink(e) != nullptr)
      bad_archive(archive_path, shown, std::string("a hard link (to '") + archive_entry_hardlink(e) + "'); only regular files and directories are allowed");
    if (type != AE_IFREG && type != AE_IFDIR)
      bad_archive(archive_path, shown, std::string(type_name(type)) + "; only regular files and directories are allowed");
    std::string clean = name;
    if (type == AE_IFDIR && clean.size() > 1 && clean.back() == '/') clean.pop_back();
    if (clean.empty()) bad_archive(archive_path, shown, "an empty name");
    if (clean.front() == '/') bad_archive(archive_path, shown, "an absolute path");
    if (clean.find('\\') != std::string::npos) bad_archive(archive_path, shown, "a backslash in the name");
    if (!detail::is_safe_relative_path(clean))
      bad_archive(archive_path, shown, "a name with an empty, '.' or '..' component");
    if (!seen.insert(clean).second) bad_archive(archive_path, shown, "a duplicate name");
    const ManifestFile* expect = nullptr;  // the manifest's entry for this file, when checked
    if (limits.check_manifest) {
      if (count == 1 && (clean != kManifestName || type != AE_IFREG))
        bad_archive(archive_path, shown, std::string("the first entry must be ") + kManifestName +
                                             "; this is not a kh package archive");
      if (count > 1 && type == AE_IFDIR && !listed_dirs.count(clean))
        bad_archive(archive_path, shown, "a directory that holds no file the manifest lists");
      if (count > 1 && type == AE_IFREG) {
        auto it = listed.find(clean);
        if (it == listed.end())
          bad_archive(archive_path, shown, "not listed in the package's manifest (refused before any of its bytes were written)");
        if (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0 ||
            static_cast<uint64_t>(archive_entry_size(e)) != it->second->size)
          bad_archive(archive_path, shown, "its size (" + std::to_string(archive_entry_size(e)) + " bytes) is not the " +
                                               std::to_string(it->second->size) + " bytes the manifest lists");
        expect = it->second;
      }
    }

    // Create the parents: every prefix is itself a safe name, and dest_dir held nothing
    // we did not make, so no component can be a symlink.
    for (size_t slash = clean.find('/'); slash != std::string::npos; slash = clean.find('/', slash + 1)) {
      std::string prefix = clean.substr(0, slash);
      if (made_dirs.count(prefix)) continue;
      if (::mkdir((dest_dir + "/" + prefix).c_str(), 0755) != 0)
        bad_archive(archive_path, shown, "cannot create directory '" + prefix + "': " + std::strerror(errno) +
                                             (errno == EEXIST ? " (a file of that name came earlier)" : ""));
      made_dirs.insert(prefix);
    }
    std::string out_path = dest_dir + "/" + clean;
    if (type == AE_IFDIR) {
      if (made_dirs.count(clean)) continue;  // made implicitly for an earlier file
      if (::mkdir(out_path.c_str(), 0755) != 0)
        bad_archive(archive_path, shown, std::string("cannot create the directory: ") + std::strerror(errno));
      made_dirs.insert(clean);
      continue;
    }

    if (!archive_entry_size_is_set(e)) bad_archive(archive_path, shown, "a regular file without a size");
    int64_t size = archive_entry_size(e);
    if (size < 0) bad_archive(archive_path, shown, "a negative size");
    if (limits.check_manifest && count == 1 && static_cast<uint64_t>(size) > kMaxPackageManifestBytes)
      bad_archive(archive_path, shown, "a manifest larger than " + std::to_string(kMaxPackageManifestBytes) + " bytes");
    total += static_cast<uint64_t>(size);
    if (total > limits.max_total_bytes)
      bad_archive(archive_path, shown, "the files add up to more than " + std::to_string(limits.max_total_bytes) + " bytes");
    mode_t mode = (archive_entry_perm(e) & 0111) ? 0755 : 0644;
    OwnedFd out(::open(out_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (out.fd < 0)
      bad_archive(archive_path, shown, std::string("cannot create the file: ") + std::strerror(errno));
    uint64_t written = 0;
    char buf[1 << 16];
    Sha256 hash;
    std::string manifest_text;  // the manifest entry's bytes, when checked
    for (;;) {
      la_ssize_t n = archive_read_data(ra.a, buf, sizeof buf);
      if (n < 0) bad_archive(archive_path, shown, std::string("cannot read its data: ") + errstr(ra.a));
      if (n == 0) break;
      written += static_cast<uint64_t>(n);
      if (written > static_cast<uint64_t>(size)) bad_archive(archive_path, shown, "more data than its size says");
      if (expect != nullptr) hash.update(buf, static_cast<size_t>(n));
      if (limits.check_manifest && count == 1) manifest_text.append(buf, static_cast<size_t>(n));
      detail::write_all(out.fd, buf, static_cast<size_t>(n), "'" + out_path + "'");
    }
    if (written != static_cast<uint64_t>(size))
      bad_archive(archive_path, shown, "truncated: " + std::to_string(written) + " of " + std::to_string(size) + " bytes");
    if (expect != nullptr) {
      const std::string got = hash.finish_hex();
      if (got != expect->sha256)
        bad_archive(archive_path, shown, "sha256 " + got + ", the manifest lists " + expect->sha256);
    }
    if (limits.check_manifest && count == 1) {
      try {
        manifest = parse_package_manifest(manifest_text, archive_path + ": " + kManifestName);
      } catch (const StatusError& err) {
        bad_archive(archive_path, shown, err.what());
      }
      for (const ManifestFile& f : manifest->files) {
        listed[f.path] = &f;
        for (size_t slash = f.path.find('/'); slash != std::string::npos; slash = f.path.find('/', slash + 1))
          listed_dirs.insert(f.path.substr(0, slash));
      }
    }
    if (::fchmod(out.fd, mode) != 0) detail::fail_errno("cannot set the mode of '" + out_path + "'", errno);
    if (::fsync(out.fd) != 0) detail::fail_errno("cannot sync '" + out_path + "'", errno);
    KH_TEST_HOOK("mid-extract");
    previous = clean;
  }
  return manifest;
}

std::string read_archive_member(const std::string& archive_path, const std::string& member, uint64_t max_bytes) {
  ReadArchive ra;
  open_for_read(ra, archive_path);
  archive_entry* e = nullptr;
  std::string previous;
  while (next_header(ra, &e, archive_path, previous)) {
    std::string name = entry_name(e);
    previous = name;
    if (name != member) continue;
    if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e) != nullptr)
      bad_archive(archive_path, name, "not a regular file");
    int64_t size = archive_entry_size(e);
    if (size < 0 || static_cast<uint64_t>(size) > max_bytes)
      bad_archive(archive_path, name, "larger than the " + std::to_string(max_bytes) + " bytes allowed for it");
    std::string out;
    out.reserve(static_cast<size_t>(size));
    char buf[1 << 16];
    for (;;) {
      la_ssize_t n = archive_read_data(ra.a, buf, sizeof buf);
      if (n < 0) bad_archive(archive_path, name, std::string("cannot read its data: ") + errstr(ra.a));
      if (n == 0) break;
      if (out.size() + static_cast<size_t>(n) > static_cast<uint64_t>(size))
        bad_archive(archive_path, name, "more data than its size says");
      out.append(buf, static_cast<size_t>(n));
    }
    if (out.size() != static_cast<uint64_t>(size))
      bad_archive(archive_path, name, "truncated: " + std::to_string(out.size()) + " of " + std::to_string(size) + " bytes");
    return out;
  }
  fail(KH_ERROR_NOT_FOUND, "archive '" + archive_path + "' has no entry '" + member +
                               "'; it is not a kh package archive: rebuild it with 'kernels pack'");
}

void create_package_archive(const std::string& src_dir, const std::string& archive_path) {
  std::vector<detail::TreeEntry> entries = detail::list_tree(src_dir);
  for (const detail::TreeEntry& te : entries)
    if (te.type == detail::TreeEntry::Type::Other)
      fail(KH_ERROR_INVALID_ARGUMENT, "cannot pack '" + src_dir + "/" + te.path +
                                          "': a package holds only regular files and directories (no symlinks)");
  // The manifest goes first, so readers find it without scanning; the rest by name.
  std::stable_partition(entries.begin(), entries.end(),
                        [](const detail::TreeEntry& te) { return te.path == kManifestName; });

  make_directories(detail::parent_path(archive_path));
  std::string tmp = temp_sibling(archive_path);
  try {
    {
      WriteArchive wa;
      if (wa.a == nullptr) fail(KH_ERROR_OUT_OF_MEMORY, "cannot allocate a libarchive writer");
      auto check = [&](int rc, const std::string& what) {
        if (rc != ARCHIVE_OK) fail(KH_ERROR_IO, "cannot write archive '" + archive_path + "': " + what + ": " + errstr(wa.a));
      };
      check(archive_write_add_filter_zstd(wa.a), "zstd filter");
      check(archive_write_set_format_pax_restricted(wa.a), "pax format");
      check(archive_write_open_filename(wa.a, tmp.c_str()), "open '" + tmp + "'");
      for (const detail::TreeEntry& te : entries) {
        Entry en;
        archive_entry_set_pathname(en.e, te.path.c_str());
        archive_entry_set_mtime(en.e, 0, 0);
        archive_entry_set_uid(en.e, 0);
        archive_entry_set_gid(en.e, 0);
        bool dir = te.type == detail::TreeEntry::Type::Directory;
        archive_entry_set_filetype(en.e, dir ? AE_IFDIR : AE_IFREG);
        archive_entry_set_perm(en.e, (dir || (te.mode & 0111)) ? 0755 : 0644);
        archive_entry_set_size(en.e, dir ? 0 : static_cast<la_int64_t>(te.size));
        check(archive_write_header(wa.a, en.e), "header of '" + te.path + "'");
        if (dir) continue;
        std::string path = src_dir + "/" + te.path;
        OwnedFd in(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
        if (in.fd < 0) detail::fail_errno("cannot open '" + path + "' to pack it", errno);
        const std::string read_failure = "cannot read '" + path + "' to pack it";
        uint64_t done = 0;
        char buf[1 << 16];
        while (const size_t n = read_some(in.fd, buf, sizeof buf, read_failure)) {
          done += static_cast<uint64_t>(n);
          if (done > te.size) fail(KH_ERROR_IO, "'" + path + "' grew while it was being packed");
          if (archive_write_data(wa.a, buf, n) != static_cast<la_ssize_t>(n))
            fail(KH_ERROR_IO, "cannot write '" + te.path + "' into '" + archive_path + "': " + errstr(wa.a));
        }
        if (done != te.size) fail(KH_ERROR_IO, "'" + path + "' shrank while it was being packed");
      }
      check(archive_write_close(wa.a), "finish");
    }
    OwnedFd f(::open(tmp.c_str(), O_RDONLY | O_CLOEXEC));
    if (f.fd < 0 || ::fsync(f.fd) != 0) detail::fail_errno("cannot sync '" + tmp + "'", errno);
    if (::rename(tmp.c_str(), archive_path.c_str()) != 0)
      detail::fail_errno("cannot rename '" + tmp + "' to '" + archive_path + "'", errno);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

}  // namespace kh::registry
