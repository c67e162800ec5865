// `kernels search [TEXT]`: the packages a hub lists (its catalog.json), by name.
#include <algorithm>
#include <cctype>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common_options.hpp"
#include "kh/registry/hub_directory.hpp"
#include "kh/registry/status_error.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {
namespace {

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

void add_search_command(CLI::App& app) {
  struct Args {
    std::string text;
    install::Options options;
    bool json = false;
  };
  const auto verb = add_verb<Args>(
      app, {"search", "List the packages a hub offers, or those whose name contains TEXT",
            "The names come from the hub's catalog.json, which is not signed: `kernels info <org/name>` shows a "
            "package's verified versions and builds."});
  verb.cmd->add_option("text", verb.args->text, "Part of a package name (case-insensitive); none lists every package");
  add_hub_option(verb.cmd, verb.args->options.hub_url);
  verb.cmd->add_flag("--json", verb.args->json, "Print {\"hub\": URL, \"packages\": [{\"repo\", \"latest\"}...]}");
  verb.run([](Args& args) {
    auto session = open_session(args.options);
    if (session->options().hub_url.empty())
      fail(KH_ERROR_INVALID_ARGUMENT, "kernels search: which hub? pass --hub URL or set KH_HUB");
    registry::Hub* hub = &session->hub(session->options().hub_url);
    registry::require_kh_hub(*hub);
    const std::vector<registry::CatalogEntry> all = registry::read_catalog(*hub);
    const std::string needle = lowercase(args.text);
    std::vector<registry::CatalogEntry> found;
    for (const auto& e : all)
      if (lowercase(e.repo).find(needle) != std::string::npos) found.push_back(e);
    if (args.json) {
      nlohmann::json packages = nlohmann::json::array();
      for (const auto& e : found) packages.push_back({{"repo", e.repo}, {"latest", e.latest}});
      std::printf("%s\n", nlohmann::json{{"hub", hub->url()}, {"packages", packages}}.dump(2).c_str());
      return;
    }
    if (found.empty()) {
      std::printf("%s lists no package%s%s\n", hub->url().c_str(), args.text.empty() ? "" : " matching ",
                  args.text.c_str());
      std::vector<std::string> names;
      for (const auto& e : all) names.push_back(e.repo);
      const std::string wanted = args.text.find('/') == std::string::npos ? "/" + needle : needle;
      for (const std::string& n : registry::similar_repo_names(wanted, names)) std::printf("  did you mean %s?\n", n.c_str());
      return;
    }
    size_t width = 0;
    for (const auto& e : found) width = std::max(width, e.repo.size());
    for (const auto& e : found)
      std::printf("%-*s  %s\n", static_cast<int>(width), e.repo.c_str(), e.latest.empty() ? "-" : e.latest.c_str());
  });
}

}  // namespace kh::cli
