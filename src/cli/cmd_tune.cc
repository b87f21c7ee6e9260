// dietcode tune WORKLOAD.json [-o LOG.jsonl] [--trials N] [--time-budget DURATION] [--device N]
//   [--jobs N] [--seed N] [--fresh] [--simulate GPU] [--noise SIGMA] [--ops a,b] [--json]
//
// Tunes every op of a workload on the local GPU (or, with --simulate, on a model of one) with
// the joint search over all shape instances (search/joint_search.h), appending every result to
// the tuning log as it arrives. The log is the state: a second run resumes from it, skipping
// what is measured; --fresh moves it aside first. Exit 1 for bad input, 2 when there is no GPU
// (or no NVRTC) to tune with.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/tune_report.h"
#include "codegen/generated_kernel.h"
#include "common/error.h"
#include "measure/gpu_measurer.h"
#include "measure/simulated_device.h"
#include "nvrtc/kernel_cache.h"
#include "nvrtc/nvrtc_compiler.h"
#include "search/budget.h"
#include "search/joint_search.h"
#include "search/log_resume.h"
#include "space/gpu_spec.h"
#include "space/template_space.h"
#include "workload/workload.h"

namespace dietcode::cli {

namespace {

struct TuneOptions {
  std::string workload;
  std::string log;  // "" -> <workload name>.jsonl in the current directory
  int trials = JointSearchOptions{}.budget.trials_per_op;
  std::string time_budget;
  int device = 0;
  int jobs = 0;  // 0: one per core
  bool jobs_given = false;
  uint64_t seed = 0;
  bool fresh = false;
  std::string simulate;
  double noise = 0;
  bool noise_given = false;
  std::string ops;
  bool json = false;
};

[[noreturn]] void bad_option(const std::string& what) { throw UserError("dietcode tune: " + what); }

JointSearchOptions search_options(const TuneOptions& o) {
  JointSearchOptions s;
  if (o.trials < 1)
    bad_option(fmt::format("--trials: expected a positive integer, got {}", o.trials));
  s.budget.trials_per_op = o.trials;
  if (!o.time_budget.empty()) {
    std::optional<double> seconds = parse_duration_seconds(o.time_budget);
    if (!seconds)
      bad_option(
          fmt::format("--time-budget: expected a duration such as 90s, 10m or 1h30m, got \"{}\"",
                      o.time_budget));
    s.budget.time_budget_seconds = *seconds;
  }
  if (o.jobs_given && o.jobs < 1)
    bad_option(fmt::format("--jobs: expected a positive integer, got {}", o.jobs));
  s.jobs = o.jobs;
  s.seed = o.seed;
  if (o.device < 0)
    bad_option(fmt::format("--device: expected a CUDA device ordinal >= 0, got {}", o.device));
  if (o.noise_given && o.simulate.empty())
    bad_option("--noise needs --simulate (it is the simulated device's measurement noise)");
  if (o.noise_given && !(o.noise >= 0))
    bad_option(fmt::format("--noise: expected a number >= 0, got {}", o.noise));
  return s;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// The ops to tune: --ops in workload order, else all; ops no template computes are left out
// with a note.
std::vector<const OpSpec*> select_ops(const Workload& workload, const std::string& list,
                                      std::vector<std::string>& notes) {
  std::vector<std::string> wanted = split_list(list);
  std::string all;
  for (const OpSpec& op : workload.ops) all += (all.empty() ? "" : ", ") + op.name;
  for (const std::string& name : wanted)
    if (!workload.find_op(name))
      bad_option(fmt::format("--ops: no op \"{}\" in workload {} (its ops: {})", name,
                             workload.name, all));
  if (!list.empty() && wanted.empty())
    bad_option("--ops: expected a comma-separated list of op names, got \"" + list + "\"");
  std::vector<const OpSpec*> ops;
  for (const OpSpec& op : workload.ops) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), op.name) == wanted.end())
      continue;
    if (template_spaces_for(op).empty()) {
      notes.push_back(fmt::format("{}: skipped: no template computes {} {} yet", op.name,
                                  to_string(op.dtype), to_string(op.kind)));
      continue;
    }
    ops.push_back(&op);
  }
  if (ops.empty())
    throw UserError(
        fmt::format("dietcode tune: nothing to tune in {}: no template computes its "
                    "ops yet",
                    workload.source));
  return ops;
}

// The device the search measures on and the limits it searches within.
struct Device {
  std::unique_ptr<Measurer> measurer;
  GpuSpec gpu;
};

Device open_device(const TuneOptions& o, Compiler& compiler) {
  Device d;
  if (!o.simulate.empty()) {
    try {
      d.gpu = load_gpu_spec(o.simulate);
    } catch (const UserError& e) {
      bad_option(std::string("--simulate: ") + e.what());
    }
    SimulatedDeviceOptions sim;
    sim.noise_sigma = o.noise;
    sim.seed = o.seed;
    d.measurer = std::make_unique<SimulatedDevice>(d.gpu, sim);
    return d;
  }
  // The worker process talks to the driver; this process never initialises CUDA. The worker
  // is this binary run again as `dietcode __measure-worker` (gpu_measurer.h says why not a
  // fork: tune compiles on several threads). References share the tuner's kernel cache.
  GpuMeasurerOptions options;
  options.device = o.device;
  options.measure.seed = o.seed;
  options.compiler = &compiler;
  try {
    auto gpu = std::make_unique<GpuMeasurer>(std::make_unique<WorkerProcess>(gpu_worker_command()),
                                             options);
    d.gpu = gpu->gpu();
    d.measurer = std::move(gpu);
  } catch (const EnvironmentError& e) {
    throw EnvironmentError(std::string("dietcode tune: no CUDA GPU: ") + e.what() +
                           " (use --simulate GPU to run against a model of one)");
  }
  return d;
}

void print_notes(const std::vector<std::string>& notes, bool quiet) {
  if (quiet) return;
  for (const std::string& note : notes) std::fprintf(stderr, "%s\n", note.c_str());
}

int run_tune(const TuneOptions& o, const GlobalOptions& global) {
  JointSearchOptions options = search_options(o);
  Workload workload = load_workload(o.workload);
  std::vector<std::string> notes;
  std::vector<const OpSpec*> ops = select_ops(workload, o.ops, notes);
  const std::string log_path = o.log.empty() ? workload.name + ".jsonl" : o.log;

  NvrtcCompiler nvrtc;
  CachingCompiler compiler(nvrtc, nvrtc.fingerprint(), default_kernel_cache_dir());
  Device device = open_device(o, compiler);
  const DeviceIdentity identity = device.measurer->device();

  if (o.fresh) {
    const std::string moved = move_log_aside(log_path);
    if (!moved.empty())
      notes.push_back(fmt::format("{}: moved the old log aside to {}", log_path, moved));
  }
  ResumeState resume = read_log_for_resume(log_path, workload.name, identity);
  notes.insert(notes.end(), resume.notes.begin(), resume.notes.end());

  FILE* progress_out = o.json ? stderr : stdout;
  if (!global.quiet) {
    std::fprintf(progress_out, "tuning %s (%zu op%s) on %s (%s)%s\n", workload.name.c_str(),
                 ops.size(), ops.size() == 1 ? "" : "s", identity.name.c_str(),
                 identity.arch.c_str(),
                 identity.simulated ? ": SIMULATED, a model of the GPU, not measurements" : "");
    std::fprintf(progress_out, "log %s: %s\n", log_path.c_str(),
                 resume.records.empty()
                     ? "new records are appended as they arrive"
                     : fmt::format("resuming from {} records of this workload and device",
                                   resume.records.size())
                           .c_str());
  }
  print_notes(notes, global.quiet);

  TuningLogWriter writer(log_path);
  SearchEnvironment env;
  env.compiler = &compiler;
  env.measurer = device.measurer.get();
  env.log = &writer;
  env.gpu = device.gpu;
  env.device = identity;
  env.workload = workload.name;
  JointSearch search(workload, ops, env, options);
  std::vector<const TuningRecord*> records;
  for (const TuningRecord& r : resume.records) records.push_back(&r);
  search.resume_from(records);
  print_notes(search.notes(), global.quiet);

  const TuneProgress::Mode mode = global.quiet                   ? TuneProgress::Mode::kQuiet
                                  : isatty(fileno(progress_out)) ? TuneProgress::Mode::kBar
                                                                 : TuneProgress::Mode::kLines;
  JointSearchResult result;
  {
    TuneProgress progress(mode, progress_out, global.verbose > 0);
    search.set_observer([&progress](const SearchProgress& p) { progress.update(p); });
    result = search.run();
  }
  writer.sync();

  if (o.json) {
    std::printf("%s\n", summary_json(result, workload, identity, log_path, o.seed).dump(2).c_str());
  } else if (!global.quiet) {
    std::printf("%s", summary_text(result, identity).c_str());
  }
  return 0;
}

}  // namespace

void register_tune(CLI::App& app, GlobalOptions& global, Action& action) {
  auto o = std::make_shared<TuneOptions>();
  auto* cmd = app.add_subcommand(
      "tune", "Tune a workload's ops over all their shape instances, appending to a tuning log");
  add_global_flags(*cmd, global);
  cmd->add_option("WORKLOAD", o->workload, "Workload file (JSON; see configs/workloads/)")
      ->required();
  cmd->add_option("-o,--output", o->log,
                  "Tuning log (JSON Lines) to append to; default: NAME.jsonl in the current "
                  "directory, NAME being the workload's name");
  cmd->add_option("--trials", o->trials,
                  "Micro-kernels to compile and measure per op, counting those already in the "
                  "log (a resumed run does the rest)")
      ->capture_default_str();
  cmd->add_option("--time-budget", o->time_budget,
                  "Stop after this much wall time, all ops together: 90s, 10m, 1h30m (kernels "
                  "already compiled are still measured)");
  cmd->add_option("--device", o->device, "CUDA device ordinal to tune on")->capture_default_str();
  auto* jobs =
      cmd->add_option("--jobs", o->jobs, "Parallel NVRTC compiles (default: one per core)");
  cmd->add_option("--seed", o->seed, "Seed of the search (and of the simulated noise)")
      ->capture_default_str();
  cmd->add_flag("--fresh", o->fresh,
                "Start a new log: an existing one is moved aside to LOG.<time>.bak");
  cmd->add_option("--simulate", o->simulate,
                  "Tune against a model of a GPU from configs/gpus/ (h100, a100, ...) instead of "
                  "a real one; the log says \"simulated\": true");
  auto* noise = cmd->add_option("--noise", o->noise,
                                "With --simulate: sigma of the lognormal measurement noise");
  cmd->add_option("--ops", o->ops, "Tune only these ops (comma-separated names)");
  cmd->add_flag("--json", o->json, "Print the summary as JSON (progress goes to stderr)");
  cmd->footer(
      "Examples:\n"
      "  dietcode tune configs/workloads/bert_base_dense.json\n"
      "  dietcode tune configs/workloads/bert_base_dense.json --simulate h100 --trials 32\n"
      "  dietcode tune w.json -o w.jsonl --time-budget 10m --ops qkv,fc1\n"
      "The log is the state: run the same command again to resume a stopped run; records of\n"
      "other GPUs in the log are ignored. Exit 1 for bad input, 2 when there is no GPU (use\n"
      "--simulate GPU to run against a model of one).\n");
  cmd->callback([o, noise, jobs, &global, &action] {
    o->noise_given = noise->count() > 0;
    o->jobs_given = jobs->count() > 0;
    action = [o, &global] { return run_tune(*o, global); };
  });
}

}  // namespace dietcode::cli
