// See catalog.hpp.
#include "catalog.hpp"

#include <nlohmann/json.hpp>

#include "kh/registry/json_limits.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry::detail {

std::string latest_version(const RepoIndex& index) {
  VersionRequest latest;
  for (auto it = index.releases.rbegin(); it != index.releases.rend(); ++it)
    if (!it->yanked && latest.matches(it->version)) return to_string(it->version);
  return index.releases.empty() ? "" : to_string(index.releases.back().version);
}

std::string merged_catalog(const std::optional<std::string>& remote, const std::map<std::string, std::string>& latest_by_repo) {
  std::map<std::string, nlohmann::ordered_json> entries;
  if (remote) {
    nlohmann::ordered_json doc;
    try {
      check_json_depth(*remote, "the hub's catalog.json");
      doc = nlohmann::ordered_json::parse(*remote);
    } catch (const nlohmann::json::exception&) {
      fail(KH_ERROR_BAD_METADATA, "the hub's catalog.json is not valid JSON; fix or remove it, then publish again");
    }
    if (doc.is_object() && doc.contains("repos") && doc["repos"].is_array())
      for (const auto& e : doc["repos"])
        if (e.is_object() && e.contains("repo") && e["repo"].is_string()) entries[e["repo"].get<std::string>()] = e;
  }
  for (const auto& [repo, latest] : latest_by_repo)
    entries[repo] = nlohmann::ordered_json{{"repo", repo}, {"latest", latest}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (auto& [name, e] : entries) list.push_back(std::move(e));
  return nlohmann::ordered_json{{"schema", 1}, {"repos", std::move(list)}}.dump(2) + "\n";
}

}  // namespace kh::registry::detail
