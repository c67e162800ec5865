// `kernels settings [--markdown]`: the KH_* variables kh reads, with the values in effect
// here, or their documentation as docs/settings.md holds it (generated from the same table).
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kh/install/settings.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_settings_command(CLI::App& app) {
  struct Args {
    bool markdown = false;
    bool json = false;
  };
  const auto verb = add_verb<Args>(app, {"settings", "Show the environment variables kh reads and their values here"});
  verb.cmd->add_flag("--markdown", verb.args->markdown, "Print their documentation (docs/settings.md) instead");
  verb.cmd->add_flag("--json", verb.args->json, "Print {\"settings\": [{\"name\", \"value\", \"default\"}...]}");
  verb.run([](Args& args) {
    if (args.markdown) {
      std::fputs(install::settings_markdown().c_str(), stdout);
      return;
    }
    settings();  // every value is checked: a bad one fails here, naming its variable
    nlohmann::json rows = nlohmann::json::array();
    for (const install::SettingDoc& d : install::setting_docs()) {
      const char* v = std::getenv(d.name);
      const bool secret = std::string(d.name).find("TOKEN") != std::string::npos ||
                          std::string(d.name).find("PASSWORD") != std::string::npos;
      const std::string shown = v == nullptr || *v == '\0' ? "" : secret ? "(set)" : v;
      if (args.json) {
        rows.push_back({{"name", d.name}, {"value", shown}, {"default", d.fallback}});
      } else {
        std::printf("%-24s %s\n", d.name, shown.empty() ? ("(default: " + std::string(d.fallback) + ")").c_str() : shown.c_str());
      }
    }
    if (args.json) std::printf("%s\n", nlohmann::json{{"settings", rows}}.dump(2).c_str());
  });
}

}  // namespace kh::cli
