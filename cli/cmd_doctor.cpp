// `kernels doctor [spec...]`: this machine's facts and, for each requested (or cached)
// package and each GPU of this machine, the build selection would choose for that GPU and why
// every other build was refused.
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kh/install/resolve.hpp"
#include "common_options.hpp"
#include "explain.hpp"
#include "kh/loader/host_facts_json.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/package_spec.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_doctor_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> specs;
    install::Options options;
    bool json = false;
  };
  const auto verb = add_verb<Args>(
      app, {"doctor", "Show this machine's facts and which build of each package each GPU would get, and why"});
  verb.cmd->add_option("specs", verb.args->specs,
                       "Packages to explain (org/name[@version]); default: the packages in the cache");
  add_hub_options(verb.cmd, verb.args->options);
  verb.cmd->add_flag("--json", verb.args->json, "Print the result as JSON");
  verb.run([](Args& args) {
    auto session = open_session(args.options);
    const loader::HostFacts& facts = loader::host_facts();
    nlohmann::json packages = nlohmann::json::array();
    if (!args.json) print_host_facts(facts);

    // One selection per GPU (a machine without one: the default request, CPU builds). The
    // JSON keeps the first device's selection at the top level, as before per-device doctor.
    const std::vector<loader::DeviceRequest> devices = every_device(facts);
    auto explain = [&](const std::string& title, const std::vector<registry::VariantEntry>& builds) {
      nlohmann::json per_device = nlohmann::json::array();
      if (!args.json) std::printf("\n%s\n", title.c_str());
      for (const loader::DeviceRequest& device : devices) {
        // The one selection function the chooser of every load and get calls.
        const install::BuildSelection selection = loader::select_build(builds, facts, device);
        if (args.json) {
          nlohmann::json entry = selection_json(selection);
          entry["device"] = device_title(facts, device);
          per_device.push_back(std::move(entry));
        } else {
          print_selection(device_title(facts, device), selection, 2);
        }
      }
      if (args.json) {
        nlohmann::json entry = per_device.front();
        entry.erase("device");
        entry["package"] = title;
        entry["devices"] = std::move(per_device);
        packages.push_back(std::move(entry));
      }
    };

    if (!args.specs.empty()) {
      for (const auto& text : args.specs) {
        const install::FoundRelease found = install::find_release(*session, text);
        explain(found.spec.repo() + " " + registry::to_string(found.release->version), found.release->variants);
      }
    } else {
      // Cached packages, grouped by repo and version: which of the cached builds fits.
      std::map<std::string, std::vector<registry::VariantEntry>> cached;
      for (const auto& p : session->cache().list_packages()) {
        registry::VariantEntry e;
        e.key = p.manifest.variant;
        e.sha256 = p.sha256;
        e.glibc = p.manifest.glibc;  // the floor, as the index had it
        e.runtime = p.manifest.runtime;
        e.code_object = p.manifest.code_object;
        cached[p.manifest.name + " " + p.manifest.version + " (cached)"].push_back(e);
      }
      if (cached.empty() && !args.json) std::printf("\nNo packages in the cache; name some: kernels doctor org/name@1\n");
      for (const auto& [title, builds] : cached) explain(title, builds);
    }
    if (args.json)
      std::printf("%s\n", nlohmann::json{{"host", loader::host_facts_json(facts)}, {"packages", packages}}.dump(2).c_str());
  });
}

}  // namespace kh::cli
