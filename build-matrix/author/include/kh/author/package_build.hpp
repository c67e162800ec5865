// `kernels build`: a package folder (its kernel.json, and its own CMakeLists.txt or none)
// built for kh targets through the author kit: configure, build, the package's own tests
// (CPU targets), install, the ABI check and pack, with the build's provenance recorded.
// A target whose toolchain is missing is skipped, naming what to install; one the package has
// no backend for is left out.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kh/author/kit.hpp"
#include "kh/author/source_info.hpp"
#include "kh/author/targets.hpp"

namespace kh::author {

struct BuildRequest {
  std::string package_dir = ".";
  std::vector<std::string> targets;  // target keys (`kernels targets`); none: the host's CPU target
  bool all_targets = false;          // every target of the table
  std::string out_dir;               // default <package>/dist
  std::string build_root;            // default <package>/build/kh: one folder per target
  int jobs = 0;                      // 0: the CPUs here
  bool run_tests = true;             // the package's CTest tests, on CPU targets
  bool require_all = false;          // a missing toolchain fails instead of skipping
  bool verbose = false;              // the tools' output to stderr as it comes (else into <target>.log)
  std::string max_glibc;             // the ABI check's glibc ceiling (default: the table's)
  std::vector<std::string> cmake_args;
  std::string source_repository;     // recorded instead of the checkout's origin URL (KH_SOURCE_REPOSITORY)
  // `kernels build --verify`: the source as the release recorded it (repository, commit,
  // path), for a folder exported from that commit, which git does not know as a checkout.
  std::optional<SourceInfo> recorded_source;
};

enum class TargetStatus { kBuilt, kSkipped, kNotInPackage, kFailed };

struct TargetOutcome {
  std::string target;
  TargetStatus status = TargetStatus::kFailed;
  std::string variant;  // the variant key built
  std::string archive;  // the package archive written
  std::string detail;   // why skipped or failed (with the log's path and its end)
  double seconds = 0;
};

struct BuildReport {
  std::string package;  // "acme/scale 0.1.0"
  std::vector<TargetOutcome> targets;
  bool dirty = false;   // built from uncommitted changes (recorded in the provenance)
  bool in_git = false;
  size_t built() const;
  size_t failed() const;
};

// Builds every requested target in turn. `progress` gets one line per step. Throws
// StatusError for what stops every target (no kernel.json, an unknown target key).
BuildReport build_package(const BuildRequest& request, const Kit& kit,
                          const std::function<void(const std::string&)>& progress);

}  // namespace kh::author
