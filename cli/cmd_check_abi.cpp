// `kernels check-abi <library> --target <variant-key>`: checks a built kernel library against
// the rules for its variant (exports, needed libraries, glibc, device code; see
// build-matrix/abi_check). `kernels pack` runs the same check before it packs.
#include <cstdio>

#include "commands.hpp"
#include "kh/abi_check/abi_check.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_check_abi_command(CLI::App& app) {
  struct Args {
    std::string library;
    abi_check::Policy policy;
    bool json = false;
  };
  const auto verb = add_verb<Args>(
      app, {"check-abi", "Check a built kernel library's ABI against its variant's rules",
            "Exit status: 0 when the library passes, 1 when it breaks a rule (each printed as 'rule: message')."});
  verb.cmd->add_option("library", verb.args->library,
                       "The built kernel library (.so)")->required()->check(CLI::ExistingFile);
  verb.cmd->add_option("--target", verb.args->policy.variant,
                       "The variant key it is built for, e.g. cuda13.0-sm80-abi1-x86_64-linux")
      ->required();
  verb.cmd->add_flag("--allow-libstdcxx", verb.args->policy.allow_libstdcxx, "Accept a dynamic libstdc++ dependency");
  verb.cmd->add_option("--max-glibc", verb.args->policy.max_glibc,
                       "Newest GLIBC_x.y the library may require (default: no limit)");
  verb.cmd->add_flag("--json", verb.args->json, "Print the report as JSON (what pack stores as kh-abi-check.json)");
  verb.run([](Args& args) {
    const abi_check::Report report = abi_check::check_library(args.library, args.policy);
    if (args.json)
      std::fputs(abi_check::report_json(report).c_str(), stdout);
    else
      std::fputs(abi_check::report_text(report).c_str(), report.ok() ? stdout : stderr);
    if (!report.ok()) throw CLI::RuntimeError(1);
  });
}

}  // namespace kh::cli
