// `kernels get <org>/<name>[@<version>]`: resolve, select, download, verify, cache.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common_options.hpp"
#include "explain.hpp"
#include "kh/loader/host_facts_json.hpp"
#include "human_size.hpp"
#include "kh/loader/host_facts.hpp"
#include "kh/install/install.hpp"
#include "kh/install/resolve.hpp"
#include "kh/registry/lockfile.hpp"
#include "kh/registry/status_error.hpp"
#include "session.hpp"
#include "kh/loader/variant_select.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_get_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> specs;
    install::Options options;
    bool json = false;
    bool explain = false;
    bool all_targets = false;
    bool locked = false;
    std::string device;
  };
  const auto verb = add_verb<Args>(
      app, {"get", "Fetch the builds of kernel packages that fit this machine into the cache",
            "Examples:\n"
            "  kernels get kernels-community/rms-norm@1 --hub file:///srv/kh-hub\n"
            "  kernels get kernels-community/rms-norm@1 kernels-community/attention@1 --all-targets\n"
            "Downloads from http(s) hubs run several at once (KH_PARALLEL_DOWNLOADS, default 4)."});
  verb.cmd->add_option("spec", verb.args->specs,
                       "Packages: org/name[@version], version as 1, 1.2, ^1.2.0, ~1.2.3, =1.2.3, latest or sha256:<hex>; "
                       "several are resolved first, then downloaded together")
      ->required();
  add_hub_options(verb.cmd, verb.args->options);
  auto* target = verb.cmd->add_option("--target", verb.args->options.variant,
                                       "Fetch this build (variant key, e.g. cuda13.0-sm90a-abi1-x86_64-linux) instead of "
                                       "selecting one for this machine (default: $KH_TARGET)");
  verb.cmd->add_flag("--all-targets", verb.args->all_targets,
                     "Fetch every build of the version (for CI, containers, other machines)")
      ->excludes(target);
  verb.cmd->add_option("--lockfile", verb.args->options.lockfile,
                       "Resolve only what this lockfile pins (default with --locked: kernels.lock; else $KH_LOCKFILE)");
  verb.cmd->add_flag("--locked", verb.args->locked, "Refuse anything the lockfile does not pin");
  verb.cmd->add_option("--device", verb.args->device,
                       "Select for this GPU: N (device N of each backend), cuda:N or rocm:N, as `kernels doctor` lists "
                       "them (default: the first GPU)");
  verb.cmd->add_flag("--explain", verb.args->explain,
                     "Show this machine's facts and why each build was chosen or refused");
  verb.cmd->add_flag("--json", verb.args->json, "Print the result as one JSON object");
  verb.run([](Args& args) {
    install::Options given = args.options;
    if (args.locked && given.lockfile.empty()) given.lockfile = registry::kDefaultLockfileName;
    loader::DeviceRequest device;
    if (!args.device.empty()) {
      const auto parsed = loader::parse_device_request(args.device);
      if (!parsed)
        fail(KH_ERROR_INVALID_ARGUMENT, "--device '" + args.device + "': expected N, cuda:N or rocm:N (e.g. --device cuda:1)");
      device = *parsed;
    }
    // Each spec is resolved once. With --all-targets or --explain the verb chooses itself
    // (every build; or this machine's, after showing why), from the one resolution.
    const bool whole_release = args.explain || args.all_targets;
    auto session = whole_release ? open_session_choosing_any(given) : open_session(given, device);
    std::vector<install::Resolution> plans;
    nlohmann::json explanations = nlohmann::json::array();
    for (const std::string& spec_text : args.specs) {
      const install::Resolution resolved = install::resolve(*session, spec_text);
      if (!whole_release) {
        plans.push_back(resolved);
        continue;
      }
      const std::vector<registry::VariantEntry>& builds = resolved.release.variants;
      // This machine's selection, by the one function every load's chooser calls (the host's
      // facts, the device, --target / KH_TARGET as forced), shown before it is acted on, so a
      // refusal is explained too.
      const loader::HostFacts& facts = loader::host_facts();
      loader::check_device_request(facts, device);
      const install::BuildSelection selection = loader::select_build(builds, facts, device, session->options().variant);
      if (args.explain) {
        if (args.json) {
          explanations.push_back({{"host", loader::host_facts_json(facts)},
                                  {"device", device_title(facts, device)},
                                  {"selection", selection_json(selection)}});
        } else {
          if (explanations.empty()) {
            print_host_facts(facts);
            std::printf("\n");
          }
          explanations.push_back(nullptr);
          print_selection(resolved.repo + " " + resolved.version + " for " + device_title(facts, device), selection);
          std::printf("\n");
        }
      }
      if (args.all_targets) {
        for (const auto& v : builds) plans.push_back(install::with_build(*session, resolved, v.key));
      } else {
        // This machine's build (or --target's), refused with every build's reason when none fits.
        const std::string& key = install::chosen_build(selection, builds, resolved.repo + " " + resolved.version).key;
        plans.push_back(install::with_build(*session, resolved, key));
      }
    }
    nlohmann::json fetched = nlohmann::json::array();
    for (const install::InstalledPackage& p : install::install(*session, plans)) {
      if (args.json) {
        fetched.push_back({{"repo", p.repo}, {"version", p.version}, {"variant", p.variant}, {"sha256", p.sha256},
                           {"path", p.dir}, {"library", p.library_path}, {"hub", p.hub_url},
                           {"downloaded", p.downloaded}, {"download_bytes", p.download_bytes}});
      } else {
        const std::string how = p.downloaded ? "downloaded (" + human_size(p.download_bytes) + ")" : "already in the cache";
        std::printf("%s %s  %s\n  variant: %s\n  sha256:  %s\n  path:    %s\n", p.repo.c_str(), p.version.c_str(),
                    how.c_str(), p.variant.c_str(), p.sha256.c_str(), p.dir.c_str());
      }
    }
    if (args.json) {
      // One shape whatever the number of specs (docs/cli.md, "JSON output").
      nlohmann::json out{{"packages", fetched}};
      if (!explanations.empty()) out["explain"] = explanations;
      std::printf("%s\n", out.dump(2).c_str());
    }
  });
}

}  // namespace kh::cli
