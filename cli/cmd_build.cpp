// `kernels build [DIR] [--target KEY ...] [--all-targets] [--out dist]`: build a package for
// kh targets, test it, check its ABI and pack it, with provenance (build-matrix/author).
// `kernels build --verify <org>/<name>@<version>`: rebuild a published release from the
// commit it records and compare it with the hub's bytes (verify_release.cpp).
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "common_options.hpp"
#include "kh/author/kit.hpp"
#include "kh/author/package_build.hpp"
#include "kh/registry/status_error.hpp"
#include "session.hpp"
#include "verify_release.hpp"

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
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("build", "Build, test, ABI-check and pack a kernel package for kh targets");
  cmd->add_option("dir", args->request.package_dir, "The package folder, holding kernel.json (default: .)");
  cmd->add_option("--target", args->request.targets,
                  "A target to build (repeat for several; `kernels targets` lists them; default: this machine's "
                  "CPU target)");
  cmd->add_flag("--all-targets", args->request.all_targets,
                "Every target the package has a backend for; one whose toolchain is missing is skipped, naming "
                "what to install");
  cmd->add_option("--out", args->request.out_dir, "Where the package archives go (default: <dir>/dist)");
  cmd->add_option("--build-dir", args->request.build_root, "Build trees, one per target (default: <dir>/build/kh)");
  cmd->add_option("-j,--jobs", args->request.jobs, "Parallel compile jobs (default: the CPUs here)");
  cmd->add_flag("--no-test", [args](int64_t) { args->request.run_tests = false; },
                "Do not run the package's tests (ctest) after the CPU builds");
  cmd->add_flag("--require-all", args->request.require_all, "A target whose toolchain is missing is an error");
  cmd->add_option("--max-glibc", args->request.max_glibc,
                  "ABI check: the newest GLIBC_x.y a library may need (default: the target table's)");
  cmd->add_flag("-v,--verbose", args->request.verbose, "Show the tools' output (else it goes to <build-dir>/<target>.log)");
  cmd->add_option("--cmake-arg", args->request.cmake_args, "An extra argument for each target's cmake configure");
  cmd->add_option("--verify", args->verify_spec,
                  "Rebuild the release <org>/<name>@<version> from the commit its provenance records (DIR is a "
                  "git checkout holding that commit) and say whether every byte matches what the hub serves");
  add_hub_options(cmd, args->hub);
  cmd->footer(
      "Each build archive's name ends in its variant key. Exit status: 0 when every requested target the\n"
      "toolchains here allow was built and packed, 1 when one failed or none could be built.\n"
      "Examples:\n"
      "  kernels build                                   # this machine's CPU target, into ./dist\n"
      "  kernels build --target cuda-sm90a --target rocm-gfx942\n"
      "  kernels build --all-targets --out dist          # what CI runs before `kernels publish dist`\n"
      "  kernels build --verify acme/scale@0.1.0 --hub https://hub.example.org/kh");
  cmd->callback([args]() {
    const install::Settings& s = settings();
    const author::Kit kit = author::find_kit(KH_VERSION_STRING, s.author_kit);
    args->request.cmake_args.insert(args->request.cmake_args.end(), s.build_cmake_args.begin(), s.build_cmake_args.end());
    args->request.source_repository = s.source_repository;
    auto progress = [](const std::string& line) { std::fprintf(stderr, "kernels build: %s\n", line.c_str()); };
    if (!args->verify_spec.empty()) {
      if (verify_release(args->verify_spec, args->request, args->hub, kit, progress) != 0) throw CLI::RuntimeError(1);
      return;
    }
    const author::BuildReport report = author::build_package(args->request, kit, progress);
    print_report(report);
    if (report.failed() > 0 || report.built() == 0) {
      if (report.built() == 0 && report.failed() == 0)
        std::fprintf(stderr, "kernels build: error: nothing was built (see each target's reason above)\n");
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace kh::cli
