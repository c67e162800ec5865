// Running the tools a package build needs (cmake, ctest, git, compilers' version queries):
// argv straight to exec (no shell), extra environment, a working folder, output captured or
// sent to a log file.
#pragma once

#include <string>
#include <vector>

namespace kh::author {

struct ProcessResult {
  int exit_code = -1;  // the program's status; 128 + N for death by signal N; 127 when it could not start
  std::string output;  // stdout and stderr together, when captured
};

struct ProcessOptions {
  std::vector<std::string> env;  // "NAME=value" set (or replaced) for the child
  std::string cwd;               // "" = this process's
  bool capture = false;          // collect the output (at most 1 MiB kept: the end)
  std::string log_path;          // else, when set: append the output to this file
};

// Runs argv (argv[0] found on PATH unless it holds a '/'). Without capture or a log, the
// child's stdout goes to this process's stderr, so that a verb's own stdout stays its results.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// The path of `name` on PATH (or in one of extra_dirs, searched after PATH); "" when absent.
std::string find_program(const std::string& name, const std::vector<std::string>& extra_dirs = {});

// The last `lines` lines of a text file ("" when unreadable): what a failed step printed.
std::string tail_of_file(const std::string& path, size_t lines);

}  // namespace kh::author
