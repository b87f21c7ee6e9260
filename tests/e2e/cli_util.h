// Running programs from end-to-end tests: the dietcode CLI or any other command (a compiler,
// a C program that loads a pack), with its exit status, stdout and stderr captured
// separately, an optional stdin, environment changes, a working directory and a time limit.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace dietcode::test {

struct CommandResult {
  int exit_code = -1;  // the exit status when the process exited normally, else -1
  int signal = 0;      // the signal that killed it, 0 when it exited
  bool timed_out = false;
  std::string out;  // stdout
  std::string err;  // stderr

  bool exited() const { return signal == 0 && !timed_out; }
  // For assertion messages: "exit 1, stderr: ..." / "signal 11".
  std::string summary() const;
};

struct CommandOptions {
  std::string cwd;                                       // empty: the test's own
  std::vector<std::pair<std::string, std::string>> env;  // set (or override) these
  std::vector<std::string> unset_env;                    // and remove these
  std::string stdin_text;                                // empty: stdin is /dev/null
  int timeout_s = 300;                                   // then SIGKILL, timed_out = true
};

// Runs argv[0] (looked up in PATH when it has no '/') with the given arguments.
CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options = {});

// Runs the dietcode binary under test (DIETCODE_CLI_PATH) with these arguments.
CommandResult run_cli(const std::vector<std::string>& args, const CommandOptions& options = {});

// Starts the dietcode CLI with `args` (and `env` set) in the background, waits until `file`
// holds more than `min_bytes` bytes or `timeout_s` passes, then kills it with SIGKILL: a run cut
// off mid-way, for resume tests. Returns true when the kill found it still running.
bool run_cli_killed_once_written(const std::vector<std::string>& args,
                                 const std::vector<std::pair<std::string, std::string>>& env,
                                 const std::string& file, size_t min_bytes = 0,
                                 int timeout_s = 120);

std::string cli_path();       // the dietcode binary under test
std::string source_dir();     // the repository root
std::string test_data_dir();  // tests/data
// The kernel cache the CLI tune tests share (DIETCODE_CACHE_DIR), so that kernels one of them
// compiled are hits for the next: $TMPDIR/dietcode_cli_tune_cache_<uid>.
std::string shared_tune_cache_dir();

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name.
  std::string file(const std::string& name) const;
  // Writes `content` to path()/name and returns that path.
  std::string write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

std::string read_file(const std::string& path);                     // throws std::runtime_error
std::string read_file_or_empty(const std::filesystem::path& path);  // "" when there is none
void write_file(const std::string& path, const std::string& content);

// Splits a command line the way the shell would for simple arguments (no quotes).
std::vector<std::string> words(const std::string& args);

// The lines of a tuning log, each without its timestamp: what must be equal between runs.
std::vector<std::string> log_without_timestamps(const std::string& text);

}  // namespace dietcode::test
