// `kernels info <org>/<name>[@<version>] [--op NAME]`: versions, builds and ops a hub offers,
// each op with its summary; with --op, the whole reference of one op (op_reference.hpp); with
// --provenance, where each build came from.
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kh/install/resolve.hpp"
#include "common_options.hpp"
#include "coverage_report.hpp"
#include "kh/registry/package_spec.hpp"
#include "kh/registry/status_error.hpp"
#include "op_reference.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {
namespace {

// --op: one op's reference, from the first build of the release (every build of a release
// exports the same ops).
void print_op_info(const registry::RepoIndex& index, const registry::Release& release, const std::string& name,
                   bool json) {
  const std::string version = registry::to_string(release.version);
  const std::string where = index.repo + " " + version;
  if (release.variants.empty()) fail(KH_ERROR_NOT_FOUND, where + " has no builds");
  const registry::VariantEntry& build = release.variants.front();
  const registry::OpInfo& op = find_op(build.ops, name, where);
  if (json) {
    const nlohmann::json out = {
        {"repo", index.repo}, {"version", version}, {"variant", build.key}, {"op", op_json(op, false)}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    print_op_reference(index.repo, version, op);
  }
}

// --provenance: where each build came from, as its signed index entry records it.
void print_provenance(const registry::VariantEntry& v) {
  const registry::Provenance& p = v.provenance;
  if (p.empty()) {
    std::printf("    provenance: none recorded (packed without `kernels build`)\n");
    return;
  }
  if (p.has_source())
    std::printf("    source:  %s commit %s%s%s\n", p.repository.empty() ? "(no repository named)" : p.repository.c_str(),
                p.commit.c_str(), p.path.empty() ? "" : (" folder " + p.path).c_str(),
                p.dirty ? "  DIRTY: built with uncommitted changes" : "");
  else
    std::printf("    source:  not recorded (built outside a git checkout)\n");
  std::string tools;
  for (const auto& [name, version] : p.tools) tools += (tools.empty() ? "" : ", ") + name + " " + version;
  std::printf("    builder: kh %s, target %s, %s\n", p.kh_version.c_str(), p.target.c_str(), tools.c_str());
  std::printf("    inputs:  sha256:%s\n", p.inputs.c_str());
}

}  // namespace

void add_info_command(CLI::App& app) {
  struct Args {
    std::string spec;
    std::string op;
    install::Options options;
    bool json = false;
    bool coverage = false;
    bool provenance = false;
  };
  const auto verb = add_verb<Args>(app, {"info", "Show the versions, builds and ops of a kernel package on a hub"});
  verb.cmd->add_option("spec", verb.args->spec, "Package: org/name, or org/name@version for one version")->required();
  add_hub_options(verb.cmd, verb.args->options);
  verb.cmd->add_flag("--json", verb.args->json, "Print the result as JSON");
  verb.cmd->add_flag("--coverage", verb.args->coverage,
                     "For each GPU arch (sm75 .. sm121, gfx90a, gfx942, gfx950, gfx1100): whether the release runs "
                     "there natively, through PTX, or not at all");
  verb.cmd->add_flag("--provenance", verb.args->provenance,
                     "Show where each build came from: source repository and commit, builder (kh, target, compilers) "
                     "and inputs digest, as the signed index records them (`kernels build --verify` rebuilds from it)");
  verb.cmd->add_option("--op", verb.args->op,
                       "Show the reference of this op (schema, arguments with shapes and dtypes, semantics, notes, "
                       "errors) from the newest release, or the one @version names");
  verb.run([](Args& args) {
    auto session = open_session(args.options);
    // org/name shows every release (yanked ones too); org/name@v (and --op) the one the
    // request picks.
    const bool one = args.spec.find('@') != std::string::npos || !args.op.empty();
    std::optional<install::FoundRelease> found;
    if (one) found = install::find_release(*session, args.spec);
    const registry::PackageSpec spec = registry::parse_package_spec(args.spec);
    const registry::RepoIndex& index = found ? *found->index : session->index(spec.repo(), session->require_hub(spec.repo()));
    if (!args.op.empty()) {
      print_op_info(index, *found->release, args.op, args.json);
      return;
    }
    std::vector<const registry::Release*> shown;
    if (!one) {
      for (const auto& r : index.releases) shown.push_back(&r);
    } else {
      shown.push_back(found->release);
    }
    if (args.json) {
      nlohmann::json releases = nlohmann::json::array();
      for (const auto* r : shown) {
        nlohmann::json variants = nlohmann::json::array();
        for (const auto& v : r->variants) {
          nlohmann::json ops = nlohmann::json::array();
          for (const auto& op : v.ops) ops.push_back(op_json(op, true));
          nlohmann::json entry = {{"variant", v.key}, {"sha256", v.sha256}, {"size", v.size}, {"abi", v.abi}, {"ops", ops}};
          if (!v.glibc.empty()) entry["glibc"] = v.glibc;
          if (!v.description.empty()) entry["description"] = v.description;
          if (!v.provenance.empty()) entry["provenance"] = nlohmann::json::parse(registry::provenance_json(v.provenance).dump());
          variants.push_back(std::move(entry));
        }
        nlohmann::json release = {{"version", registry::to_string(r->version)}, {"yanked", r->yanked}, {"variants", variants}};
        if (args.coverage) release["coverage"] = coverage_json(*r);
        releases.push_back(std::move(release));
      }
      nlohmann::json out = {{"repo", index.repo}, {"metadata_version", index.version}, {"expires", index.expires},
                            {"releases", releases}};
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    std::printf("%s (metadata version %llu, expires %s)\n", index.repo.c_str(),
                static_cast<unsigned long long>(index.version), index.expires.c_str());
    for (const auto* r : shown) {
      std::printf("\n%s%s\n", registry::to_string(r->version).c_str(), r->yanked ? "  (yanked)" : "");
      for (const auto& v : r->variants) {
        std::printf("  build %s  %llu bytes  sha256:%s%s\n", v.key.c_str(), static_cast<unsigned long long>(v.size),
                    v.sha256.c_str(), v.glibc.empty() ? "" : ("  needs glibc " + v.glibc).c_str());
        if (args.provenance) print_provenance(v);
      }
      // Every build of a release exports the same ops; show them once, from the first.
      if (!r->variants.empty()) {
        std::printf("  ops:\n");
        print_op_list(r->variants.front().ops, "    ");
      }
      if (args.coverage) print_coverage(index.repo, *r);
    }
  });
}

}  // namespace kh::cli
