// Errors are split by whose fault they are, because the CLI maps them to exit codes:
//   UserError        bad input (workload, log, options)       -> exit 1
//   EnvironmentError no GPU, no driver, NVRTC missing, disk   -> exit 2
// A bug of ours is anything else (std::logic_error and friends); the CLI still prints one line.
// Messages are complete sentences the user sees verbatim, already prefixed with the file and
// JSON path where there is one: "w.json: ops[2].K: expected a positive integer, got -768".
#pragma once

#include <stdexcept>
#include <string>

namespace dietcode {

class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class EnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dietcode
