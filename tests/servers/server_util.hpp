// What the loopback server fixtures share: finding a program, small files, shell quoting,
// starting a child that dies with the test, waiting for its port, stopping it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace kh_test {

// `name` on PATH, then in /usr/sbin, /sbin, /usr/local/sbin; "" when none is executable.
std::string find_program(const std::string& name);

std::string read_text_file(const std::string& path);
// Throws std::runtime_error when it cannot be written.
void write_text_file(const std::string& path, const std::string& text);
// 'text' for /bin/sh.
std::string shell_quote(const std::string& text);

// Whether something accepts TCP connections at host:port now.
bool can_connect(const char* host, int port);

// Starts program with args, stdout and stderr into log; the child gets SIGTERM when the
// test process dies. Throws std::runtime_error when fork fails.
pid_t spawn_logged(const std::string& program, const std::vector<std::string>& args, const std::string& log);
// Waits up to 10 s for host:port to accept connections; throws std::runtime_error with
// the log when the child exits or the time runs out (the caller stops it).
void wait_listening(pid_t& pid, const char* host, int port, const std::string& log, const std::string& what);
// SIGTERM, up to 5 s, then SIGKILL; reaped. No-op for pid <= 0.
void stop_process(pid_t pid);

// A shell command's exit code (-1 when it did not exit), its stdout and stderr together,
// and how long it ran.
struct ShellRun {
  int exit_code = -1;
  std::string output;
  double seconds = 0;
};
// Runs `command` with /bin/sh. Throws std::runtime_error when it cannot be started.
ShellRun run_shell(const std::string& command);

}  // namespace kh_test
