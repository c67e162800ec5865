// `kernels publish <dist-dir> --hub <file://dir | https://host/path> [--key kh.key]`: blobs
// first, then each repo's index, signed with the given keys.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "commands.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::cli {

void add_publish_command(CLI::App& app) {
  struct Args {
    std::string dist_dir, hub;
    std::vector<std::string> keys;
    int expires_days = 365;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("publish", "Publish the package archives in a directory to a hub");
  cmd->add_option("dist", args->dist_dir, "Directory of .tar.zst archives made by `kernels pack`")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--hub", args->hub,
                  "Hub to publish to: file:///path (created if missing), or http(s)://host/path on a server that "
                  "accepts WebDAV PUT and DELETE")
      ->required();
  cmd->add_option("--expires-days", args->expires_days, "Days until the published metadata expires")
      ->check(CLI::Range(1, 3650));
  cmd->add_option("--key", args->keys,
                  "Secret key file to sign each index with (repeat when the hub's index role needs several; "
                  "default: $KH_SIGNING_KEY)");
  cmd->footer(
      "Uploads to http(s) hubs authenticate with KH_PUBLISH_USER + KH_PUBLISH_PASSWORD (basic auth) or\n"
      "KH_PUBLISH_TOKEN (bearer; default: the hub's read token, KH_TOKEN). Run one publish per hub at a time.");
  cmd->callback([args]() {
    const std::string prefix = "file://";
    const bool http = args->hub.rfind("http://", 0) == 0 || args->hub.rfind("https://", 0) == 0;
    if (!http && args->hub.compare(0, prefix.size(), prefix) != 0)
      fail(KH_ERROR_INVALID_ARGUMENT, "kernels publish: hub " + args->hub +
                                          " is neither a file:// nor an http(s):// URL, e.g. file:///srv/kh-hub");
    std::vector<std::string> key_files = args->keys;
    const char* env_key = std::getenv("KH_SIGNING_KEY");
    if (key_files.empty() && env_key != nullptr && *env_key != '\0') key_files.push_back(env_key);
    std::vector<registry::minisign::SecretKey> keys;
    for (const auto& path : key_files) keys.push_back(registry::read_secret_key_file(path));
    const auto published =
        http ? registry::publish_to_http_hub(args->dist_dir, args->hub, args->expires_days, keys)
             : registry::publish_to_file_hub(args->dist_dir, args->hub.substr(prefix.size()), args->expires_days, keys);
    if (published.empty()) fail(KH_ERROR_NOT_FOUND, "kernels publish: no .tar.zst archives in " + args->dist_dir);
    for (const auto& p : published)
      std::printf("%s %s %s  sha256:%s%s\n", p.repo.c_str(), p.version.c_str(), p.variant.c_str(), p.sha256.c_str(),
                  p.already_present ? "  (already published)" : "");
  });
}

}  // namespace kh::cli
