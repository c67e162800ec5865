// `kernels pack <library> --package <kernel.json> --out <dist>`: turn one built kernel
// library into a package archive. What the archive says about the build (name, version,
// variant, ABI, ops) is read from the library itself, so it cannot drift from the code; the
// op docs come from kernel.json, whose ops must be the library's op table exactly.
#include <cstdio>

#include "commands.hpp"
#include "kh/author/pack.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_pack_command(CLI::App& app) {
  using Args = author::PackRequest;
  const auto verb = add_verb<Args>(app, {"pack", "Pack a built kernel library into a package archive (.tar.zst)"});
  verb.cmd->add_option("library", verb.args->library,
                       "The built kernel library (.so)")->required()->check(CLI::ExistingFile);
  verb.cmd->add_option("--package", verb.args->package_json,
                       "The package's kernel.json: its name, version and ops must be the library's; its op docs go into "
                       "the package")
      ->required()
      ->check(CLI::ExistingFile);
  verb.cmd->add_option("--out", verb.args->out_dir, "Directory to write the archive into")->required();
  verb.cmd->add_option("--target", verb.args->abi.variant,
                       "The variant key the library must be built for: the ABI check then refuses a failing library "
                       "(without --target the check only warns)");
  verb.cmd->add_flag("--allow-libstdcxx", verb.args->abi.allow_libstdcxx, "ABI check: accept a dynamic libstdc++");
  verb.cmd->add_option("--max-glibc", verb.args->abi.max_glibc, "ABI check: newest GLIBC_x.y the library may require");
  verb.cmd->add_flag("--no-abi-check", verb.args->no_abi_check,
                     "Skip the ABI check (`kernels check-abi`), e.g. for sanitizer builds; never for published builds");
  verb.run([](Args& args) {
    const author::PackResult packed = author::pack_kernel_library(args);
    for (const std::string& w : packed.warnings) std::fprintf(stderr, "kernels pack: warning: %s", w.c_str());
    std::printf("packed %s %s (%s) -> %s\n", packed.name.c_str(), packed.version.c_str(), packed.variant.c_str(),
                packed.archive.c_str());
  });
}

}  // namespace kh::cli
