// `kernels targets [--json]`: kh's build targets (the author kit's target table) with the
// variant key each makes on this machine, what it needs, and whether that is installed here.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kh/author/kit.hpp"
#include "kh/author/targets.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_targets_command(CLI::App& app) {
  const auto verb = add_verb<bool>(
      app, {"targets", "List the build targets, their variant keys and toolchains",
            "A target key (cpu-x86_64, cuda-sm90a, rocm-gfx942, ...) is what `kernels build --target` takes;\n"
            "its variant key is what the package archive and the hub's index name the build by."});
  verb.cmd->add_flag("--json", *verb.args, "Print {\"max_glibc\": ..., \"targets\": [...]} as JSON");
  verb.run([](bool& json) {
    const author::Kit kit = author::find_kit(KH_VERSION_STRING, settings().author_kit);
    const author::TargetTable table = author::read_target_table(kit.matrix_json());
    nlohmann::ordered_json doc{{"max_glibc", table.max_glibc}, {"targets", nlohmann::ordered_json::array()}};
    if (!json) std::printf("%-15s %-40s %-9s %s\n", "TARGET", "VARIANT KEY (here)", "TOOLCHAIN", "NEEDS");
    for (const author::Target& t : table.targets) {
      const author::ToolchainStatus s = author::probe_toolchain(t);
      std::string needs;
      nlohmann::ordered_json requires = nlohmann::ordered_json::array();
      for (const author::Requirement& r : t.requires) {
        needs += (needs.empty() ? "" : ", ") + r.program + (r.package.empty() ? "" : " (" + r.package + ")");
        requires.push_back({{"program", r.program}, {"package", r.package}});
      }
      if (json) {
        doc["targets"].push_back({{"key", t.key},
                                  {"backend", t.backend},
                                  {"arch", t.arch},
                                  {"variant_key", s.variant_key},
                                  {"toolchain_present", s.present},
                                  {"missing", s.missing},
                                  {"requires", requires},
                                  {"toolchain", t.toolchain}});
      } else {
        std::printf("%-15s %-40s %-9s %s\n", t.key.c_str(), s.variant_key.c_str(), s.present ? "present" : "missing",
                    needs.empty() ? "the host C++ compiler" : needs.c_str());
      }
    }
    if (json) std::printf("%s\n", doc.dump(2).c_str());
  });
}

}  // namespace kh::cli
