// Child processes for the author tools: fork + execvp, output to a pipe or a log file.
#include "kh/author/process.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>

extern char** environ;

namespace kh::author {
namespace {

constexpr size_t kMaxCapturedBytes = 1u << 20;

std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& x : extra)
      if (x.compare(0, name.size() + 1, name + "=") == 0) replaced = true;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

int status_of(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  ProcessResult result;
  if (argv.empty()) return result;
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_strings = merged_environment(options.env);
  std::vector<char*> args, env;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env_strings) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);

  int pipe_fds[2] = {-1, -1};
  int log_fd = -1;
  if (options.capture) {
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      result.output = std::string("cannot create a pipe: ") + std::strerror(errno);
      return result;
    }
  } else if (!options.log_path.empty()) {
    log_fd = ::open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      result.output = "cannot open the log '" + options.log_path + "': " + std::strerror(errno);
      return result;
    }
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = options.capture ? pipe_fds[1] : log_fd >= 0 ? log_fd : STDERR_FILENO;
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) ::_exit(127);
    environ = env.data();
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  if (options.capture) ::close(pipe_fds[1]);
  if (log_fd >= 0) ::close(log_fd);
  if (pid < 0) {
    if (options.capture) ::close(pipe_fds[0]);
    result.output = std::string("cannot start ") + argv[0] + ": " + std::strerror(errno);
    return result;
  }
  if (options.capture) {
    char buf[1 << 14];
    for (;;) {
      const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      result.output.append(buf, static_cast<size_t>(n));
      if (result.output.size() > 2 * kMaxCapturedBytes) result.output.erase(0, result.output.size() - kMaxCapturedBytes);
    }
    ::close(pipe_fds[0]);
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = status_of(wstatus);
  return result;
}

std::string find_program(const std::string& name, const std::vector<std::string>& extra_dirs) {
  auto executable = [](const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return executable(name) ? name : "";
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      const size_t colon = p.find(':', start);
      dirs.push_back(p.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  dirs.insert(dirs.end(), extra_dirs.begin(), extra_dirs.end());
  for (const std::string& d : dirs)
    if (!d.empty() && executable(d + "/" + name)) return d + "/" + name;
  return "";
}

std::string tail_of_file(const std::string& path, size_t lines) {
  std::ifstream in(path);
  if (!in) return "";
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (last.size() > lines) last.pop_front();
  }
  std::string out;
  for (const std::string& l : last) out += l + "\n";
  return out;
}

}  // namespace kh::author
