// `kernels lock <spec>...`: resolve each package on the hub and pin its version and the
// sha256 of every build of it in kernels.lock (so one lockfile serves every machine).
#include <cstdio>

#include "commands.hpp"
#include "kh/install/resolve.hpp"
#include "human_size.hpp"
#include "common_options.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/lockfile.hpp"
#include "kh/registry/package_spec.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_lock_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> specs;
    install::Options options;
    std::string out = registry::kDefaultLockfileName;
  };
  const auto verb = add_verb<Args>(
      app, {"lock", "Pin packages' versions and the sha256 of their builds in kernels.lock",
            "Then: kernels get <spec> --locked, or kh_load_options.lockfile / KH_LOCKFILE in a host."});
  verb.cmd->add_option("specs", verb.args->specs, "Packages: org/name[@version]")->required();
  add_hub_options(verb.cmd, verb.args->options);
  verb.cmd->add_option("--lockfile", verb.args->out, "Lockfile to write (entries for other packages are kept)");
  verb.run([](Args& args) {
    auto session = open_session(args.options);  // the hub's indexes alone: locking resolves afresh
    registry::Lockfile lock;
    if (registry::path_exists(args.out)) lock = registry::load_lockfile(args.out);
    for (const auto& text : args.specs) {
      const install::FoundRelease found = install::find_release(*session, text);
      const registry::PackageSpec& spec = found.spec;
      const registry::Release& release = *found.release;
      registry::LockedPackage locked;
      locked.request = spec.request.text;
      locked.version = registry::to_string(release.version);
      locked.hub = found.hub_url;
      for (const auto& v : release.variants) locked.variants[v.key] = v.sha256;
      std::printf("locked %s %s (%s)\n", spec.repo().c_str(), locked.version.c_str(),
                  count_of(locked.variants.size(), "build").c_str());
      lock.packages[spec.repo()] = std::move(locked);
    }
    registry::write_file_atomic(args.out, registry::serialize_lockfile(lock));
    std::printf("wrote %s\n", args.out.c_str());
  });
}

}  // namespace kh::cli
