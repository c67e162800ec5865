// `kernels pack <library> --package <kernel.json> --out <dist>`: turn one built kernel
// library into a package archive. What the archive says about the build (name, version,
// variant, ABI, ops) is read from the library itself, so it cannot drift from the code; the
// op docs come from kernel.json, whose ops must be the library's op table exactly.
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "kh/author/pack.hpp"

namespace kh::cli {

void add_pack_command(CLI::App& app) {
  using Args = author::PackRequest;
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("pack", "Pack a built kernel library into a package archive (.tar.zst)");
  cmd->add_option("library", args->library, "The built kernel library (.so)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--package", args->package_json,
                  "The package's kernel.json: its name, version and ops must be the library's; its op docs go into "
                  "the package")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out_dir, "Directory to write the archive into")->required();
  cmd->add_option("--target", args->abi.variant,
                  "The variant key the library must be built for: the ABI check then refuses a failing library "
                  "(without --target the check only warns)");
  cmd->add_flag("--allow-libstdcxx", args->abi.allow_libstdcxx, "ABI check: accept a dynamic libstdc++");
  cmd->add_option("--max-glibc", args->abi.max_glibc, "ABI check: newest GLIBC_x.y the library may require");
  cmd->add_flag("--no-abi-check", args->no_abi_check,
                "Skip the ABI check (`kernels check-abi`), e.g. for sanitizer builds; never for published builds");
  cmd->callback([args]() {
    const author::PackResult packed = author::pack_kernel_library(*args);
    for (const std::string& w : packed.warnings) std::fprintf(stderr, "kernels pack: warning: %s", w.c_str());
    std::printf("packed %s %s (%s) -> %s\n", packed.name.c_str(), packed.version.c_str(), packed.variant.c_str(),
                packed.archive.c_str());
  });
}

}  // namespace kh::cli
