// `kernels docs <kernel.json | org/name[@version]> [-o FILE] [--check FILE]`: a package's op
// reference as Markdown (docs/ops/<pkg>.md), rendered from its manifest or from what a hub
// publishes; --check holds a checked-in page to what the manifest renders now.
#include <cstdio>

#include "commands.hpp"
#include "kh/install/resolve.hpp"
#include "common_options.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/op_docs.hpp"
#include "kh/registry/package_spec.hpp"
#include "kh/registry/status_error.hpp"
#include "kh/loader/op_doc_check.hpp"
#include "op_reference.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {
namespace {

constexpr uint64_t kMaxPackageJsonBytes = 1u << 20;
constexpr uint64_t kMaxPageBytes = 16u << 20;

struct Page {
  std::string package, version, description;
  std::vector<registry::OpInfo> ops;
};

// A local kernel.json, checked: what its docs lack is listed on stderr (problems out), and a
// manifest that declares no ops has nothing to render.
Page page_from_manifest(const std::string& path, std::vector<std::string>* problems) {
  const registry::PackageSource src =
      registry::parse_package_source(registry::read_file(path, kMaxPackageJsonBytes), path);
  if (!src.declares_ops)
    fail(KH_ERROR_INVALID_ARGUMENT, path + " declares no ops (an \"ops\" array with their docs): nothing to render; "
                                           "see kernels-src/README.md");
  for (const registry::OpInfo& op : src.ops)
    for (const std::string& p : loader::op_doc_problems(op)) problems->push_back(op.name + ": " + p);
  return {src.name, src.version, src.description, src.ops};
}

// What a hub publishes for a release: the docs of its first build.
Page page_from_hub(const std::string& spec_text, const install::Options& options) {
  auto session = open_session(options);
  const install::FoundRelease found = install::find_release(*session, spec_text);
  const registry::RepoIndex& index = *found.index;
  const registry::Release& release = *found.release;
  const std::string version = registry::to_string(release.version);
  if (release.variants.empty()) fail(KH_ERROR_NOT_FOUND, index.repo + " " + version + " has no builds");
  const registry::VariantEntry& build = release.variants.front();
  return {index.repo, version, build.description, build.ops};
}

// The first line where two texts differ, 1-based.
size_t first_different_line(const std::string& a, const std::string& b) {
  size_t line = 1;
  for (size_t i = 0; i < a.size() && i < b.size() && a[i] == b[i]; ++i)
    if (a[i] == '\n') ++line;
  return line;
}

}  // namespace

void add_docs_command(CLI::App& app) {
  struct Args {
    std::string source, output, check;
    install::Options options;
  };
  const auto verb = add_verb<Args>(
      app, {"docs", "Render a package's op reference as Markdown (docs/ops/<pkg>.md)",
            "From a manifest, what the docs lack (a summary, a description, every schema argument with its doc, and\n"
            "for tensors a shape and dtypes) is listed on stderr. From a hub: the docs the release's builds carry."});
  verb.cmd->add_option("source", verb.args->source,
                       "A package manifest (a path ending in .json: kernels-src/<pkg>/kernel.json), or org/name[@version] "
                       "on a hub")
      ->required();
  verb.cmd->add_option("-o,--output", verb.args->output, "Write the page to FILE (default: standard output)");
  verb.cmd->add_option("--check", verb.args->check,
                       "Compare the page with FILE instead of printing it: fail if FILE differs or the manifest's docs "
                       "are incomplete (what CI runs for docs/ops/*.md)");
  add_hub_options(verb.cmd, verb.args->options);
  verb.run([](Args& args) {
    const std::string& src = args.source;
    const bool is_manifest = src.size() >= 5 && src.compare(src.size() - 5, 5, ".json") == 0;
    std::vector<std::string> problems;
    const Page page = is_manifest ? page_from_manifest(args.source, &problems)
                                  : page_from_hub(args.source, args.options);
    const std::string md = render_ops_markdown(page.package, page.version, page.description, page.ops);
    for (const std::string& p : problems)
      std::fprintf(stderr, "kernels docs: %s: %s\n", args.source.c_str(), p.c_str());
    const std::string render_cmd = "kernels docs " + args.source + " -o " + (args.check.empty() ? "FILE" : args.check);
    if (!args.check.empty()) {
      if (!registry::path_exists(args.check))
        fail(KH_ERROR_NOT_FOUND, args.check + " does not exist; write it: " + render_cmd);
      const std::string have = registry::read_file(args.check, kMaxPageBytes);
      if (have != md)
        fail(KH_ERROR_VERIFICATION, args.check + " is not what " + args.source + " renders now (first difference "
                                        "at line " + std::to_string(first_different_line(have, md)) +
                                        "); render it again: " + render_cmd);
      if (!problems.empty())
        fail(KH_ERROR_BAD_METADATA, args.source + ": " + std::to_string(problems.size()) +
                                        " gap(s) in the op docs (listed above); complete them in the manifest");
      std::printf("%s is current and complete\n", args.check.c_str());
      return;
    }
    if (!args.output.empty()) {
      registry::write_file_atomic(args.output, md);
      std::fprintf(stderr, "kernels docs: wrote %s (%zu ops of %s %s)\n", args.output.c_str(), page.ops.size(),
                   page.package.c_str(), page.version.c_str());
      return;
    }
    std::fputs(md.c_str(), stdout);
  });
}

}  // namespace kh::cli
