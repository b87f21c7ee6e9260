// Runs a program (the host C++ compiler) without a shell: no quoting of paths, and its exit
// status and output come back as data.
#pragma once

#include <string>
#include <vector>

namespace dietcode {

struct ProcessResult {
  bool started = false;  // false when the program could not be run at all
  int exit_code = -1;    // the exit status, or 128 + signal
  std::string output;    // stdout and stderr together
  std::string error;     // why it did not start
};

// argv[0] is looked up on PATH. The child runs in `cwd` with stdin from /dev/null.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd);

}  // namespace dietcode
