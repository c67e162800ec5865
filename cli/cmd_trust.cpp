// `kernels trust <root.json>`: pin a hub's root of trust in the cache (client side).
// `kernels trust init|rotate --hub URL`: write a hub's next root (operator side), on any hub
// kh can write.
// `kernels trust show`, `kernels trust canonical <root.json>`. See docs/trust.md.
#include <cstdio>
#include <ctime>
#include <optional>
#include <vector>

#include "commands.hpp"
#include "common_options.hpp"
#include "kh/registry/cache.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_directory.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/registry/trust.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {
namespace {

constexpr uint64_t kMaxRootFile = registry::kMaxRootBytes;

struct RootArgs {
  std::string hub;
  std::vector<std::string> root_keys, index_keys, signers;
  uint32_t threshold = 1, index_threshold = 0;
  int expires_days = 365;
  std::string out;  // a local copy of the written root, to hand to clients
};

void add_root_writer(CLI::App& trust, const char* name, const char* help, bool first) {
  const auto verb = add_verb<RootArgs>(trust, {name, help});
  verb.cmd->add_option("--hub", verb.args->hub,
                       "The hub to write root/<N>.root.json into: file:///path, http(s)://... with WebDAV PUT, or "
                       "oci://registry/namespace (credentials as for `kernels publish`)")
      ->required();
  verb.cmd->add_option("--key", verb.args->root_keys, "A root key's public key file (repeat for several)")->required();
  verb.cmd->add_option("--threshold", verb.args->threshold, "How many root keys must sign the next root (default 1)");
  verb.cmd->add_option("--index-key", verb.args->index_keys,
                       "An index key's public key file (repeat; default: the root keys)");
  verb.cmd->add_option("--index-threshold", verb.args->index_threshold,
                       "How many index keys must sign an index (default: 1)");
  verb.cmd->add_option("--sign", verb.args->signers,
                       first ? "Secret key file of a root key, to sign with (repeat: a threshold is needed)"
                             : "Secret key file to sign with: a threshold of the current root's root keys AND of the "
                               "new root's (repeat)")
      ->required();
  verb.cmd->add_option("--expires-days", verb.args->expires_days,
                       "Days until this root expires")->check(CLI::Range(1, 3650));
  verb.cmd->add_option("--out", verb.args->out,
                       "Also write the root, as the hub now serves it, to this file: what clients pin with `kernels trust`");
  verb.run([first](RootArgs& args) {
    const auto hub = registry::open_hub_writer(args.hub, settings().hub_access(args.hub));
    registry::RootSpec spec;
    for (const auto& p : args.root_keys) spec.root_keys.push_back(registry::read_public_key_file(p));
    for (const auto& p : args.index_keys) spec.index_keys.push_back(registry::read_public_key_file(p));
    if (spec.index_keys.empty()) spec.index_keys = spec.root_keys;
    spec.root_threshold = args.threshold;
    spec.index_threshold = args.index_threshold == 0 ? 1 : args.index_threshold;
    spec.expires_unix = static_cast<int64_t>(std::time(nullptr)) + int64_t{args.expires_days} * 86400;
    std::vector<registry::minisign::SecretKey> signers;
    for (const auto& p : args.signers) signers.push_back(registry::read_secret_key_file(p));
    const registry::RootMetadata root =
        registry::write_next_root(*hub, spec, signers, first ? registry::RootStep::First : registry::RootStep::Rotate);
    const std::string where = hub->is_local() ? hub->url().substr(std::string("file://").size()) : hub->url();
    std::printf("wrote %s/root/%llu.root.json (root keys %zu, threshold %u; index keys %zu, threshold %u; expires %s)\n",
                where.c_str(), static_cast<unsigned long long>(root.version), root.root_role.keyids.size(),
                root.root_role.threshold, root.index_role.keyids.size(), root.index_role.threshold,
                root.expires.c_str());
    const std::string rel = "root/" + std::to_string(root.version) + ".root.json";
    if (!args.out.empty()) {
      const std::optional<std::string> bytes = registry::fetch_metadata_if_present(hub->reader(), rel, kMaxRootFile);
      if (!bytes) fail(KH_ERROR_NETWORK, "the hub " + args.hub + " does not serve the " + rel + " just written");
      registry::write_file_atomic(args.out, *bytes);
      std::printf("wrote its copy %s\n", args.out.c_str());
    }
    if (first && !args.out.empty())
      std::printf("clients trust it with: kernels trust %s --hub %s\n", args.out.c_str(), args.hub.c_str());
    else if (first && hub->is_local())
      std::printf("clients trust it with: kernels trust %s/root/1.root.json --hub %s\n", where.c_str(),
                  args.hub.c_str());
    else if (first && !hub->is_local())
      std::printf("clients trust it with: kernels trust 1.root.json --hub %s\n"
                  "(hand them 1.root.json over a channel they trust, not only through the hub itself; --out FILE\n"
                  "keeps a copy)\n",
                  args.hub.c_str());
  });
}

}  // namespace

void add_trust_command(CLI::App& app) {
  struct PinArgs {
    std::string root_file;
    install::Options options;
    bool replace = false;
  };
  const auto pin = add_verb<PinArgs>(
      app, {"trust", "Pin a hub's root of trust, or write a root for a hub you operate",
            "Examples:\n"
            "  kernels trust hub-root.json --hub https://hub.example.org   # pin; `kernels get` then verifies everything\n"
            "  kernels trust init --hub file:///srv/hub --key keys/kh.pub --sign keys/kh.key\n"
            "  kernels trust rotate --hub file:///srv/hub --key a.pub --key b.pub --key c.pub --threshold 2 \\\n"
            "      --sign old.key --sign a.key --sign b.key"});
  CLI::App* trust = pin.cmd;
  trust->add_option("root", pin.args->root_file, "A root.json obtained from the hub's operator over a channel you trust")
      ->check(CLI::ExistingFile);
  add_hub_options(trust, pin.args->options);
  trust->add_flag("--replace", pin.args->replace, "Replace an existing pin (forgets the roots and rollback state seen)");
  pin.run([trust](PinArgs& args) {
    if (trust->get_subcommands().size() > 0) return;
    if (args.root_file.empty())
      fail(KH_ERROR_INVALID_ARGUMENT, "kernels trust: give a root.json to pin, or a subcommand (init, rotate, show, "
                                      "canonical); see `kernels trust --help`");
    auto session = open_session(args.options);
    const install::Options& o = session->options();
    if (o.hub_url.empty())
      fail(KH_ERROR_INVALID_ARGUMENT, "kernels trust: which hub is this root for? pass --hub URL or set KH_HUB");
    registry::Hub* hub = &session->hub(o.hub_url);
    // Pinning a root for a URL where no hub is would only fail later, as a trust error.
    if (!o.offline) registry::require_kh_hub(*hub);
    registry::TrustStore store(session->cache(), hub->id());
    const registry::RootMetadata root =
        store.pin_root(registry::read_file(args.root_file, kMaxRootFile), args.root_file, args.replace);
    std::printf("trusting root version %llu of hub %s (root keys %zu, threshold %u; index keys %zu, threshold %u; "
                "expires %s)\n",
                static_cast<unsigned long long>(root.version), hub->url().c_str(), root.root_role.keyids.size(),
                root.root_role.threshold, root.index_role.keyids.size(), root.index_role.threshold,
                root.expires.c_str());
  });

  add_root_writer(*trust, "init", "Write root/1.root.json for a hub you operate", true);
  add_root_writer(*trust, "rotate", "Write the next root of a hub you operate, signed by old and new root keys", false);

  const auto show = add_verb<install::Options>(
      *trust, {"show", "Print the root of trust pinned for a hub (verified again)"});
  add_hub_options(show.cmd, *show.args);
  show.run([](const install::Options& options) {
    auto session = open_session(options);
    const install::Options& o = session->options();
    if (o.hub_url.empty()) fail(KH_ERROR_INVALID_ARGUMENT, "kernels trust show: pass --hub URL or set KH_HUB");
    registry::Hub* hub = &session->hub(o.hub_url);
    const auto root = registry::TrustStore(session->cache(), hub->id()).trusted_root();
    if (!root) {
      std::printf("hub %s: no pinned root (run `kernels trust <root.json> --hub %s`)\n", hub->url().c_str(),
                  hub->url().c_str());
      return;
    }
    std::printf("hub %s: root version %llu, expires %s\n", hub->url().c_str(),
                static_cast<unsigned long long>(root->version), root->expires.c_str());
    for (const auto* role : {&root->root_role, &root->index_role}) {
      std::printf("  %s role: threshold %u of", role == &root->root_role ? "root" : "index", role->threshold);
      for (const auto& id : role->keyids) std::printf(" %s", id.c_str());
      std::printf("\n");
    }
  });

  const auto canonical = add_verb<std::string>(
      *trust, {"canonical", "Print the canonical bytes a root's signatures cover",
               "To sign a root with the stock minisign tool: kernels trust canonical r.json > r.bin && minisign -S -m r.bin"});
  canonical.cmd->add_option("root", *canonical.args, "A root.json")->required()->check(CLI::ExistingFile);
  canonical.run([](const std::string& root_file) {
    const std::string bytes = registry::root_signed_bytes(registry::read_file(root_file, kMaxRootFile), root_file);
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
  });
}

}  // namespace kh::cli
