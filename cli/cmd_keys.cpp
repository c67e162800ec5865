// `kernels keys generate|show|sign|verify`: minisign-compatible Ed25519 signing keys for
// publishing to a hub, and detached signatures of single files (<file>.minisig).
#include <cstdio>
#include <cstdlib>

#include "commands.hpp"
#include "session.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/minisign.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_keys_command(CLI::App& app) {
  CLI::App* keys = add_verb_group(app, {"keys", "Make and inspect signing keys (minisign-compatible Ed25519)"});

  struct GenerateArgs {
    std::string dir, name = "kh";
    bool force = false;
  };
  const auto generate = add_verb<GenerateArgs>(
      *keys, {"generate", "Write a new key pair: <dir>/kh.pub and <dir>/kh.key (mode 0600)",
              "The secret key is an unencrypted minisign secret key: `minisign -S -s <dir>/kh.key -m FILE` signs with it\n"
              "too, and `minisign -V -p <dir>/kh.pub -m FILE` verifies kh's signatures. Keep kh.key private."});
  generate.cmd->add_option("dir", generate.args->dir, "Directory for the key files (created if missing)")->required();
  generate.cmd->add_option("--name", generate.args->name,
                           "File stem instead of 'kh' (<dir>/<name>.pub, <dir>/<name>.key)");
  generate.cmd->add_flag("--force", generate.args->force, "Overwrite existing key files");
  generate.run([](GenerateArgs& args) {
    const registry::minisign::SecretKey key = registry::minisign::generate_key();
    registry::write_key_pair_files(args.dir, args.name, key, args.force);
    std::printf("key id:      %s\npublic key:  %s/%s.pub\nsecret key:  %s/%s.key (keep it private)\n",
                key.public_key().key_id_hex().c_str(), args.dir.c_str(), args.name.c_str(), args.dir.c_str(),
                args.name.c_str());
  });

  const auto show = add_verb<std::string>(*keys, {"show", "Print the key id and public key of a .pub (or .key) file"});
  show.cmd->add_option("file", *show.args, "A minisign public key file, or a kh/minisign unencrypted secret key file")
      ->required()
      ->check(CLI::ExistingFile);
  show.run([](const std::string& file) {
    registry::minisign::PublicKey pk;
    try {
      pk = registry::read_public_key_file(file);
    } catch (const StatusError&) {
      pk = registry::read_secret_key_file(file).public_key();
    }
    std::printf("key id:      %s\npublic key:  %s\n", pk.key_id_hex().c_str(), pk.base64().c_str());
  });

  struct SignArgs {
    std::string file, key, trusted_comment;
  };
  const auto sign = add_verb<SignArgs>(
      *keys, {"sign", "Write <file>.minisig, as `minisign -S -m <file>` does",
              "E.g. after editing a file hub's index by hand: kernels keys sign hub/repos/org/name/index.json --key kh.key"});
  sign.cmd->add_option("file", sign.args->file, "The file to sign")->required()->check(CLI::ExistingFile);
  sign.cmd->add_option("--key", sign.args->key, "Secret key file (default: $KH_SIGNING_KEY)");
  sign.cmd->add_option("-t,--trusted-comment", sign.args->trusted_comment,
                       "Trusted comment (default: timestamp and file name)");
  sign.run([](SignArgs& args) {
    std::string key_path = args.key;
    if (key_path.empty()) key_path = settings().signing_key;
    if (key_path.empty()) fail(KH_ERROR_INVALID_ARGUMENT, "kernels keys sign: pass --key <secret key> or set KH_SIGNING_KEY");
    const auto key = registry::read_secret_key_file(key_path);
    const std::string bytes = registry::read_file(args.file, 1ull << 30);
    std::string name = args.file.substr(args.file.find_last_of('/') + 1);
    const std::string comment =
        args.trusted_comment.empty() ? registry::minisign::default_trusted_comment(name) : args.trusted_comment;
    registry::write_file_atomic(args.file + ".minisig", registry::minisign::sign(key, bytes, comment));
    std::printf("wrote %s.minisig (key %s)\n", args.file.c_str(), key.public_key().key_id_hex().c_str());
  });

  struct VerifyArgs {
    std::string file, pub, sig;
  };
  const auto verify = add_verb<VerifyArgs>(
      *keys, {"verify", "Check <file>.minisig against a public key, as `minisign -V` does"});
  verify.cmd->add_option("file", verify.args->file, "The signed file")->required()->check(CLI::ExistingFile);
  verify.cmd->add_option("-p,--pub", verify.args->pub, "Public key file")->required()->check(CLI::ExistingFile);
  verify.cmd->add_option("-x,--sig", verify.args->sig, "Signature file (default: <file>.minisig)");
  verify.run([](VerifyArgs& args) {
    const std::string sig_path = args.sig.empty() ? args.file + ".minisig" : args.sig;
    const auto pk = registry::read_public_key_file(args.pub);
    const auto sig = registry::minisign::parse_signature(registry::read_file(sig_path, 1u << 20), sig_path);
    registry::minisign::verify(pk, sig, registry::read_file(args.file, 1ull << 30), sig_path);
    std::printf("signature verified (key %s)\ntrusted comment: %s\n", pk.key_id_hex().c_str(), sig.trusted_comment.c_str());
  });
}

}  // namespace kh::cli
