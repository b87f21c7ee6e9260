// dietcode merge LOG... -o LOG [--force]
//
// Combines tuning logs (say, one per cluster shard) into one: one record per measured
// (op, micro-kernel, shape, GPU), conflicting latencies resolved by the median, failures kept
// once, other lines passed through once (search/log_merge.h). The output is written to a
// temporary file and renamed into place, so it may also be one of the inputs. Exit 1 for bad
// input: a missing log, logs of different GPUs without --force, simulated and real records
// together.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/app.h"
#include "common/error.h"
#include "search/log_merge.h"

namespace dietcode::cli {

namespace {

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string output;
  bool force = false;
};

int run_merge(const MergeOptions& o, const GlobalOptions& global) {
  std::vector<std::string> warnings;
  MergeResult merged = merge_log_files(o.inputs, o.force, warnings);
  if (!global.quiet)
    for (const std::string& w : warnings) std::fprintf(stderr, "%s\n", w.c_str());
  write_file_atomically(o.output, render_merged_log(merged));
  if (!global.quiet)
    std::printf(
        "merged %zu log%s (%zu records) into %s: %zu records, %zu other lines, %zu "
        "conflicting latencies resolved by the median\n",
        o.inputs.size(), o.inputs.size() == 1 ? "" : "s", merged.records_read, o.output.c_str(),
        merged.records.size(), merged.others.size(), merged.conflicts);
  return 0;
}

}  // namespace

void register_merge(CLI::App& app, GlobalOptions& global, Action& action) {
  auto o = std::make_shared<MergeOptions>();
  auto* cmd = app.add_subcommand("merge", "Combine tuning logs (say, of cluster shards) into one");
  add_global_flags(*cmd, global);
  cmd->add_option("LOG", o->inputs, "Tuning logs (JSON Lines) to merge")->required();
  cmd->add_option("-o,--output", o->output, "The merged log; written whole, then renamed in place")
      ->required();
  cmd->add_flag("--force", o->force, "Merge logs of different GPUs (records stay per GPU)");
  cmd->footer(
      "Example:\n"
      "  dietcode merge shard-*.jsonl -o bert.jsonl\n"
      "Same measurement in several logs: one record, the median latency. Simulated and real\n"
      "records are never merged. Exit 1 for bad input.\n");
  cmd->callback([o, &global, &action] { action = [o, &global] { return run_merge(*o, global); }; });
}

}  // namespace dietcode::cli
