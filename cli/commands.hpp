// One function per verb of `kernels`: each adds its subcommand to the app. The verbs hold
// no logic the libraries lack; they parse flags, call registry/ and loader/, and print.
#pragma once

#include <CLI/CLI.hpp>

namespace kh::cli {

void add_get_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_docs_command(CLI::App& app);
void add_list_command(CLI::App& app);
void add_search_command(CLI::App& app);
void add_pack_command(CLI::App& app);
void add_publish_command(CLI::App& app);
void add_keys_command(CLI::App& app);
void add_trust_command(CLI::App& app);
void add_hub_command(CLI::App& app);
void add_check_abi_command(CLI::App& app);
void add_doctor_command(CLI::App& app);
void add_lock_command(CLI::App& app);
void add_cache_command(CLI::App& app);
void add_settings_command(CLI::App& app);
void add_mirror_command(CLI::App& app);
void add_targets_command(CLI::App& app);
void add_build_command(CLI::App& app);
void add_init_command(CLI::App& app);
void add_yank_command(CLI::App& app);

}  // namespace kh::cli
