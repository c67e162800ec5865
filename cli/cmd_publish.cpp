// `kernels publish <dist-dir> --hub <URL> [--key kh.key]`: blobs first, then each repo's
// index, signed with the given keys, on any hub kh can write (the scheme table).
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "commands.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_publish_command(CLI::App& app) {
  struct Args {
    std::string dist_dir, hub;
    std::vector<std::string> keys;
    int expires_days = 365;
  };
  const auto verb = add_verb<Args>(
      app, {"publish", "Publish the package archives in a directory to a hub",
            "Uploads to http(s) hubs authenticate with KH_PUBLISH_USER + KH_PUBLISH_PASSWORD (basic auth) or\n"
            "KH_PUBLISH_TOKEN (bearer; default: the hub's read token, KH_TOKEN); to oci:// registries with\n"
            "KH_REGISTRY_AUTH=user:password or the Docker config's auths. Publishers of one hub take turns\n"
            "(its publish lock): one waits for the other, and no release is lost."});
  verb.cmd->add_option("dist", verb.args->dist_dir, "Directory of .tar.zst archives made by `kernels pack`")
      ->required()
      ->check(CLI::ExistingDirectory);
  verb.cmd->add_option("--hub", verb.args->hub,
                       "Hub to publish to: file:///path (created if missing), http(s)://host/path on a server that "
                       "accepts WebDAV PUT and DELETE, or oci://registry/namespace")
      ->required();
  verb.cmd->add_option("--expires-days", verb.args->expires_days, "Days until the published metadata expires")
      ->check(CLI::Range(1, 3650));
  verb.cmd->add_option("--key", verb.args->keys,
                       "Secret key file to sign each index with (repeat when the hub's index role needs several; "
                       "default: $KH_SIGNING_KEY)");
  verb.run([](Args& args) {
    const registry::PublishOptions options = publish_options(args.keys, args.expires_days);
    const auto hub = registry::open_hub_writer(args.hub, settings().hub_access(args.hub));
    const auto published = registry::publish(args.dist_dir, *hub, options);
    if (published.empty()) fail(KH_ERROR_NOT_FOUND, "kernels publish: no .tar.zst archives in " + args.dist_dir);
    for (const auto& p : published)
      std::printf("%s %s %s  sha256:%s%s\n", p.repo.c_str(), p.version.c_str(), p.variant.c_str(), p.sha256.c_str(),
                  p.already_present ? "  (already published)" : "");
  });
}

}  // namespace kh::cli
