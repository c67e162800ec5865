// `kernels`: the command line of kh, the kernel hub.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "argv_order.hpp"
#include "commands.hpp"
#include "kh/registry/hub_directory.hpp"
#include "kh/registry/status_error.hpp"

namespace {

// "unknown command 'gett'; did you mean 'get'?" for a first word that is no verb.
int refuse_unknown_verb(const std::vector<std::string>& verbs, const std::string& word) {
  const std::vector<std::string> close = kh::registry::similar_words(word, verbs);
  std::string msg = "kernels: error: unknown command '" + word + "'";
  if (!close.empty()) msg += "; did you mean '" + close.front() + "'?";
  std::fprintf(stderr, "%s\nRun `kernels --help` for the commands.\n", msg.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kernels: fetch, verify, cache and publish prebuilt GPU kernels (kh, the kernel hub)"};
  app.name("kernels");
  app.require_subcommand(1);
  app.set_version_flag("--version", "kernels (kh) " KH_VERSION_STRING);
  // A sub-verb's unknown option goes to its verb (`kernels cache verify --cache DIR`);
  // subcommands inherit this when they are added.
  app.fallthrough();
  app.footer(
      "Common options (--hub, --cache, --offline, --json) go before or after the command.\n"
      "Environment: KH_HUB (default hub URL), KH_CACHE (cache root), KH_OFFLINE=1 (no connections);\n"
      "`kernels settings` lists every variable kh reads.\n"
      "Run `kernels <command> --help` for a command's options.");
  kh::cli::add_get_command(app);
  kh::cli::add_info_command(app);
  kh::cli::add_docs_command(app);
  kh::cli::add_search_command(app);
  kh::cli::add_list_command(app);
  kh::cli::add_pack_command(app);
  kh::cli::add_publish_command(app);
  kh::cli::add_keys_command(app);
  kh::cli::add_trust_command(app);
  kh::cli::add_hub_command(app);
  kh::cli::add_check_abi_command(app);
  kh::cli::add_doctor_command(app);
  kh::cli::add_lock_command(app);
  kh::cli::add_cache_command(app);
  kh::cli::add_settings_command(app);
  kh::cli::add_mirror_command(app);
  kh::cli::add_targets_command(app);
  kh::cli::add_build_command(app);
  kh::cli::add_init_command(app);
  kh::cli::add_yank_command(app);

  std::vector<std::string> verbs;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) verbs.push_back(sub->get_name());
  std::vector<std::string> args(argv + 1, argv + argc);
  const kh::cli::VerbPosition verb = kh::cli::move_common_options_after_verb(args, verbs);
  if (verb.unknown) return refuse_unknown_verb(verbs, args[verb.index]);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last-first
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const kh::StatusError& e) {
    std::fprintf(stderr, "kernels: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernels: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
