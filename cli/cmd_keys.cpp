// `kernels keys generate <dir>` and `kernels keys show <file>`: minisign-compatible
// Ed25519 signing keys for publishing to a hub.
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/minisign.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::cli {

void add_keys_command(CLI::App& app) {
  CLI::App* keys = app.add_subcommand("keys", "Make and inspect signing keys (minisign-compatible Ed25519)");
  keys->require_subcommand(1);

  struct GenerateArgs {
    std::string dir, name = "kh";
    bool force = false;
  };
  auto gen = std::make_shared<GenerateArgs>();
  CLI::App* g = keys->add_subcommand("generate", "Write a new key pair: <dir>/kh.pub and <dir>/kh.key (mode 0600)");
  g->add_option("dir", gen->dir, "Directory for the key files (created if missing)")->required();
  g->add_option("--name", gen->name, "File stem instead of 'kh' (<dir>/<name>.pub, <dir>/<name>.key)");
  g->add_flag("--force", gen->force, "Overwrite existing key files");
  g->footer(
      "The secret key is an unencrypted minisign secret key: `minisign -S -s <dir>/kh.key -m FILE` signs with it\n"
      "too, and `minisign -V -p <dir>/kh.pub -m FILE` verifies kh's signatures. Keep kh.key private.");
  g->callback([gen]() {
    const registry::minisign::SecretKey key = registry::minisign::generate_key();
    registry::write_key_pair_files(gen->dir, gen->name, key, gen->force);
    std::printf("key id:      %s\npublic key:  %s/%s.pub\nsecret key:  %s/%s.key (keep it private)\n",
                key.public_key().key_id_hex().c_str(), gen->dir.c_str(), gen->name.c_str(), gen->dir.c_str(),
                gen->name.c_str());
  });

  auto show_path = std::make_shared<std::string>();
  CLI::App* s = keys->add_subcommand("show", "Print the key id and public key of a .pub (or .key) file");
  s->add_option("file", *show_path, "A minisign public key file, or a kh/minisign unencrypted secret key file")
      ->required()
      ->check(CLI::ExistingFile);
  s->callback([show_path]() {
    registry::minisign::PublicKey pk;
    try {
      pk = registry::read_public_key_file(*show_path);
    } catch (const StatusError&) {
      pk = registry::read_secret_key_file(*show_path).public_key();
    }
    std::printf("key id:      %s\npublic key:  %s\n", pk.key_id_hex().c_str(), pk.base64().c_str());
  });
}

}  // namespace kh::cli
