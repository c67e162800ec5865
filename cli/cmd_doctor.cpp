// `kernels doctor [spec...]`: this machine's facts and, for each requested (or cached)
// package, the build selection would choose and why every other build was refused.
#include <cstdio>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common_options.hpp"
#include "explain.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/package_spec.hpp"
#include "session.hpp"

namespace kh::cli {

void add_doctor_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> specs;
    install::Options options;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("doctor", "Show this machine's facts and which build of each package fits it, and why");
  cmd->add_option("specs", args->specs, "Packages to explain (org/name[@version]); default: the packages in the cache");
  add_hub_options(cmd, args->options);
  cmd->add_flag("--json", args->json, "Print the result as JSON");
  cmd->callback([args]() {
    auto session = open_session(args->options);
    const loader::HostFacts& facts = loader::host_facts();
    nlohmann::json packages = nlohmann::json::array();
    if (!args->json) print_host_facts(facts);

    auto explain = [&](const std::string& title, const std::vector<registry::VariantEntry>& builds) {
      const loader::VariantSelection selection = loader::select_variant(builds, facts);
      if (args->json) {
        nlohmann::json entry = selection_json(selection);
        entry["package"] = title;
        packages.push_back(entry);
      } else {
        std::printf("\n");
        print_selection(title, selection);
      }
    };

    if (!args->specs.empty()) {
      for (const auto& text : args->specs) {
        const registry::PackageSpec spec = registry::parse_package_spec(text);
        const registry::RepoIndex& index = session->index(spec.repo(), session->require_hub(spec.repo()));
        const registry::Release& release = registry::resolve_release(index, spec.request);
        explain(spec.repo() + " " + registry::to_string(release.version), release.variants);
      }
    } else {
      // Cached packages, grouped by repo and version: which of the cached builds fits.
      std::map<std::string, std::vector<registry::VariantEntry>> cached;
      for (const auto& p : session->cache().list_packages()) {
        registry::VariantEntry e;
        e.key = p.manifest.variant;
        e.sha256 = p.sha256;
        e.glibc = p.manifest.glibc;  // the floor, as the index had it
        cached[p.manifest.name + " " + p.manifest.version + " (cached)"].push_back(e);
      }
      if (cached.empty() && !args->json) std::printf("\nNo packages in the cache; name some: kernels doctor org/name@1\n");
      for (const auto& [title, builds] : cached) explain(title, builds);
    }
    if (args->json)
      std::printf("%s\n", nlohmann::json{{"host", host_facts_json(facts)}, {"packages", packages}}.dump(2).c_str());
  });
}

}  // namespace kh::cli
