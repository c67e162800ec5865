// `kernels build --verify` (verify_release.hpp): resolve and fetch the published builds,
// export the recorded commit, rebuild each build's target there, compare.
#include "verify_release.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "kh/author/archive_compare.hpp"
#include "kh/author/process.hpp"
#include "kh/install/install.hpp"
#include "kh/install/resolve.hpp"
#include "kh/registry/status_error.hpp"
#include "session.hpp"

namespace kh::cli {
namespace {

namespace fs = std::filesystem;

std::string git_output(const std::string& dir, const std::vector<std::string>& args, const std::string& what) {
  std::vector<std::string> cmd = {"git", "-C", dir};
  cmd.insert(cmd.end(), args.begin(), args.end());
  author::ProcessOptions o;
  o.capture = true;
  const author::ProcessResult r = author::run_process(cmd, o);
  if (r.exit_code != 0) fail(KH_ERROR_NOT_FOUND, what + ": " + r.output);
  std::string out = r.output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// A scratch folder for one rebuild, removed afterwards whatever happens.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& parent) {
    std::string pattern = (fs::path(parent) / "kh-verify-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      fail(KH_ERROR_IO, "cannot make a scratch folder for the rebuild in " + parent + " (TMPDIR)");
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The commit's tree of the package folder, exported (git archive) into dest; returns the
// package folder inside it.
fs::path export_commit(const std::string& checkout, const registry::Provenance& p, const fs::path& dest) {
  git_output(checkout, {"cat-file", "-e", p.commit + "^{commit}"},
             "commit " + p.commit + " is not in the git checkout at " + checkout +
                 " (fetch it first: git fetch origin " + p.commit + ")");
  const fs::path tar = dest / "source.tar";
  std::vector<std::string> args = {"archive", "--format=tar", "-o", tar.string(), p.commit};
  if (!p.path.empty()) args.push_back(p.path);
  git_output(checkout, args, "git archive of " + p.commit + " failed");
  fs::create_directories(dest / "src");
  author::ProcessOptions o;
  o.capture = true;
  if (author::run_process({"tar", "-xf", tar.string(), "-C", (dest / "src").string()}, o).exit_code != 0)
    fail(KH_ERROR_IO, "cannot unpack the exported commit " + p.commit);
  return dest / "src" / p.path;
}

}  // namespace

int verify_release(const std::string& spec, const author::BuildRequest& request, const install::Options& hub,
                   const author::Kit& kit, const std::function<void(const std::string&)>& progress) {
  auto session = open_session_choosing_any(hub);
  const install::Resolution resolved = install::resolve(*session, spec);
  const std::string checkout = request.package_dir.empty() ? "." : request.package_dir;

  // The builds to check, grouped by the commit they record (one export per commit).
  std::vector<install::Resolution> plans;
  std::map<std::string, std::string> not_checked;  // variant -> why
  for (const registry::VariantEntry& v : resolved.release.variants) {
    if (!request.targets.empty() &&
        std::find(request.targets.begin(), request.targets.end(), v.provenance.target) == request.targets.end())
      continue;
    if (v.provenance.empty() || !v.provenance.has_source())
      not_checked[v.key] = "its index entry records no source commit (not built by `kernels build` in a git checkout)";
    else if (v.provenance.dirty)
      not_checked[v.key] = "it was built from uncommitted changes (\"dirty\"), which no commit holds";
    else
      plans.push_back(install::with_build(*session, resolved, v.key));
  }
  const std::vector<install::InstalledPackage> published = install::install(*session, plans);

  std::printf("%s %s from %s\n", resolved.repo.c_str(), resolved.version.c_str(), resolved.hub_url.c_str());
  size_t matched = 0, checked = 0;
  for (const install::InstalledPackage& pub : published) {
    const registry::Provenance& p = pub.manifest.provenance;
    TempDir tmp(settings().tmp_dir);
    progress(pub.variant + ": exporting commit " + p.commit + (p.path.empty() ? "" : " (" + p.path + ")"));
    author::BuildRequest rebuild;
    rebuild.package_dir = export_commit(checkout, p, tmp.path).string();
    rebuild.targets = {p.target};
    rebuild.out_dir = (tmp.path / "dist").string();
    rebuild.build_root = (tmp.path / "build").string();
    rebuild.jobs = request.jobs;
    rebuild.run_tests = false;
    rebuild.verbose = request.verbose;
    rebuild.max_glibc = request.max_glibc;
    rebuild.cmake_args = request.cmake_args;
    author::SourceInfo recorded;
    recorded.in_git = true;
    recorded.repository = p.repository;
    recorded.commit = p.commit;
    recorded.path = p.path;
    recorded.commit_time = std::strtoll(
        git_output(checkout, {"show", "-s", "--format=%ct", p.commit}, "cannot read commit " + p.commit).c_str(),
        nullptr, 10);
    rebuild.recorded_source = recorded;
    const author::BuildReport report = author::build_package(rebuild, kit, progress);
    const author::TargetOutcome& outcome = report.targets.front();
    if (outcome.status != author::TargetStatus::kBuilt) {
      not_checked[pub.variant] = "the rebuild for " + p.target + " did not finish: " + outcome.detail;
      if (outcome.status == author::TargetStatus::kFailed) ++checked;
      continue;
    }
    ++checked;
    const author::ArchiveComparison c = author::compare_with_published(outcome.archive, pub.sha256, pub.manifest);
    if (c.identical) {
      ++matched;
      std::printf("  %-40s matches (sha256 %s)\n", pub.variant.c_str(), pub.sha256.c_str());
    } else {
      std::printf("  %-40s DIFFERS: %s\n", pub.variant.c_str(), c.first_difference.c_str());
    }
  }
  for (const auto& [variant, why] : not_checked) std::printf("  %-40s not checked: %s\n", variant.c_str(), why.c_str());
  if (checked == 0) {
    std::fprintf(stderr, "kernels build --verify: no build of %s %s could be rebuilt here\n", resolved.repo.c_str(),
                 resolved.version.c_str());
    return 1;
  }
  return matched == checked ? 0 : 1;
}

}  // namespace kh::cli
