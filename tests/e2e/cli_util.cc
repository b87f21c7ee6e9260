#include "e2e/cli_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace dietcode::test {

namespace {

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::vector<std::string> child_environment(const CommandOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool drop = false;
    for (const auto& u : options.unset_env) drop = drop || u == name;
    for (const auto& [k, v] : options.env) drop = drop || k == name;
    if (!drop) env.push_back(entry);
  }
  for (const auto& [k, v] : options.env) env.push_back(k + "=" + v);
  return env;
}

}  // namespace

std::string CommandResult::summary() const {
  std::ostringstream s;
  if (timed_out)
    s << "timed out";
  else if (signal)
    s << "killed by signal " << signal;
  else
    s << "exit " << exit_code;
  s << "\nstdout: " << out << "\nstderr: " << err;
  return s.str();
}

CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options) {
  if (argv.empty()) throw std::invalid_argument("run_command: empty argv");
  // Everything the child needs is prepared before fork: after it, only async-signal-safe
  // calls are allowed in the child.
  std::vector<std::string> env_strings = child_environment(options);
  std::vector<char*> env_ptrs;
  for (auto& e : env_strings) env_ptrs.push_back(e.data());
  env_ptrs.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> arg_ptrs;
  for (auto& a : args) arg_ptrs.push_back(a.data());
  arg_ptrs.push_back(nullptr);

  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC) || pipe2(in_pipe, O_CLOEXEC))
    throw std::runtime_error(std::string("run_command: pipe: ") + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("run_command: fork: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(126);
    execvpe(arg_ptrs[0], arg_ptrs.data(), env_ptrs.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  // A child that never reads stdin must not block us: write what fits, then close.
  signal(SIGPIPE, SIG_IGN);
  set_nonblocking(in_pipe[1]);
  size_t written = 0;
  set_nonblocking(out_pipe[0]);
  set_nonblocking(err_pipe[0]);

  CommandResult result;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_s);
  bool out_open = true, err_open = true, in_open = true;
  if (options.stdin_text.empty()) {
    close(in_pipe[1]);
    in_open = false;
  }
  char buffer[65536];
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      kill(pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    pollfd fds[3];
    int n = 0;
    if (out_open) fds[n++] = {out_pipe[0], POLLIN, 0};
    if (err_open) fds[n++] = {err_pipe[0], POLLIN, 0};
    if (in_open) fds[n++] = {in_pipe[1], POLLOUT, 0};
    int ready = poll(fds, n, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == in_pipe[1]) {
        ssize_t w = write(in_pipe[1], options.stdin_text.data() + written,
                          options.stdin_text.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 || written == options.stdin_text.size()) {
          close(in_pipe[1]);
          in_open = false;
        }
        continue;
      }
      ssize_t r = read(fds[i].fd, buffer, sizeof buffer);
      if (r > 0) {
        (fds[i].fd == out_pipe[0] ? result.out : result.err).append(buffer, r);
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        if (fds[i].fd == out_pipe[0])
          out_open = false;
        else
          err_open = false;
      }
    }
  }
  if (in_open) close(in_pipe[1]);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !result.timed_out) result.signal = WTERMSIG(status);
  return result;
}

CommandResult run_cli(const std::vector<std::string>& args, const CommandOptions& options) {
  std::vector<std::string> argv = {cli_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, options);
}

bool run_cli_killed_once_written(const std::vector<std::string>& args,
                                 const std::vector<std::pair<std::string, std::string>>& env,
                                 const std::string& file, size_t min_bytes, int timeout_s) {
  std::vector<std::string> argv = {cli_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> arg_ptrs;
  for (std::string& a : argv) arg_ptrs.push_back(a.data());
  arg_ptrs.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    execv(arg_ptrs[0], arg_ptrs.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::error_code ec;
  for (;;) {
    const auto size = std::filesystem::file_size(file, ec);
    if ((!ec && size > min_bytes) || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status);
}

std::string cli_path() { return DIETCODE_CLI_PATH; }
std::string source_dir() { return DIETCODE_SOURCE_DIR; }
std::string test_data_dir() { return DIETCODE_TEST_DATA_DIR; }

std::string shared_tune_cache_dir() {
  return (std::filesystem::temp_directory_path() /
          ("dietcode_cli_tune_cache_" + std::to_string(getuid())))
      .string();
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/dietcode-test-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data()))
    throw std::runtime_error(std::string("TempDir: mkdtemp: ") + std::strerror(errno));
  path_ = buffer.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::file(const std::string& name) const { return path_ + "/" + name; }

std::string TempDir::write(const std::string& name, const std::string& content) const {
  std::string path = file(name);
  write_file(path, content);
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("read_file: cannot open " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("write_file: cannot write " + path);
}

std::string read_file_or_empty(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec) ? read_file(path.string()) : std::string();
}

std::vector<std::string> words(const std::string& args) {
  std::vector<std::string> out;
  std::istringstream in(args);
  std::string word;
  while (in >> word) out.push_back(word);
  return out;
}

std::vector<std::string> log_without_timestamps(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    j.erase("timestamp");
    out.push_back(j.dump());
  }
  return out;
}

}  // namespace dietcode::test
