// The dietcode command line: one file per subcommand (cmd_<name>.cc), each registering itself
// on the app with its options struct. run() maps errors to exit codes: 1 for the user's input,
// 2 for the environment, never a stack trace.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace dietcode::cli {

// Options every subcommand has.
struct GlobalOptions {
  int verbose = 0;
  bool quiet = false;
};

// A subcommand's action, run after parsing; returns the exit code.
using Action = std::function<int()>;

// Adds -v/--verbose and -q/--quiet to a subcommand, bound to the shared GlobalOptions.
void add_global_flags(CLI::App& cmd, GlobalOptions& global);

// Registration functions, one per cmd_<name>.cc.
void register_validate(CLI::App& app, GlobalOptions& global, Action& action);
void register_devices(CLI::App& app, GlobalOptions& global, Action& action);
void register_inspect(CLI::App& app, GlobalOptions& global, Action& action);
void register_build(CLI::App& app, GlobalOptions& global, Action& action);
void register_bench(CLI::App& app, GlobalOptions& global, Action& action);
void register_measure_worker(CLI::App& app, GlobalOptions& global, Action& action);
void register_tune(CLI::App& app, GlobalOptions& global, Action& action);
void register_merge(CLI::App& app, GlobalOptions& global, Action& action);
void register_import(CLI::App& app, GlobalOptions& global, Action& action);

int run(int argc, char** argv);

}  // namespace dietcode::cli
