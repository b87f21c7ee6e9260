#include "pack/run_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dietcode {

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd) {
  ProcessResult result;
  int out[2], status_pipe[2];
  if (pipe(out) != 0) {
    result.error = std::strerror(errno);
    return result;
  }
  // A second pipe, closed on exec, tells the parent whether execvp failed and why.
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    result.error = std::strerror(errno);
    close(out[0]);
    close(out[1]);
    return result;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    close(out[0]);
    close(status_pipe[0]);
    int err = 0;
    if (chdir(cwd.c_str()) != 0) {
      err = errno;
    } else {
      execvp(args[0], args.data());
      err = errno;
    }
    ssize_t ignored = write(status_pipe[1], &err, sizeof err);
    (void)ignored;
    _exit(127);
  }
  close(out[1]);
  close(status_pipe[1]);
  if (pid < 0) {
    result.error = std::strerror(errno);
    close(out[0]);
    close(status_pipe[0]);
    return result;
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) result.output.append(buf, size_t(n));
  close(out[0]);
  int exec_error = 0;
  bool failed = read(status_pipe[0], &exec_error, sizeof exec_error) == sizeof exec_error;
  close(status_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (failed) {
    result.error = std::strerror(exec_error);
    return result;
  }
  result.started = true;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace dietcode
