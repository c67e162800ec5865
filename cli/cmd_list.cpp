// `kernels list`: the packages complete in the cache.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common_options.hpp"
#include "kh/registry/cache.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_list_command(CLI::App& app) {
  struct Args {
    std::string cache_root;
    bool json = false;
  };
  const auto verb = add_verb<Args>(app, {"list", "List the kernel packages in the cache"});
  add_cache_option(verb.cmd, verb.args->cache_root);
  verb.cmd->add_flag("--json", verb.args->json, "Print {\"cache\": DIR, \"packages\": [...]}");
  verb.run([](Args& args) {
    registry::Cache cache = open_cache(args.cache_root);
    const auto packages = cache.list_packages(/*include_damaged=*/true);
    if (args.json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& p : packages)
        out.push_back({{"repo", p.manifest.name}, {"version", p.manifest.version}, {"variant", p.manifest.variant},
                       {"sha256", p.sha256}, {"path", p.dir}, {"damaged", p.damaged}});
      std::printf("%s\n", nlohmann::json{{"cache", cache.root()}, {"packages", out}}.dump(2).c_str());
      return;
    }
    if (packages.empty()) {
      std::printf("No packages in %s\n", cache.root().c_str());
      return;
    }
    for (const auto& p : packages) {
      std::printf("%s %s  %s  %s\n", p.manifest.name.c_str(), p.manifest.version.c_str(), p.manifest.variant.c_str(),
                  p.dir.c_str());
      if (p.damaged)  // the tree no longer matches its manifest; get/load fetch it again
        std::printf("  DAMAGED: %s\n  `kernels get %s@=%s` installs it again\n", p.problem.c_str(),
                    p.manifest.name.c_str(), p.manifest.version.c_str());
    }
  });
}

}  // namespace kh::cli
