// "org/name@request" parsing and the naming rules for orgs and names.
#include "kh/registry/package_spec.hpp"

#include "kh/registry/status_error.hpp"

namespace kh::registry {

bool is_valid_repo_part(std::string_view s) {
  if (s.empty() || s[0] == '.' || s.find("..") != std::string_view::npos) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

PackageSpec parse_package_spec(std::string_view spec) {
  auto bad = [&](const std::string& why) -> void {
    fail(KH_ERROR_INVALID_ARGUMENT, "invalid package spec '" + std::string(spec) + "': " + why +
                                        "; expected '<org>/<name>[@<version>]', e.g. 'kernels-community/rms-norm@1'");
  };
  std::string_view repo = spec, req;
  size_t at = spec.find('@');
  // Other tools' separators ("org/name:1", "org/name==1"): say what kh takes instead.
  for (std::string_view sep : {"==", ":", "#"}) {
    const size_t pos = spec.find(sep);
    if (at == std::string_view::npos && pos != std::string_view::npos && spec.find('/') < pos)
      bad("kh puts '@' before the version: did you mean '" + std::string(spec.substr(0, pos)) + "@" +
          std::string(spec.substr(pos + sep.size())) + "'?");
  }
  if (at != std::string_view::npos) {
    repo = spec.substr(0, at);
    req = spec.substr(at + 1);
    if (req.empty()) bad("nothing follows '@'");
  }
  size_t slash = repo.find('/');
  if (slash == std::string_view::npos) bad("it has no '/' between org and name");
  std::string_view org = repo.substr(0, slash), name = repo.substr(slash + 1);
  std::string rule = " must be non-empty lowercase [a-z0-9._-], not start with '.' and not contain '..'";
  std::string lower(repo);
  for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  if (lower != repo && is_valid_repo_part(std::string_view(lower).substr(0, slash)) &&
      is_valid_repo_part(std::string_view(lower).substr(slash + 1)))
    rule += " (did you mean '" + lower + "'?)";
  if (!is_valid_repo_part(org)) bad("the org '" + std::string(org) + "'" + rule);
  if (!is_valid_repo_part(name)) bad("the name '" + std::string(name) + "'" + rule);

  PackageSpec out;
  out.org = std::string(org);
  out.name = std::string(name);
  try {
    out.request = parse_version_request(req);
  } catch (const StatusError& e) {
    fail(e.status(), "in package spec '" + std::string(spec) + "': " + e.what());
  }
  return out;
}

}  // namespace kh::registry
