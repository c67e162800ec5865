// Packing a built kernel library (pack.hpp): identity from the library, op docs from
// kernel.json, the ABI check's report packed beside the library.
#include "kh/author/pack.hpp"

#include <memory>

#include "kh/loader/kernel_library.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/op_docs.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/loader/op_doc_check.hpp"

namespace kh::author {
namespace {

// kernel.json's ops must be the library's op table: same ops, same order, same schemas.
void check_ops_match(const std::string& library, const kh_module_desc& m, const std::string& package_json,
                     const std::vector<registry::OpInfo>& declared) {
  const std::string fix = "; make the ops of " + package_json + " (name, schema, order) those of the library's op "
                          "table, or rebuild the library";
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
  if (!src.declares_ops) return {"declares no ops with their docs (\"ops\"; docs/authoring.md, \"The manifest\")"};
  std::vector<std::string> out;
  for (const registry::OpInfo& op : src.ops)
    for (const std::string& p : loader::op_doc_problems(op)) out.push_back(op.name + ": " + p);
  return out;
}

}  // namespace

PackResult pack_kernel_library(PackRequest request) {
  PackResult result;
  const registry::PackageSource pkg =
      registry::parse_package_source(registry::read_file(request.package_json, 1u << 20), request.package_json);
  const auto library = loader::KernelLibrary::open(request.library, "");
  const kh_module_desc& m = library->module();
  if (pkg.name != m.name || pkg.version != m.version)
    fail(KH_ERROR_INVALID_ARGUMENT, request.library + " is " + m.name + " " + m.version + " but " + request.package_json +
                                        " says " + pkg.name + " " + pkg.version + "; rebuild the library");
  if (pkg.declares_ops) check_ops_match(request.library, m, request.package_json, pkg.ops);
  // Published builds (a target named: `kernels build`, build-matrix/build.sh) always carry
  // complete op docs.
  const std::vector<std::string> gaps = doc_problems(pkg);
  if (!gaps.empty()) {
    std::string list;
    for (const std::string& g : gaps) list += "  " + g + "\n";
    if (!request.abi.variant.empty())
      fail(KH_ERROR_INVALID_ARGUMENT, "refusing to pack " + request.library + " for " + request.abi.variant + ": " +
                                          request.package_json + "'s op docs are incomplete:\n" + list +
                                          "(a published build carries every op's docs; see `kernels docs " +
                                          request.package_json + "`)");
    result.warnings.push_back(request.package_json + "'s op docs are incomplete (packed anyway: no --target):\n" + list);
  }
  // The ABI check (exports, needed libraries, glibc, device code; `kernels check-abi`).
  // With a target (what `kernels build` and build-matrix/build.sh pass) a failing library is refused; without,
  // dev and sanitizer builds still pack, with a warning. A passing report travels in the
  // package as lib/kh-abi-check.json.
  std::vector<std::pair<std::string, std::string>> extra_files;
  abi_check::Report floors;  // what the build needs: glibc, and of its GPU runtime
  if (request.no_abi_check) {
    // Even unchecked builds record their glibc floor: selection refuses them on a host
    // whose glibc is older, instead of a dlopen failure there. Reading it cannot fail
    // (an unreadable file is a violation in the report, which is not enforced here).
    abi_check::Policy floor_only;
    floor_only.variant = m.variant;
    floors = abi_check::check_library(request.library, floor_only);
  } else {
    const bool enforced = !request.abi.variant.empty();
    if (!enforced) request.abi.variant = m.variant;
    if (request.abi.variant != m.variant)
      fail(KH_ERROR_INVALID_ARGUMENT, request.library + " is variant " + m.variant + ", not the --target " +
                                          request.abi.variant + "; rebuild it for that target");
    const abi_check::Report report = abi_check::check_library(request.library, request.abi);
    floors = report;
    if (report.ok())
      extra_files.emplace_back("lib/kh-abi-check.json", abi_check::report_json(report));
    else if (enforced)
      fail(KH_ERROR_INVALID_ARGUMENT, "refusing to pack " + request.library + ", which fails the ABI check:\n" +
                                          abi_check::report_text(report) + "(see `kernels check-abi --help`)");
    else
      result.warnings.push_back(request.library + " fails the ABI check (packed anyway: no --target):\n" +
                                abi_check::report_text(report));
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
  manifest.provenance = request.provenance;
  result.archive = registry::pack_package(request.library, manifest, request.out_dir, extra_files);
  result.name = m.name;
  result.version = m.version;
  result.variant = m.variant;
  return result;
}

}  // namespace kh::author
