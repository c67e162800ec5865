// `kernels`: the command line of kh, the kernel hub.
#include <cstdio>
#include <exception>

#include "commands.hpp"
#include "kh/registry/status_error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"kernels: fetch, verify, cache and publish prebuilt GPU kernels (kh, the kernel hub)"};
  app.name("kernels");
  app.require_subcommand(1);
  app.footer(
      "Environment: KH_HUB (default hub URL), KH_CACHE (cache root), KH_OFFLINE=1 (no connections).\n"
      "Run `kernels <command> --help` for a command's options.");
  kh::cli::add_get_command(app);
  kh::cli::add_info_command(app);
  kh::cli::add_list_command(app);
  kh::cli::add_pack_command(app);
  kh::cli::add_publish_command(app);
  kh::cli::add_keys_command(app);
  kh::cli::add_trust_command(app);
  kh::cli::add_check_abi_command(app);
  kh::cli::add_doctor_command(app);
  kh::cli::add_lock_command(app);
  kh::cli::add_cache_command(app);
  try {
    app.parse(argc, argv);
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
