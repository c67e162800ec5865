// Package archives: .tar.zst, created deterministically, extracted under a strict policy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kh/registry/package_manifest.hpp"

namespace kh::registry {

struct ExtractLimits {
  uint64_t max_entries = 4096;
  uint64_t max_total_bytes = 8ull << 30;  // sum of regular file sizes
  // A kh package: the first entry must be kh-manifest.json (kMaxPackageManifestBytes at
  // most, parsed before anything else is written); every later regular file must be listed in it with the
  // size its header gives (an unlisted or other-sized file is refused before any of its
  // bytes is written), may bring no more than that size, and must hash to the listed
  // sha256 as it is written. A directory must be a parent of a listed file.
  bool check_manifest = false;
};

// Extracts archive_path into dest_dir (which must exist and be empty). Accepts only
// regular files and directories whose names are relative, free of "..", "." and empty
// components, and of NUL/backslash; refuses symlinks, hard links, devices, FIFOs, sockets,
// duplicate names, and archives past the limits (and, with check_manifest, anything its
// manifest does not list as it is). Throws StatusError(KH_ERROR_BAD_ARCHIVE)
// naming the archive and the offending entry. On failure dest_dir may hold partial
// output; the caller discards it. With check_manifest, returns the manifest it parsed and
// checked the files against, so that the caller need not read it again; else nullopt.
std::optional<PackageManifest> extract_package_archive(const std::string& archive_path, const std::string& dest_dir,
                             const ExtractLimits& limits = {});

// Reads one regular file out of an archive without extracting the rest (e.g. the
// manifest). Throws StatusError(KH_ERROR_BAD_ARCHIVE / KH_ERROR_NOT_FOUND).
std::string read_archive_member(const std::string& archive_path, const std::string& member,
                                uint64_t max_bytes);

// Packs every regular file and directory under src_dir into a .tar.zst at archive_path:
// names sorted, mtime 0, owner 0:0, modes 0644/0755, so equal trees give equal bytes.
// Written to a temporary name and renamed into place.
void create_package_archive(const std::string& src_dir, const std::string& archive_path);

}  // namespace kh::registry
