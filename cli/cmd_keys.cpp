// `kernels keys generate|show|sign|verify`: minisign-compatible Ed25519 signing keys for
// publishing to a hub, and detached signatures of single files (<file>.minisig).
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "commands.hpp"
#include "session.hpp"
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

  struct SignArgs {
    std::string file, key, trusted_comment;
  };
  auto sign = std::make_shared<SignArgs>();
  CLI::App* sg = keys->add_subcommand("sign", "Write <file>.minisig, as `minisign -S -m <file>` does");
  sg->add_option("file", sign->file, "The file to sign")->required()->check(CLI::ExistingFile);
  sg->add_option("--key", sign->key, "Secret key file (default: $KH_SIGNING_KEY)");
  sg->add_option("-t,--trusted-comment", sign->trusted_comment, "Trusted comment (default: timestamp and file name)");
  sg->footer("E.g. after editing a file hub's index by hand: kernels keys sign hub/repos/org/name/index.json --key kh.key");
  sg->callback([sign]() {
    std::string key_path = sign->key;
    if (key_path.empty()) key_path = settings().signing_key;
    if (key_path.empty()) fail(KH_ERROR_INVALID_ARGUMENT, "kernels keys sign: pass --key <secret key> or set KH_SIGNING_KEY");
    const auto key = registry::read_secret_key_file(key_path);
    const std::string bytes = registry::read_file(sign->file, 1ull << 30);
    std::string name = sign->file.substr(sign->file.find_last_of('/') + 1);
    const std::string comment =
        sign->trusted_comment.empty() ? registry::minisign::default_trusted_comment(name) : sign->trusted_comment;
    registry::write_file_atomic(sign->file + ".minisig", registry::minisign::sign(key, bytes, comment));
    std::printf("wrote %s.minisig (key %s)\n", sign->file.c_str(), key.public_key().key_id_hex().c_str());
  });

  struct VerifyArgs {
    std::string file, pub, sig;
  };
  auto verify = std::make_shared<VerifyArgs>();
  CLI::App* v = keys->add_subcommand("verify", "Check <file>.minisig against a public key, as `minisign -V` does");
  v->add_option("file", verify->file, "The signed file")->required()->check(CLI::ExistingFile);
  v->add_option("-p,--pub", verify->pub, "Public key file")->required()->check(CLI::ExistingFile);
  v->add_option("-x,--sig", verify->sig, "Signature file (default: <file>.minisig)");
  v->callback([verify]() {
    const std::string sig_path = verify->sig.empty() ? verify->file + ".minisig" : verify->sig;
    const auto pk = registry::read_public_key_file(verify->pub);
    const auto sig = registry::minisign::parse_signature(registry::read_file(sig_path, 1u << 20), sig_path);
    registry::minisign::verify(pk, sig, registry::read_file(verify->file, 1ull << 30), sig_path);
    std::printf("signature verified (key %s)\ntrusted comment: %s\n", pk.key_id_hex().c_str(), sig.trusted_comment.c_str());
  });
}

}  // namespace kh::cli
