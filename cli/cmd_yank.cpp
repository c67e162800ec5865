// `kernels yank <org>/<name>@<version> --hub URL [--key K] [--undo]`: mark a release yanked
// (or not) in the hub's signed index, under its publish lock, as publish signs. Resolution
// skips a yanked release unless a request pins it exactly (a lockfile, @=1.2.0), so hosts
// that pinned it keep loading it; `kernels info` shows it "(yanked)".
#include <cstdio>
#include <vector>

#include "commands.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/package_spec.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_yank_command(CLI::App& app) {
  struct Args {
    std::string spec, hub;
    std::vector<std::string> keys;
    bool undo = false;
    int expires_days = 365;
  };
  const auto verb = add_verb<Args>(
      app, {"yank", "Mark a published release yanked (skipped unless pinned), or --undo it"});
  verb.cmd->add_option("release", verb.args->spec,
                       "<org>/<name>@<version>, one exact version (e.g. acme/scale@0.1.0)")->required();
  verb.cmd->add_option("--hub", verb.args->hub, "The hub (default: $KH_HUB)");
  verb.cmd->add_option("--key", verb.args->keys,
                       "Secret key file to sign the index with (repeatable; default: $KH_SIGNING_KEY)");
  verb.cmd->add_flag("--undo", verb.args->undo, "Make the release resolvable again");
  verb.cmd->add_option("--expires-days", verb.args->expires_days,
                       "Days until the rewritten index expires")->check(CLI::Range(1, 3650));
  verb.run([](Args& args) {
    const install::Settings& s = settings();
    const registry::PackageSpec spec = registry::parse_package_spec(args.spec);
    const size_t at = args.spec.find('@');
    if (at == std::string::npos)
      fail(KH_ERROR_INVALID_ARGUMENT, "yank: name the release, e.g. " + spec.repo() + "@1.2.0");
    std::string version = args.spec.substr(at + 1);
    if (!version.empty() && version[0] == '=') version.erase(0, 1);
    const std::string hub_url = args.hub.empty() ? s.hub : args.hub;
    if (hub_url.empty()) fail(KH_ERROR_INVALID_ARGUMENT, "yank: which hub? pass --hub URL or set KH_HUB");
    const registry::PublishOptions options = publish_options(args.keys, args.expires_days);
    const auto hub = registry::open_hub_writer(hub_url, s.hub_access(hub_url));
    const registry::YankOutcome out = registry::set_release_yanked(*hub, spec.repo(), version, !args.undo, options);
    const char* state = args.undo ? "not yanked" : "yanked";
    if (out.changed)
      std::printf("%s %s is now %s on %s (index version %llu)\n", spec.repo().c_str(), out.version.c_str(), state,
                  hub_url.c_str(), static_cast<unsigned long long>(out.index_version));
    else
      std::printf("%s %s was already %s on %s; nothing written\n", spec.repo().c_str(), out.version.c_str(), state,
                  hub_url.c_str());
  });
}

}  // namespace kh::cli
