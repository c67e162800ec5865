// `kernels hub init <dir|url> --keys DIR [--pin]`: a signed hub in one step, for a hub
// operator's first day and for every script and test that publishes to a local hub: the
// signing keys (made when absent), the hub's first root, and optionally that root pinned in
// this cache, as a client pins it with `kernels trust`.
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <optional>

#include "commands.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/metadata_limits.hpp"
#include "kh/registry/minisign.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {
namespace {

struct HubInitArgs {
  std::string hub, keys;
  bool pin = false;
  int expires_days = 365;
  install::Options options;  // --cache for --pin
};

// A directory names a file hub: scripts pass the folder they made, the verb says its URL.
std::string hub_url_of(const std::string& where) {
  if (where.find("://") != std::string::npos) return where;
  return "file://" + std::filesystem::absolute(where).lexically_normal().string();
}

// The key pair in dir: the existing one (a hub re-made with the same keys keeps its clients'
// pins valid), else a new one.
registry::minisign::SecretKey signing_key(const std::string& dir, bool& made) {
  made = !registry::path_exists(dir + "/kh.key");
  if (!made) return registry::read_secret_key_file(dir + "/kh.key");
  registry::minisign::SecretKey key = registry::minisign::generate_key();
  registry::write_key_pair_files(dir, "kh", key, false);
  return key;
}

void init_hub(const HubInitArgs& args) {
  const std::string url = hub_url_of(args.hub);
  bool made = false;
  const registry::minisign::SecretKey key = signing_key(args.keys, made);
  std::printf("%s key %s in %s (kh.pub, kh.key)\n", made ? "made" : "using", key.public_key().key_id_hex().c_str(),
              args.keys.c_str());

  const auto writer = registry::open_hub_writer(url, settings().hub_access(url));
  registry::RootSpec spec;
  spec.root_keys = {key.public_key()};
  spec.index_keys = spec.root_keys;
  spec.expires_unix = static_cast<int64_t>(std::time(nullptr)) + int64_t{args.expires_days} * 86400;
  // RootStep::First: a hub that already has a root is refused, never given a second first root.
  const registry::RootMetadata root = registry::write_next_root(*writer, spec, {key}, registry::RootStep::First);
  std::printf("wrote root/1.root.json of %s (expires %s)\n", url.c_str(), root.expires.c_str());

  if (args.pin) {
    install::Options o = args.options;
    o.hub_url = url;
    auto session = open_session(o);
    registry::Hub& hub = session->hub(url);
    const std::optional<std::string> bytes = registry::fetch_metadata_if_present(hub, "root/1.root.json", registry::kMaxRootBytes);
    if (!bytes) fail(KH_ERROR_NETWORK, "the hub " + url + " does not serve the root/1.root.json just written");
    registry::TrustStore(session->cache(), hub.id()).pin_root(*bytes, url + "/root/1.root.json");
    std::printf("pinned it in the cache %s\n", session->cache().root().c_str());
  }
  std::printf("publish with: kernels publish <dist> --hub %s --key %s/kh.key\n", url.c_str(), args.keys.c_str());
}

}  // namespace

void add_hub_command(CLI::App& app) {
  CLI::App* hub = add_verb_group(app, {"hub", "Set up a hub you operate"});
  const auto init = add_verb<HubInitArgs>(
      *hub, {"init", "Make a signed hub: signing keys (unless present), its first root, and with --pin trust in it here",
             "The one key is the hub's root and index key (threshold 1); `kernels trust rotate` adds keys later.\n"
             "Example (a local signed hub, trusted here):\n"
             "  kernels hub init build/hub --keys build/keys --pin\n"
             "  kernels publish dist --hub file://$PWD/build/hub --key build/keys/kh.key"});
  init.cmd->add_option("hub", init.args->hub, "A folder (becomes file://<absolute path>) or a hub URL kh can write")
      ->required();
  init.cmd->add_option("--keys", init.args->keys, "Folder of the key pair kh.pub/kh.key: used when present, else made")
      ->required();
  init.cmd->add_flag("--pin", init.args->pin,
                     "Also pin the new root in the cache, as `kernels trust <root.json> --hub URL` does for a client");
  init.cmd->add_option("--cache", init.args->options.cache_root,
                       "Cache to pin in (default: $KH_CACHE, else $XDG_CACHE_HOME/kh)");
  init.cmd->add_option("--expires-days", init.args->expires_days, "Days until the root expires")
      ->check(CLI::Range(1, 3650));
  init.run([](HubInitArgs& args) { init_hub(args); });
}

}  // namespace kh::cli
