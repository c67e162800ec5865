// `kernels build [DIR] [--target KEY ...] [--all-targets] [--out dist]`: build a package for
// kh targets, test it, check its ABI and pack it, with provenance (build-matrix/author).
// `kernels build --verify <org>/<name>@<version>`: rebuild a published release from the
// commit it records and compare it with the hub's bytes (verify_release.cpp).
#include <cstdio>

#include "commands.hpp"
#include "common_options.hpp"
#include "kh/author/kit.hpp"
#include "kh/author/package_build.hpp"
#include "kh/registry/status_error.hpp"
#include "session.hpp"
#include "verify_release.hpp"
#include "verb.hpp"

namespace kh::cli {
namespace {

const char* status_word(author::TargetStatus s) {
  switch (s) {
    case author::TargetStatus::kBuilt: return "built";
    case author::TargetStatus::kSkipped: return "skipped";
    case author::TargetStatus::kNotInPackage: return "not built";
    case author::TargetStatus::kFailed: return "FAILED";
  }
  return "?";
}

void print_report(const author::BuildReport& report) {
  std::printf("%s:\n", report.package.c_str());
  for (const author::TargetOutcome& t : report.targets) {
    if (t.status == author::TargetStatus::kBuilt)
      std::printf("  %-14s built    %s -> %s (%.0f s)\n", t.target.c_str(), t.variant.c_str(), t.archive.c_str(),
                  t.seconds);
    else
      std::printf("  %-14s %-8s %s\n", t.target.c_str(), status_word(t.status), t.detail.c_str());
  }
  if (report.dirty)
    std::fprintf(stderr, "kernels build: warning: built from uncommitted changes; the provenance says so "
                         "(\"dirty\": true), and no one can rebuild these bytes from the commit\n");
}

}  // namespace

void add_build_command(CLI::App& app) {
  struct Args {
    author::BuildRequest request;
    std::string verify_spec;
    install::Options hub;
  };
  const auto verb = add_verb<Args>(
      app, {"build", "Build, test, ABI-check and pack a kernel package for kh targets",
            "Each build archive's name ends in its variant key. Exit status: 0 when every requested target the\n"
            "toolchains here allow was built and packed, 1 when one failed or none could be built.\n"
            "Examples:\n"
            "  kernels build                                   # this machine's CPU target, into ./dist\n"
            "  kernels build --target cuda-sm90a --target rocm-gfx942\n"
            "  kernels build --all-targets --out dist          # what CI runs before `kernels publish dist`\n"
            "  kernels build --verify acme/scale@0.1.0 --hub https://hub.example.org/kh"});
  verb.cmd->add_option("dir", verb.args->request.package_dir, "The package folder, holding kernel.json (default: .)");
  verb.cmd->add_option("--target", verb.args->request.targets,
                       "A target to build (repeat for several; `kernels targets` lists them; default: this machine's "
                       "CPU target)");
  verb.cmd->add_flag("--all-targets", verb.args->request.all_targets,
                     "Every target the package has a backend for; one whose toolchain is missing is skipped, naming "
                     "what to install");
  verb.cmd->add_option("--out", verb.args->request.out_dir, "Where the package archives go (default: <dir>/dist)");
  verb.cmd->add_option("--build-dir", verb.args->request.build_root,
                       "Build trees, one per target (default: <dir>/build/kh)");
  verb.cmd->add_option("-j,--jobs", verb.args->request.jobs, "Parallel compile jobs (default: the CPUs here)");
  verb.cmd->add_flag("--no-test", [verb](int64_t) { verb.args->request.run_tests = false; },
                     "Do not run the package's tests (ctest) after the CPU builds");
  verb.cmd->add_flag("--require-all", verb.args->request.require_all,
                     "A target whose toolchain is missing is an error");
  verb.cmd->add_option("--max-glibc", verb.args->request.max_glibc,
                       "ABI check: the newest GLIBC_x.y a library may need (default: the target table's)");
  verb.cmd->add_flag("-v,--verbose", verb.args->request.verbose,
                     "Show the tools' output (else it goes to <build-dir>/<target>.log)");
  verb.cmd->add_option("--cmake-arg", verb.args->request.cmake_args,
                       "An extra argument for each target's cmake configure");
  verb.cmd->add_option("--verify", verb.args->verify_spec,
                       "Rebuild the release <org>/<name>@<version> from the commit its provenance records (DIR is a "
                       "git checkout holding that commit) and say whether every byte matches what the hub serves");
  add_hub_options(verb.cmd, verb.args->hub);
  verb.run([](Args& args) {
    const install::Settings& s = settings();
    const author::Kit kit = author::find_kit(KH_VERSION_STRING, s.author_kit);
    args.request.cmake_args.insert(args.request.cmake_args.end(), s.build_cmake_args.begin(), s.build_cmake_args.end());
    args.request.source_repository = s.source_repository;
    auto progress = [](const std::string& line) { std::fprintf(stderr, "kernels build: %s\n", line.c_str()); };
    if (!args.verify_spec.empty()) {
      if (verify_release(args.verify_spec, args.request, args.hub, kit, progress) != 0) throw CLI::RuntimeError(1);
      return;
    }
    const author::BuildReport report = author::build_package(args.request, kit, progress);
    print_report(report);
    if (report.failed() > 0 || report.built() == 0) {
      if (report.built() == 0 && report.failed() == 0)
        std::fprintf(stderr, "kernels build: error: nothing was built (see each target's reason above)\n");
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace kh::cli
