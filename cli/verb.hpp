// A verb of `kernels` as data (name, summary, footer) and the one place that turns it into a
// CLI11 subcommand holding the verb's parsed arguments: each cmd_*.cpp says only its options and
// what it does.
#pragma once

#include <memory>

#include <CLI/CLI.hpp>

namespace kh::cli {

struct VerbText {
  const char* name;
  const char* summary;      // the line `kernels --help` lists
  // Examples, exit status: after the options in `kernels <name> --help`. None: the parent's
  // footer is shown, as CLI11 does for a subcommand without one.
  const char* footer = "";
};

inline void set_footer(CLI::App& cmd, const VerbText& text) {
  if (*text.footer != '\0') cmd.footer(text.footer);
}

// A subcommand and the arguments its options fill in. The options bind into *args and the
// callback holds args, so they live as long as the app.
template <class Args>
struct Verb {
  CLI::App* cmd;
  std::shared_ptr<Args> args;

  // When the verb is called: body(args) with the parsed arguments.
  template <class Body>
  void run(Body body) const {
    cmd->callback([held = args, body]() { body(*held); });
  }
};

template <class Args>
Verb<Args> add_verb(CLI::App& parent, const VerbText& text) {
  Verb<Args> verb{parent.add_subcommand(text.name, text.summary), std::make_shared<Args>()};
  set_footer(*verb.cmd, text);
  return verb;
}

// A verb that is only a group of verbs (`kernels keys generate`): one of them must be named.
inline CLI::App* add_verb_group(CLI::App& parent, const VerbText& text) {
  CLI::App* group = parent.add_subcommand(text.name, text.summary);
  set_footer(*group, text);
  group->require_subcommand(1);
  return group;
}

}  // namespace kh::cli
