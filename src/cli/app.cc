#include "cli/app.h"

#include <cstdio>
#include <exception>
#include <iostream>

#include "common/error.h"
#include "common/version.h"

namespace dietcode::cli {

void add_global_flags(CLI::App& cmd, GlobalOptions& global) {
  cmd.add_flag("-v,--verbose", global.verbose, "More detail (repeat for more)");
  cmd.add_flag("-q,--quiet", global.quiet, "Only errors");
}

int run(int argc, char** argv) {
  CLI::App app{
      "dietcode: an ahead-of-time compiler for dynamic-shape tensor operators on NVIDIA GPUs\n"
      "and x86-64 CPUs.\n"
      "Tune once for every shape, ship one kernel pack with a decision-tree dispatcher.",
      "dietcode"};
  app.set_version_flag("--version", std::string("dietcode ") + tool_version());
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  dietcode validate configs/workloads/bert_base_dense.json\n"
      "  dietcode import model.onnx --dynamic sequence_length=1:128 -o model.json\n"
      "Run 'dietcode COMMAND --help' for a command's options.");

  GlobalOptions global;
  Action action;
  register_import(app, global, action);
  register_validate(app, global, action);
  register_devices(app, global, action);
  register_inspect(app, global, action);
  register_tune(app, global, action);
  register_build(app, global, action);
  register_bench(app, global, action);
  register_measure_worker(app, global, action);
  register_merge(app, global, action);

  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      // --help and --version exit 0; any other parse error is the user's: exit 1.
      return app.exit(e) == 0 ? 0 : 1;
    }
    return action ? action() : 0;
  } catch (const UserError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const EnvironmentError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dietcode: internal error (please report): %s\n", e.what());
    return 3;
  }
}

}  // namespace dietcode::cli
