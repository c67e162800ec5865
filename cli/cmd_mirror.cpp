// `kernels mirror SRC DST [SPEC...]` and `kernels mirror SRC --bundle FILE [SPEC...]`: copy
// signed metadata, the root chain and chosen builds from any hub (or a bundle) to any hub
// (or a bundle), every byte verified, nothing re-signed.
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "kh/loader/host_build_chooser.hpp"
#include "human_size.hpp"
#include "kh/install/mirror.hpp"
#include "kh/registry/status_error.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_mirror_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> positional;
    install::MirrorRequest request;
  };
  const auto verb = add_verb<Args>(
      app, {"mirror", "Copy a hub's signed metadata and builds to another hub or into one bundle file, verifying every byte",
            "Examples:\n"
            "  kernels mirror https://hub.example/kh oci://registry.internal/kernels --lock kernels.lock --all-targets\n"
            "  kernels mirror https://hub.example/kh --bundle kernels.bundle --lock kernels.lock --all-targets\n"
            "  kernels mirror kernels.bundle file:///srv/kh-hub     # inside the closed network\n"
            "Clients of the mirror pin the same root as clients of SRC: nothing is signed again."});
  verb.cmd->add_option("hubs-and-specs", verb.args->positional,
                       "SRC (a hub URL, or a bundle file), then DST (a hub URL; not with --bundle), then the packages "
                       "(org/name[@version]; default: what --lock pins, else everything SRC lists)")
      ->required();
  verb.cmd->add_option("--bundle", verb.args->request.bundle, "Write one air-gapped bundle file instead of a hub");
  verb.cmd->add_option("--lock", verb.args->request.lockfile, "Copy what this kernels.lock pins");
  auto* target = verb.cmd->add_option("--target", verb.args->request.target,
                                      "Copy this build (variant key) of each release instead of this machine's");
  verb.cmd->add_flag("--all-targets", verb.args->request.all_targets,
                     "Copy every build of each release (every pinned one, with --lock)")
      ->excludes(target);
  verb.cmd->add_option("--trust", verb.args->request.trust_root,
                       "Verify SRC against this root.json (default: the root pinned for SRC; for a bundle, the one pinned "
                       "for DST)");
  verb.cmd->add_flag("--allow-expired", verb.args->request.allow_expired,
                     "Copy metadata past its expiry (it may be frozen: the mirror's clients would miss fixes)");
  verb.run([](Args& args) {
    install::MirrorRequest r = args.request;
    const std::vector<std::string>& p = args.positional;
    r.source = p[0];
    size_t specs_from = 1;
    if (r.bundle.empty()) {
      if (p.size() < 2 || p[1].find("://") == std::string::npos)
        fail(KH_ERROR_INVALID_ARGUMENT, "kernels mirror: after SRC comes DST, a hub URL (file:///path, https://..., "
                                        "oci://...), or pass --bundle FILE");
      r.destination = p[1];
      specs_from = 2;
    }
    r.specs.assign(p.begin() + static_cast<std::ptrdiff_t>(specs_from), p.end());
    r.who = publisher_name();
    // --all-targets takes every build, whatever this machine is: then any build resolves a spec.
    std::unique_ptr<install::Session> any = open_session_choosing_any({});
    const install::BuildChooser chooser =
        r.all_targets ? any->chooser() : install::BuildChooser(loader::host_build_chooser());
    const install::MirrorResult m = install::mirror(settings(), r, chooser);
    for (const std::string& b : m.builds) std::printf("  %s\n", b.c_str());
    std::printf("mirrored %s (%s, %s) to %s: %zu new, %zu already there; %zu index(es), %zu root(s) written\n",
                count_of(m.repos.size(), "repo").c_str(), count_of(m.builds.size(), "build").c_str(),
                human_size(m.bytes).c_str(), r.bundle.empty() ? r.destination.c_str() : r.bundle.c_str(),
                m.report.blobs_written, m.report.blobs_present, m.report.indexes_written, m.report.roots_written);
  });
}

}  // namespace kh::cli
