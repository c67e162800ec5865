// `kernels info <org>/<name>[@<version>]`: versions, builds and ops a hub offers.
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common_options.hpp"
#include "coverage_report.hpp"
#include "kh/registry/package_spec.hpp"
#include "session.hpp"

namespace kh::cli {

void add_info_command(CLI::App& app) {
  struct Args {
    std::string spec;
    install::Options options;
    bool json = false;
    bool coverage = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("info", "Show the versions, builds and ops of a kernel package on a hub");
  cmd->add_option("spec", args->spec, "Package: org/name, or org/name@version for one version")->required();
  add_hub_options(cmd, args->options);
  cmd->add_flag("--json", args->json, "Print the result as JSON");
  cmd->add_flag("--coverage", args->coverage,
                "For each GPU arch (sm75 .. sm121, gfx90a, gfx942, gfx950, gfx1100): whether the release runs "
                "there natively, through PTX, or not at all");
  cmd->callback([args]() {
    auto session = open_session(args->options);
    const registry::PackageSpec spec = registry::parse_package_spec(args->spec);
    const registry::RepoIndex& index = session->index(spec.repo(), session->require_hub(spec.repo()));
    std::vector<const registry::Release*> shown;
    if (args->spec.find('@') == std::string::npos) {
      for (const auto& r : index.releases) shown.push_back(&r);
    } else {
      shown.push_back(&registry::resolve_release(index, spec.request));
    }
    if (args->json) {
      nlohmann::json releases = nlohmann::json::array();
      for (const auto* r : shown) {
        nlohmann::json variants = nlohmann::json::array();
        for (const auto& v : r->variants) {
          nlohmann::json ops = nlohmann::json::array();
          for (const auto& op : v.ops) ops.push_back({{"name", op.name}, {"schema", op.schema}});
          nlohmann::json entry = {{"variant", v.key}, {"sha256", v.sha256}, {"size", v.size}, {"abi", v.abi}, {"ops", ops}};
          if (!v.glibc.empty()) entry["glibc"] = v.glibc;
          variants.push_back(std::move(entry));
        }
        nlohmann::json release = {{"version", registry::to_string(r->version)}, {"yanked", r->yanked}, {"variants", variants}};
        if (args->coverage) release["coverage"] = coverage_json(*r);
        releases.push_back(std::move(release));
      }
      nlohmann::json out = {{"repo", index.repo}, {"metadata_version", index.version}, {"expires", index.expires},
                            {"releases", releases}};
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    std::printf("%s (metadata version %llu, expires %s)\n", index.repo.c_str(),
                static_cast<unsigned long long>(index.version), index.expires.c_str());
    for (const auto* r : shown) {
      std::printf("\n%s%s\n", registry::to_string(r->version).c_str(), r->yanked ? "  (yanked)" : "");
      for (const auto& v : r->variants)
        std::printf("  build %s  %llu bytes  sha256:%s%s\n", v.key.c_str(), static_cast<unsigned long long>(v.size),
                    v.sha256.c_str(), v.glibc.empty() ? "" : ("  needs glibc " + v.glibc).c_str());
      // Every build of a release exports the same ops; show them once, from the first.
      if (!r->variants.empty()) {
        std::printf("  ops:\n");
        for (const auto& op : r->variants.front().ops) std::printf("    %s\n", op.schema.c_str());
      }
      if (args->coverage) print_coverage(index.repo, *r);
    }
  });
}

}  // namespace kh::cli
