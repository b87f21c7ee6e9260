#include "x86/cxx_compiler.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/error.h"

extern char** environ;

namespace dietcode {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// One translation unit and the command line parts that come from its requests.
struct CxxCompiler::Unit {
  std::string text;  // the source(s), each behind #line 1 "<label>"
  std::vector<std::string> options;
  std::vector<std::string> archs;
};

namespace {

// Diagnostics beyond this are dropped: a template error cascade can print megabytes, and the
// log goes into the kernel cache and the tuning log.
constexpr size_t kMaxLog = size_t(1) << 20;
// --version answers at once from any working compiler; this only bounds a broken one.
constexpr double kVersionTimeoutSeconds = 10;

const char kNoCompiler[] =
    "no C++ compiler found (tried g++, clang++); install g++ or pass --cxx PATH";

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// `name` as execvp would find it, made absolute; "" when it is not there.
std::string find_program(const std::string& name, const std::string& path_list) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) {
    if (!is_executable_file(name)) return "";
    std::error_code ec;
    fs::path absolute = fs::absolute(name, ec);
    return ec ? name : absolute.string();
  }
  std::istringstream dirs(path_list);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (is_executable_file(candidate)) return find_program(candidate, "");
  }
  return "";
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

std::string first_line(const std::string& text) {
  size_t end = text.find('\n');
  std::string line = text.substr(0, end);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

std::string format_seconds(double seconds) { return fmt::format("{:g} s", seconds); }

// A folder of its own for one compile, removed with everything in it.
class TemporaryDir {
 public:
  TemporaryDir() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string pattern = (base / "dietcode-cxx-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw EnvironmentError(fmt::format("cannot create a temporary folder in {}: {}",
                                         base.string(), std::strerror(errno)));
    path_ = pattern;
  }
  ~TemporaryDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TemporaryDir(const TemporaryDir&) = delete;
  TemporaryDir& operator=(const TemporaryDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct ProcessRun {
  bool timed_out = false;
  bool signaled = false;
  int code = 0;        // exit status, or the signal when signaled
  std::string output;  // stdout and stderr together, at most kMaxLog bytes
  double seconds = 0;
};

// Runs argv (argv[0] an absolute path) in `cwd` without a shell, in a process group of its
// own so that a timeout kills the compiler driver and the programs it started. Throws
// EnvironmentError when the program cannot be started at all.
ProcessRun run_with_timeout(const std::vector<std::string>& argv, const fs::path& cwd,
                            double timeout_seconds) {
  ProcessRun run;
  Clock::time_point start = Clock::now();
  Clock::time_point deadline = start + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_seconds));

  // O_CLOEXEC: a child spawned at the same moment by another thread must not inherit our
  // write end, or our read would wait for that other child to exit.
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw EnvironmentError(fmt::format("cannot create a pipe: {}", std::strerror(errno)));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t no_signals, default_signals;
  sigemptyset(&no_signals);
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &no_signals);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int spawn_error = ::posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pipe_fds[1]);
  if (spawn_error != 0) {
    ::close(pipe_fds[0]);
    throw EnvironmentError(
        fmt::format("cannot run the C++ compiler {}: {}", argv[0], std::strerror(spawn_error)));
  }

  auto remaining_ms = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return std::max<long long>(0, left.count());
  };
  char buffer[65536];
  for (;;) {
    long long left = remaining_ms();
    if (left == 0) {
      run.timed_out = true;
      break;
    }
    pollfd fd{pipe_fds[0], POLLIN, 0};
    int ready = ::poll(&fd, 1, int(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of output: the compiler (and its children) closed it
    size_t room = kMaxLog - std::min(kMaxLog, run.output.size());
    run.output.append(buffer, std::min(room, size_t(n)));
  }
  ::close(pipe_fds[0]);

  // Output closed does not mean exited: wait for the status, still under the deadline.
  int status = 0;
  for (;;) {
    if (!run.timed_out) {
      pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) break;
      if (done < 0 && errno != EINTR) break;
      if (remaining_ms() == 0) run.timed_out = true;
    }
    if (run.timed_out) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (run.output.size() >= kMaxLog) run.output += "\n[output truncated]\n";
  run.signaled = WIFSIGNALED(status);
  run.code = run.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return run;
}

// The first diagnostic that says "error" (g++: "a.cc:3:5: error: ...", "fatal error:";
// clang++ the same), else "".
std::string first_error_line(const std::string& log) {
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find("error:") != std::string::npos || line.find("error :") != std::string::npos)
      return line;
  return "";
}

// The name diagnostics give a request's source: its name, made safe for a #line directive.
std::string source_label(const std::string& name) {
  std::string label;
  for (char c : name) {
    bool plain = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
                 c == '/' || c == '+' || c == '#';
    label += plain ? c : '_';
  }
  return label.empty() ? "candidate.cc" : label;
}

void validate_request(const CompileRequest& request) {
  if (request.archs.empty())
    throw std::invalid_argument("compile request " + request.name + " names no ISA level");
  const std::vector<std::string>& levels = CxxCompiler::isa_levels();
  for (const std::string& arch : request.archs) {
    if (std::find(levels.begin(), levels.end(), arch) == levels.end())
      throw UserError(fmt::format(
          "unsupported x86-64 ISA level '{}': the CPU target compiles for x86-64, x86-64-v2, "
          "x86-64-v3 and x86-64-v4",
          arch));
  }
}

}  // namespace

const std::vector<std::string>& CxxCompiler::isa_levels() {
  static const std::vector<std::string> levels = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
  return levels;
}

std::vector<std::string> CxxCompiler::flags(const std::string& level) {
  return {"-std=c++17", "-O3",     "-march=" + level, "-mtune=generic",     "-ffp-contract=fast",
          "-fPIC",      "-shared", "-fno-plt",        "-fvisibility=hidden"};
}

CxxCompiler::CxxCompiler(CxxCompilerOptions options) : timeout_seconds_(options.timeout_seconds) {
  // The one place the environment is read: the CLI's --cxx wins over it.
  const char* path_env = ::getenv("PATH");
  std::string path_list = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  const char* cxx_env = ::getenv("CXX");

  if (!options.path.empty()) {
    std::string found = find_program(options.path, path_list);
    if (found.empty())
      throw EnvironmentError(
          fmt::format("C++ compiler '{}' (from --cxx) is not an executable file", options.path));
    argv_ = {found};
  } else if (cxx_env && !split_words(cxx_env).empty()) {
    argv_ = split_words(cxx_env);
    std::string found = find_program(argv_[0], path_list);
    if (found.empty())
      throw EnvironmentError(fmt::format(
          "C++ compiler '{}' (from $CXX) not found; fix CXX or pass --cxx PATH", argv_[0]));
    argv_[0] = found;
  } else {
    for (const char* name : {"g++", "clang++"}) {
      std::string found = find_program(name, path_list);
      if (!found.empty()) {
        argv_ = {found};
        break;
      }
    }
    if (argv_.empty()) throw EnvironmentError(kNoCompiler);
  }

  TemporaryDir dir;
  std::vector<std::string> version_argv = argv_;
  version_argv.push_back("--version");
  ProcessRun run = run_with_timeout(version_argv, dir.path(), kVersionTimeoutSeconds);
  std::string line = first_line(run.output);
  if (run.timed_out || run.signaled || run.code != 0 || line.empty())
    throw EnvironmentError(fmt::format("C++ compiler {} does not answer --version ({}){}",
                                       argv_.back(),
                                       run.timed_out  ? "timed out"
                                       : run.signaled ? fmt::format("signal {}", run.code)
                                                      : fmt::format("exit status {}", run.code),
                                       line.empty() ? "" : ": " + line));
  version_line_ = line;
}

std::string CxxCompiler::fingerprint() const {
  std::string out = "cxx";
  for (const std::string& word : argv_) out += " " + word;
  out += " [" + version_line_ + "]";
  // The flags, with a placeholder level (the level itself is in the request's archs), so a
  // change of flags in this file is a change of key.
  for (const std::string& flag : flags("LEVEL")) out += " " + flag;
  return out;
}

CompileResult CxxCompiler::compile_unit(const Unit& unit) {
  CompileResult result;
  TemporaryDir dir;
  {
    std::ofstream out(dir.path() / "candidate.cc", std::ios::binary);
    if (!out.write(unit.text.data(), std::streamsize(unit.text.size())) || !out.flush())
      throw EnvironmentError(fmt::format("cannot write the compiler's input in {}: {}",
                                         dir.path().string(), std::strerror(errno)));
  }
  const std::string compiler_name = fs::path(argv_.back()).filename().string();
  for (const std::string& arch : unit.archs) {
    std::vector<std::string> argv = argv_;
    for (const std::string& flag : flags(arch)) argv.push_back(flag);
    for (const std::string& option : unit.options) argv.push_back(option);
    for (const char* tail : {"-o", "out.so", "candidate.cc"}) argv.push_back(tail);
    ProcessRun run = run_with_timeout(argv, dir.path(), timeout_seconds_);
    result.seconds += run.seconds;

    std::string headline;
    if (run.timed_out) {
      headline = "compiler timed out after " + format_seconds(timeout_seconds_);
    } else if (run.signaled) {
      headline = fmt::format("{} was killed by signal {} ({})", compiler_name, run.code,
                             strsignal(run.code));
    } else if (run.code != 0) {
      headline = first_error_line(run.output);
      if (headline.empty())
        headline = fmt::format("{} exited with status {}", compiler_name, run.code);
    }
    if (!headline.empty()) {
      // Line 1 says why; the full output follows under its level, as NvrtcCompiler's log.
      result.log = headline + "\n" + result.log;
    }
    if (!run.output.empty() || !headline.empty()) {
      result.log += "-march=" + arch + ":\n" + run.output;
      if (result.log.back() != '\n') result.log += '\n';
    }
    if (!headline.empty()) return result;  // later levels would fail alike; ok stays false

    ArchBinary binary;
    binary.arch = arch;
    {
      std::ifstream in(dir.path() / "out.so", std::ios::binary);
      binary.cubin.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    if (binary.cubin.size() < 4 || binary.cubin.compare(0, 4,
                                                        "\x7f"
                                                        "ELF") != 0)
      throw EnvironmentError(fmt::format(
          "C++ compiler {} exited 0 for -march={} but wrote no ELF shared object; it is not a "
          "working compiler{}",
          argv_.back(), arch, run.output.empty() ? "" : ": " + first_line(run.output)));
    fs::remove(dir.path() / "out.so");
    result.binaries.push_back(std::move(binary));
  }
  result.ok = true;
  return result;
}

CompileResult CxxCompiler::compile(const CompileRequest& request) {
  validate_request(request);
  Unit unit;
  std::string label = source_label(request.name);
  unit.text = "#line 1 \"" + label + "\"\n" + request.source + "\n";
  unit.options = request.options;
  unit.archs = request.archs;
  return compile_unit(unit);
}

void CxxCompiler::compile_group(const std::vector<CompileRequest>& requests,
                                std::vector<size_t> group, std::vector<CompileResult>* results) {
  if (group.empty()) return;
  if (group.size() == 1) {
    (*results)[group[0]] = compile(requests[group[0]]);
    return;
  }
  Unit unit;
  unit.options = requests[group[0]].options;
  unit.archs = requests[group[0]].archs;
  std::map<std::string, size_t> by_label;  // label -> index into requests
  for (size_t index : group) {
    std::string label = source_label(requests[index].name);
    // Two requests of one name still need two labels, or an error could not be blamed.
    if (by_label.count(label)) label += "#" + std::to_string(index);
    by_label[label] = index;
    unit.text += "#line 1 \"" + label + "\"\n" + requests[index].source + "\n";
  }
  CompileResult combined = compile_unit(unit);
  double share = combined.seconds / double(group.size());
  if (combined.ok) {
    for (size_t index : group) {
      (*results)[index] = combined;
      (*results)[index].seconds = share;
    }
    return;
  }

  // Blame the requests whose file an error line names; compile them alone and batch the rest
  // again. Nothing blamed (a timeout, an error in a shared header), or everything: all alone.
  std::set<size_t> blamed;
  std::istringstream lines(combined.log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("error") == std::string::npos) continue;
    auto it = by_label.find(line.substr(0, line.find(':')));
    if (it != by_label.end()) blamed.insert(it->second);
  }
  std::vector<size_t> rest;
  for (size_t index : group) {
    if (blamed.empty() || blamed.size() == group.size() || blamed.count(index)) {
      (*results)[index] = compile(requests[index]);
    } else {
      rest.push_back(index);
    }
  }
  compile_group(requests, rest, results);
  for (size_t index : group) (*results)[index].seconds += share;
}

std::vector<CompileResult> CxxCompiler::compile_batch(const std::vector<CompileRequest>& requests) {
  for (const CompileRequest& request : requests) validate_request(request);
  // One command line per TU: requests with equal options and levels form a group.
  std::map<std::pair<std::vector<std::string>, std::vector<std::string>>, std::vector<size_t>>
      groups;
  std::vector<std::vector<size_t>*> order;  // groups in order of their first request
  for (size_t i = 0; i < requests.size(); ++i) {
    auto key = std::make_pair(requests[i].options, requests[i].archs);
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(&it->second);
    it->second.push_back(i);
  }
  std::vector<CompileResult> results(requests.size());
  for (std::vector<size_t>* group : order) compile_group(requests, *group, &results);
  return results;
}

}  // namespace dietcode
