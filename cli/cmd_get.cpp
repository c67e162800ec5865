// `kernels get <org>/<name>[@<version>]`: resolve, select, download, verify, cache.
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common_options.hpp"
#include "package_fetch.hpp"

namespace kh::cli {

void add_get_command(CLI::App& app) {
  struct Args {
    std::string spec;
    loader::FetchOptions options;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("get", "Fetch the build of a kernel package that fits this machine into the cache");
  cmd->add_option("spec", args->spec, "Package: org/name[@version], version as 1, 1.2, ^1.2.0, ~1.2.3, =1.2.3, latest or sha256:<hex>")
      ->required();
  add_hub_options(cmd, args->options);
  cmd->add_option("--variant", args->options.variant, "Fetch this build (variant key) instead of selecting one");
  cmd->add_flag("--json", args->json, "Print the result as one JSON object");
  cmd->footer("Example: kernels get kernels-community/rms-norm@1 --hub file:///srv/kh-hub");
  cmd->callback([args]() {
    const loader::FetchedPackage p = loader::fetch_package(args->spec, args->options);
    if (args->json) {
      nlohmann::json out = {{"repo", p.repo},       {"version", p.version},          {"variant", p.variant},
                            {"sha256", p.sha256},   {"path", p.dir},                 {"library", p.library_path},
                            {"hub", p.hub_url}};
      std::printf("%s\n", out.dump().c_str());
    } else {
      std::printf("%s %s\n  variant: %s\n  sha256:  %s\n  path:    %s\n", p.repo.c_str(), p.version.c_str(),
                  p.variant.c_str(), p.sha256.c_str(), p.dir.c_str());
    }
  });
}

}  // namespace kh::cli
