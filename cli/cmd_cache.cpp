// `kernels cache verify | gc | clean`: check and tidy the local cache.
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "common_options.hpp"
#include "human_size.hpp"
#include "kh/registry/cache_maintenance.hpp"
#include "kh/registry/status_error.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {
namespace {

void print_report(const char* verb, const registry::GarbageReport& report) {
  for (const auto& path : report.removed) std::printf("removed %s\n", path.c_str());
  std::printf("%s: %s removed, %s freed\n", verb, count_of(report.removed.size(), "entry", "entries").c_str(),
              human_size(report.bytes).c_str());
}

}  // namespace

void add_cache_command(CLI::App& app) {
  struct Args {
    std::string cache_root;
    bool remove_damaged = false;
    bool drop_archives = false;
    bool include_trust = false;
    int64_t min_tmp_age_s = 3600;
  };
  const auto verb = add_verb<Args>(app, {"cache", "Check and tidy the local cache"});
  verb.cmd->require_subcommand(1);
  add_cache_option(verb.cmd, verb.args->cache_root);
  // verify, gc and clean share the cache option, so they share the verb's arguments.
  const std::shared_ptr<Args>& args = verb.args;
  auto cache = [args]() { return open_cache(args->cache_root); };

  CLI::App* verify = verb.cmd->add_subcommand("verify", "Re-hash every cached package against its manifest");
  verify->add_flag("--remove-damaged", args->remove_damaged, "Delete damaged packages (they are fetched again on next use)");
  verify->callback([args, cache]() {
    const auto checks = registry::verify_cache(cache(), args->remove_damaged);
    size_t damaged = 0;
    for (const auto& c : checks) {
      if (c.problem.empty()) {
        std::printf("ok       %s\n", c.name.c_str());
      } else {
        ++damaged;
        std::printf("DAMAGED  %s  %s\n         %s%s\n", c.name.empty() ? c.sha256.c_str() : c.name.c_str(), c.dir.c_str(),
                    c.problem.c_str(), args->remove_damaged ? " (removed)" : "");
      }
    }
    std::printf("%s checked, %zu damaged\n", count_of(checks.size(), "package").c_str(), damaged);
    if (damaged > 0 && !args->remove_damaged)
      fail(KH_ERROR_VERIFICATION, "the cache holds damaged packages; run `kernels cache verify --remove-damaged`");
  });

  CLI::App* gc = verb.cmd->add_subcommand("gc", "Remove stale work files, incomplete packages and (optionally) unpacked archives");
  gc->add_option("--min-tmp-age", args->min_tmp_age_s, "Only remove work files older than this many seconds")
      ->check(CLI::NonNegativeNumber);
  gc->add_flag("--drop-archives", args->drop_archives, "Also remove the archives of packages already unpacked");
  gc->callback([args, cache]() { print_report("gc", registry::collect_garbage(cache(), args->min_tmp_age_s, args->drop_archives)); });

  CLI::App* clean = verb.cmd->add_subcommand("clean", "Remove every package, archive and cached metadata");
  clean->add_flag("--include-trust", args->include_trust,
                  "Also forget pinned roots and the highest metadata versions seen (weakens rollback protection)");
  clean->callback([args, cache]() { print_report("clean", registry::clean_cache(cache(), args->include_trust)); });
}

}  // namespace kh::cli
