// A new package repository from the template (scaffold.hpp).
#include "kh/author/scaffold.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kh/registry/fs.hpp"
#include "kh/registry/package_spec.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::author {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBackends[] = {"cpu", "cuda", "hip"};

std::string replace_all(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    size_t at = 0;
    while ((at = text.find(key, at)) != std::string::npos) {
      text.replace(at, key.size(), value);
      at += value.size();
    }
  }
  return text;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// kernel.json with the package's name and only the chosen backends.
std::string package_manifest(const std::string& text, const std::vector<std::string>& backends) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(text);
  nlohmann::ordered_json& all = doc["build"]["backends"];
  for (const char* b : kBackends)
    if (std::find(backends.begin(), backends.end(), b) == backends.end()) all.erase(b);
  return doc.dump(2) + "\n";
}

}  // namespace

std::string package_backend_name(const std::string& word) {
  if (word == "rocm" || word == "hip") return "hip";
  if (word == "cpu" || word == "cuda") return word;
  return "";
}

std::vector<std::string> scaffold_package(const ScaffoldRequest& request, const std::string& template_dir) {
  const size_t slash = request.package.find('/');
  if (slash == std::string::npos || !registry::is_valid_repo_part(request.package.substr(0, slash)) ||
      !registry::is_valid_repo_part(request.package.substr(slash + 1)))
    fail(KH_ERROR_INVALID_ARGUMENT, "'" + request.package + "' is not a package name <org>/<name>, each part "
                                    "lowercase [a-z0-9._-] (e.g. acme/scale)");
  const std::string name = request.package.substr(slash + 1);
  std::string ident = name;
  std::replace(ident.begin(), ident.end(), '-', '_');
  std::replace(ident.begin(), ident.end(), '.', '_');
  if (request.backends.empty()) fail(KH_ERROR_INVALID_ARGUMENT, "--backends names no backend (cpu, cuda, rocm)");
  for (const std::string& b : request.backends)
    if (package_backend_name(b) != b)
      fail(KH_ERROR_INVALID_ARGUMENT, "unknown backend '" + b + "': the backends are cpu, cuda and rocm");
  if (!fs::is_regular_file(fs::path(template_dir) / "kernel.json"))
    fail(KH_ERROR_NOT_FOUND, "the package template is missing from kh's author kit (" + template_dir +
                             "/kernel.json): reinstall kh");

  const fs::path dest = fs::absolute(request.dir.empty() ? name : request.dir).lexically_normal();
  std::error_code ec;
  if (fs::exists(dest, ec) && !(fs::is_directory(dest, ec) && fs::is_empty(dest, ec)))
    fail(KH_ERROR_INVALID_ARGUMENT, dest.string() + " exists and is not empty; name a new folder: kernels init " +
                                        request.package + " <dir>");
  const std::map<std::string, std::string> values = {
      {"@KH_PACKAGE@", request.package}, {"@KH_ORG@", request.package.substr(0, slash)},
      {"@KH_NAME@", name}, {"@KH_IDENT@", ident}};

  const fs::path stage = fs::path(registry::temp_sibling(dest.string()));
  std::vector<std::string> written;
  try {
    fs::create_directories(stage);
    for (auto it = fs::recursive_directory_iterator(template_dir); it != fs::recursive_directory_iterator(); ++it) {
      const fs::path rel = it->path().lexically_relative(template_dir);
      const std::string top = rel.begin()->string();
      const bool other_backend = std::any_of(std::begin(kBackends), std::end(kBackends), [&](const char* b) {
        return top == b && std::find(request.backends.begin(), request.backends.end(), b) == request.backends.end();
      });
      if (other_backend) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (it->is_directory()) {
        fs::create_directories(stage / rel);
        continue;
      }
      std::string text = replace_all(read_text(it->path()), values);
      if (rel == "kernel.json") text = package_manifest(text, request.backends);
      registry::write_file_atomic((stage / rel).string(), text);
      fs::permissions(stage / rel, fs::status(it->path()).permissions(), ec);
      written.push_back(rel.string());
    }
    if (fs::exists(dest, ec)) fs::remove(dest);  // the empty folder the check allowed
    fs::rename(stage, dest);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(stage, ec);
    fail(KH_ERROR_IO, "cannot write the package into " + dest.string() + ": " + e.what());
  } catch (...) {
    fs::remove_all(stage, ec);
    throw;
  }
  std::sort(written.begin(), written.end());
  return written;
}

}  // namespace kh::author
