// Comparing a rebuilt package archive with a published one, file by file: what
// `kernels build --verify` reports when the bytes differ.
#pragma once

#include <string>

#include "kh/registry/package_manifest.hpp"

namespace kh::author {

struct ArchiveComparison {
  bool identical = false;  // the archives' bytes are the same
  // When not: the first difference, in words: the first file (by path) whose size or sha256
  // differs or that only one side has; else the first kh-manifest.json field that differs;
  // else that the container bytes alone differ.
  std::string first_difference;
};

// rebuilt: an archive file; published: the published archive's sha256 and its manifest.
ArchiveComparison compare_with_published(const std::string& rebuilt_archive, const std::string& published_sha256,
                                         const registry::PackageManifest& published);

}  // namespace kh::author
