// Placeholder until the validate command lands: registers the subcommand so the CLI links.
#include "cli/app.h"
#include "common/error.h"

namespace dietcode::cli {

void register_validate(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* cmd = app.add_subcommand("validate", "(not yet available)");
  add_global_flags(*cmd, global);
  cmd->callback([&action] { action = [] () -> int { throw EnvironmentError("dietcode validate: not yet available"); }; });
}

}  // namespace dietcode::cli
