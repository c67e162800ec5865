// Hub existence, the catalog and name suggestions; see hub_directory.hpp.
#include "kh/registry/hub_directory.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "kh/registry/json_limits.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry {
namespace {


// Whether the hub has `rel`: false on "not found", rethrows anything else.
bool hub_has(Hub& hub, const std::string& rel, uint64_t max_bytes) {
  try {
    hub.fetch_metadata(rel, max_bytes);
    return true;
  } catch (const StatusError& e) {
    if (e.status() == KH_ERROR_NOT_FOUND) return false;
    if (e.status() == KH_ERROR_BAD_METADATA) return true;  // there, only larger than a marker should be
    throw;
  }
}

// Edits (insert, delete, replace, swap of two neighbours) that turn a into b: the optimal
// string alignment distance, since swapped letters are the commonest slip ("lsit").
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// A slip of the keyboard: a third of the word's length, at least 1, at most 3 edits.
size_t slip_limit(const std::string& word) { return std::clamp<size_t>(word.size() / 3, 1, 3); }

// The (score, name) pairs' names, lowest score first, at most three.
std::vector<std::string> best_three(std::vector<std::pair<size_t, std::string>> scored) {
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) out.push_back(scored[i].second);
  return out;
}

std::string name_part(const std::string& repo) {
  const size_t slash = repo.find('/');
  return slash == std::string::npos ? repo : repo.substr(slash + 1);
}

}  // namespace

void require_kh_hub(Hub& hub) {
  const std::string tried = hub.url() + "/kh-hub.json and " + hub.url() + "/root/1.root.json";
  try {
    if (hub_has(hub, "kh-hub.json", kMaxHubDescriptorBytes) || hub_has(hub, "root/1.root.json", kMaxRootBytes)) return;
  } catch (const StatusError& e) {
    fail(KH_ERROR_NOT_FOUND, "no kh hub at " + hub.url() + " (tried " + tried + "): " + e.what());
  }
  fail(KH_ERROR_NOT_FOUND, "no kh hub at " + hub.url() + " (tried " + tried +
                               ": neither exists); check the hub URL (--hub or KH_HUB): it names the folder that "
                               "holds kh-hub.json");
}

std::vector<CatalogEntry> read_catalog(Hub& hub) {
  std::string text;
  try {
    text = hub.fetch_metadata("catalog.json", kMaxCatalogBytes);
  } catch (const StatusError& e) {
    if (e.status() == KH_ERROR_NOT_FOUND) return {};
    throw;
  }
  const std::string source = "catalog.json from " + hub.url();
  check_json_depth(text, source);
  std::vector<CatalogEntry> out;
  try {
    const nlohmann::json doc = nlohmann::json::parse(text);
    for (const auto& r : doc.at("repos")) {
      CatalogEntry e;
      e.repo = r.at("repo").get<std::string>();
      if (r.contains("latest")) e.latest = r.at("latest").get<std::string>();
      out.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& e) {
    fail(KH_ERROR_BAD_METADATA, source + " is not a catalog (" + e.what() + ")");
  }
  std::sort(out.begin(), out.end(), [](const CatalogEntry& a, const CatalogEntry& b) { return a.repo < b.repo; });
  return out;
}

std::vector<std::string> similar_repo_names(const std::string& wanted, const std::vector<std::string>& known) {
  const std::string wanted_name = name_part(wanted);
  const size_t limit = slip_limit(wanted_name);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& repo : known) {
    if (repo == wanted) continue;
    const std::string name = name_part(repo);
    size_t score = std::min(edit_distance(wanted, repo), edit_distance(wanted_name, name));
    const bool part = wanted_name.size() >= 3 && name.find(wanted_name) != std::string::npos;
    if (score > limit && !part) continue;
    if (score > limit) score = limit + 1;  // a part of the name: after the close spellings
    scored.emplace_back(score, repo);
  }
  return best_three(std::move(scored));
}

std::vector<std::string> similar_words(const std::string& word, const std::vector<std::string>& known) {
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& k : known) {
    const size_t d = edit_distance(word, k);
    if (d <= slip_limit(word) && k != word) scored.emplace_back(d, k);
  }
  return best_three(std::move(scored));
}

void fail_repo_not_found(Hub& hub, const std::string& repo, const std::string& tried) {
  require_kh_hub(hub);
  std::string msg = "hub " + hub.url() + " has no package " + repo + " (no " + tried + ")";
  std::vector<std::string> names;
  try {
    for (const CatalogEntry& e : read_catalog(hub)) names.push_back(e.repo);
  } catch (const StatusError&) {
    // A catalog that cannot be read only costs the suggestion.
  }
  const std::vector<std::string> close = similar_repo_names(repo, names);
  if (!close.empty()) {
    msg += "; did you mean ";
    for (size_t i = 0; i < close.size(); ++i) msg += (i ? (i + 1 == close.size() ? " or " : ", ") : "") + close[i];
    msg += "?";
  }
  msg += names.empty() ? "; check the name"
                       : std::string(close.empty() ? ";" : "") + " (`kernels search --hub " + hub.url() +
                             "` lists its " + std::to_string(names.size()) + (names.size() == 1 ? " package)" : " packages)");
  fail(KH_ERROR_NOT_FOUND, msg);
}

}  // namespace kh::registry
