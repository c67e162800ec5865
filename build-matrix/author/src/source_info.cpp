// A package's source facts from git (or the folder alone), and the digest of its inputs.
#include "kh/author/source_info.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "kh/author/process.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::author {
namespace {

namespace fs = std::filesystem;

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

ProcessResult git(const std::string& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", dir});
  ProcessOptions o;
  o.capture = true;
  o.env = {"GIT_OPTIONAL_LOCKS=0", "LC_ALL=C"};
  return run_process(args, o);
}

// Pathspecs that leave the build outputs inside the package folder out of git's answers.
std::vector<std::string> exclusions(const fs::path& package, const std::vector<std::string>& exclude) {
  std::vector<std::string> specs = {"--", "."};
  for (const std::string& e : exclude) {
    std::error_code ec;
    const fs::path rel = fs::weakly_canonical(e, ec).lexically_relative(fs::weakly_canonical(package, ec));
    if (!rel.empty() && *rel.begin() != "..") specs.push_back(":(exclude)" + rel.string());
  }
  return specs;
}

std::vector<std::string> split_nul(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    const size_t end = s.find('\0', start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::vector<std::string> walk_files(const fs::path& package, const std::vector<std::string>& exclude) {
  std::vector<fs::path> skip;
  std::error_code ec;
  for (const std::string& e : exclude) skip.push_back(fs::weakly_canonical(e, ec));
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(package); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path p = it->path();
    const bool git_dir = p.filename() == ".git";
    if (it->is_directory() && (git_dir || std::find(skip.begin(), skip.end(), fs::weakly_canonical(p, ec)) != skip.end())) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && !it->is_symlink()) files.push_back(p.lexically_relative(package).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::string without_credentials(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t host = scheme + 3;
  const size_t slash = url.find('/', host);
  const size_t at = url.rfind('@', slash == std::string::npos ? url.size() : slash);
  if (at == std::string::npos || at < host) return url;
  return url.substr(0, host) + url.substr(at + 1);
}

SourceInfo read_source_info(const std::string& package_dir, const std::vector<std::string>& exclude,
                            const std::string& repository) {
  SourceInfo info;
  const fs::path package = fs::canonical(package_dir);
  const ProcessResult top = git(package.string(), {"rev-parse", "--show-toplevel"});
  const ProcessResult head = git(package.string(), {"rev-parse", "--verify", "HEAD"});
  if (top.exit_code != 0 || head.exit_code != 0) {
    info.files = walk_files(package, exclude);
    return info;
  }
  info.in_git = true;
  info.toplevel = trimmed(top.output);
  info.commit = trimmed(head.output);
  const fs::path rel = package.lexically_relative(fs::canonical(info.toplevel));
  info.path = rel == "." ? "" : rel.string();
  const ProcessResult time = git(package.string(), {"show", "-s", "--format=%ct", "HEAD"});
  if (time.exit_code == 0) info.commit_time = std::strtoll(trimmed(time.output).c_str(), nullptr, 10);

  if (!repository.empty()) {
    info.repository = repository;
  } else {
    const ProcessResult origin = git(package.string(), {"remote", "get-url", "origin"});
    if (origin.exit_code == 0) info.repository = trimmed(origin.output);
  }
  info.repository = without_credentials(info.repository);

  std::vector<std::string> args = {"status", "--porcelain", "--untracked-files=all"};
  for (const std::string& s : exclusions(package, exclude)) args.push_back(s);
  const ProcessResult status = git(package.string(), args);
  if (status.exit_code != 0)
    fail(KH_ERROR_IO, "git status failed in " + package.string() + ": " + trimmed(status.output));
  info.dirty = !trimmed(status.output).empty();

  args = {"ls-files", "-z", "--cached", "--others", "--exclude-standard"};
  for (const std::string& s : exclusions(package, exclude)) args.push_back(s);
  const ProcessResult files = git(package.string(), args);
  if (files.exit_code != 0)
    fail(KH_ERROR_IO, "git ls-files failed in " + package.string() + ": " + trimmed(files.output));
  for (const std::string& f : split_nul(files.output)) {
    std::error_code ec;
    if (!f.empty() && fs::is_regular_file(package / f, ec) && !fs::is_symlink(package / f, ec)) info.files.push_back(f);
  }
  std::sort(info.files.begin(), info.files.end());
  info.files.erase(std::unique(info.files.begin(), info.files.end()), info.files.end());
  return info;
}

std::string inputs_digest(const std::string& package_dir, const SourceInfo& source, const std::string& target,
                          const std::string& kh_version) {
  std::string listing;
  for (const std::string& f : source.files)
    listing += "file " + registry::sha256_file_hex(package_dir + "/" + f) + " " + f + "\n";
  listing += "target " + target + "\n";
  listing += "kh " + kh_version + "\n";
  return registry::sha256_hex(listing);
}

}  // namespace kh::author
