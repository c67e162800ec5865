// `kernels pack <library> --package <kernel.json> --out <dist>`: turn one built kernel
// library into a package archive. What the archive says about the build (name, version,
// variant, ABI, ops) is read from the library itself, so it cannot drift from the code; the
// op docs come from kernel.json, whose ops must be the library's op table exactly.
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "kernel_library.hpp"
#include "kh/abi_check/abi_check.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/op_docs.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/status_error.hpp"
#include "op_doc_check.hpp"

namespace kh::cli {
namespace {

// kernel.json's ops must be the library's op table: same ops, same order, same schemas.
void check_ops_match(const std::string& library, const kh_module_desc& m, const std::string& package_json,
                     const std::vector<registry::OpInfo>& declared) {
  const std::string fix = "; make the ops of " + package_json + " (name, schema, order) those of src/module.cpp, "
                          "or rebuild the library";
  if (declared.size() != m.num_ops)
    fail(KH_ERROR_INVALID_ARGUMENT, library + " has " + std::to_string(m.num_ops) + " ops but " + package_json +
                                        " declares " + std::to_string(declared.size()) + fix);
  for (uint32_t i = 0; i < m.num_ops; ++i) {
    if (declared[i].name != m.ops[i].name)
      fail(KH_ERROR_INVALID_ARGUMENT, library + ": op " + std::to_string(i) + " is " + m.ops[i].name + " but " +
                                          package_json + " declares " + declared[i].name + " there" + fix);
    if (declared[i].schema != m.ops[i].schema)
      fail(KH_ERROR_INVALID_ARGUMENT, library + ": the schema of " + m.ops[i].name + " is\n  " + m.ops[i].schema +
                                          "\nbut " + package_json + " says\n  " + declared[i].schema + "\n" + fix.substr(2));
  }
}

// What the docs lack, one line each ("rms_norm: no summary"); all of it when none are declared.
std::vector<std::string> doc_problems(const registry::PackageSource& src) {
  if (!src.declares_ops) return {"declares no ops with their docs (\"ops\", kernels-src/README.md)"};
  std::vector<std::string> out;
  for (const registry::OpInfo& op : src.ops)
    for (const std::string& p : loader::op_doc_problems(op)) out.push_back(op.name + ": " + p);
  return out;
}

}  // namespace

void add_pack_command(CLI::App& app) {
  struct Args {
    std::string library, package_json, out_dir;
    abi_check::Policy abi;  // abi.variant: --target (enforced), else the library's own (advisory)
    bool no_abi_check = false;
  };
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
    const registry::PackageSource pkg =
        registry::parse_package_source(registry::read_file(args->package_json, 1u << 20), args->package_json);
    const auto library = loader::KernelLibrary::open(args->library, "");
    const kh_module_desc& m = library->module();
    if (pkg.name != m.name || pkg.version != m.version)
      fail(KH_ERROR_INVALID_ARGUMENT, args->library + " is " + m.name + " " + m.version + " but " + args->package_json +
                                          " says " + pkg.name + " " + pkg.version + "; rebuild the library");
    if (pkg.declares_ops) check_ops_match(args->library, m, args->package_json, pkg.ops);
    // kh's published builds (--target: build-matrix/build.sh) always carry complete op docs.
    const std::vector<std::string> gaps = doc_problems(pkg);
    if (!gaps.empty()) {
      std::string list;
      for (const std::string& g : gaps) list += "  " + g + "\n";
      if (!args->abi.variant.empty())
        fail(KH_ERROR_INVALID_ARGUMENT, "refusing to pack " + args->library + " for " + args->abi.variant + ": " +
                                            args->package_json + "'s op docs are incomplete:\n" + list +
                                            "(a published build carries every op's docs; see `kernels docs " +
                                            args->package_json + "`)");
      std::fprintf(stderr, "kernels pack: warning: %s's op docs are incomplete (packed anyway: no --target):\n%s",
                   args->package_json.c_str(), list.c_str());
    }
    // The ABI check (exports, needed libraries, glibc, device code; build-matrix/abi_check).
    // With --target (what build-matrix/build.sh passes) a failing library is refused; without,
    // dev and sanitizer builds still pack, with a warning. A passing report travels in the
    // package as lib/kh-abi-check.json.
    std::vector<std::pair<std::string, std::string>> extra_files;
    abi_check::Report floors;  // what the build needs: glibc, and of its GPU runtime
    if (args->no_abi_check) {
      // Even unchecked builds record their glibc floor: selection refuses them on a host
      // whose glibc is older, instead of a dlopen failure there. Reading it cannot fail
      // (an unreadable file is a violation in the report, which is not enforced here).
      abi_check::Policy floor_only;
      floor_only.variant = m.variant;
      floors = abi_check::check_library(args->library, floor_only);
    } else {
      const bool enforced = !args->abi.variant.empty();
      if (!enforced) args->abi.variant = m.variant;
      if (args->abi.variant != m.variant)
        fail(KH_ERROR_INVALID_ARGUMENT, args->library + " is variant " + m.variant + ", not the --target " +
                                            args->abi.variant + "; rebuild it for that target");
      const abi_check::Report report = abi_check::check_library(args->library, args->abi);
      floors = report;
      if (report.ok())
        extra_files.emplace_back("lib/kh-abi-check.json", abi_check::report_json(report));
      else if (enforced)
        fail(KH_ERROR_INVALID_ARGUMENT, "refusing to pack " + args->library + ", which fails the ABI check:\n" +
                                            abi_check::report_text(report) + "(see `kernels check-abi --help`)");
      else
        std::fprintf(stderr, "kernels pack: warning: %s fails the ABI check (packed anyway: no --target):\n%s",
                     args->library.c_str(), abi_check::report_text(report).c_str());
    }
    registry::PackageManifest manifest;
    manifest.name = m.name;
    manifest.version = m.version;
    manifest.variant = m.variant;
    manifest.abi = loader::abi_version_text(library->abi_version());
    manifest.glibc = floors.newest_glibc;  // empty only for a library that needs no versioned glibc symbol
    manifest.runtime = floors.runtime;     // ROCm builds: the oldest HIP runtime and the code-object version
    manifest.code_object = static_cast<uint32_t>(floors.code_object);
    manifest.description = pkg.description;
    if (pkg.declares_ops) {
      manifest.ops = pkg.ops;  // the library's table (checked above) with the docs
    } else {
      for (uint32_t i = 0; i < m.num_ops; ++i) manifest.ops.push_back({m.ops[i].name, m.ops[i].schema});
    }
    const std::string archive = registry::pack_package(args->library, manifest, args->out_dir, extra_files);
    std::printf("packed %s %s (%s) -> %s\n", m.name, m.version, m.variant, archive.c_str());
  });
}

}  // namespace kh::cli
