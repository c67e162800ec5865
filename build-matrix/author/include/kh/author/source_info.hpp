// What `kernels build` records of a package's source for its provenance: the git checkout it
// sits in (repository, commit, folder, uncommitted changes), and a digest of its inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kh::author {

struct SourceInfo {
  bool in_git = false;
  std::string toplevel;    // the checkout's root
  std::string repository;  // the given one (KH_SOURCE_REPOSITORY), else the origin remote's URL, without credentials; may be ""
  std::string commit;      // HEAD
  std::string path;        // the package folder relative to the checkout's root ("" for the root)
  bool dirty = false;      // the package folder has changes HEAD does not hold (build outputs excluded)
  int64_t commit_time = 0;               // HEAD's commit time: SOURCE_DATE_EPOCH for the compilers
  std::vector<std::string> files;        // the package's files, relative to its folder, sorted
};

// Reads the package folder's source facts. `exclude`: folders inside it that hold build
// outputs (the build root, the out dir), left out of the files and of the dirty check.
// Outside a git checkout: in_git false and every regular file (.git folders and `exclude`
// left out), which for an exported commit (`git archive`) is the list git gives in a checkout.
// `repository`: what to record as the source repository instead of the origin remote's URL.
SourceInfo read_source_info(const std::string& package_dir, const std::vector<std::string>& exclude,
                            const std::string& repository = "");

// sha256 (hex) of the build's inputs: every listed file's path and sha256, the target key and
// the kh version of the kit (docs/authoring.md, "Provenance").
std::string inputs_digest(const std::string& package_dir, const SourceInfo& source, const std::string& target,
                          const std::string& kh_version);

// "https://user:token@host/x" -> "https://host/x": credentials never go into metadata.
std::string without_credentials(const std::string& url);

}  // namespace kh::author
