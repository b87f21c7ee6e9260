// dietcode tune WORKLOAD.json [-o LOG.jsonl] [--trials N] [--time-budget DURATION] [--device N]
//   [--devices LIST] [--jobs N] [--seed N] [--fresh] [--simulate GPU] [--noise SIGMA] [--ops a,b]
//   [--json] [--shard I/N] [--l2 flush|warm] [--target cuda|cpu] [--threads N] [--cxx PATH]
//   [--constant-weights] [--runoff N] [--kernels FILE]
//
// Tunes every op of a workload on the local GPU (or, with --simulate, on a model of one; or,
// with --target cpu, on this host's cores, tune_machine.h) with
// the joint search over all shape instances (search/joint_search.h), appending every result to
// the tuning log as it arrives; --kernels FILE times the micro-kernels it lists instead of
// searching (search/kernel_list.h); --devices shares the measuring among several GPUs of one model
// (measure/measure_pool.h) without changing the log. The log is the state: a second run resumes
// from it, skipping what is measured; --fresh moves it aside first. Timings flush the L2 before
// every launch unless --l2 warm, as `bench` does, so kernels are chosen in the regime they are
// graded in; every record says which. Exit 1 for bad input, 2 when there is no GPU (or no NVRTC)
// to tune with, when every candidate fails the same way (a broken driver, not bad kernels), or
// when no candidate passed at all.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/tune_devices.h"
#include "cli/tune_machine.h"
#include "cli/tune_report.h"
#include "codegen/generated_kernel.h"
#include "common/error.h"
#include "pack/pack_target.h"
#include "search/budget.h"
#include "search/joint_search.h"
#include "search/kernel_list.h"
#include "search/log_resume.h"
#include "search/shard.h"
#include "space/gpu_spec.h"
#include "space/op_computation.h"
#include "space/template_space.h"
#include "workload/workload.h"

namespace dietcode::cli {

namespace {

struct TuneOptions {
  std::string workload;
  std::string log;  // "" -> <workload name>.jsonl in the current directory
  int trials = JointSearchOptions{}.budget.trials_per_op;
  bool trials_given = false;
  std::string time_budget;
  int device = 0;
  bool device_given = false;
  std::string devices;  // --devices: "all" or ordinals; empty: --device alone
  bool devices_given = false;
  int jobs = 0;  // 0: one per core
  bool jobs_given = false;
  uint64_t seed = 0;
  bool fresh = false;
  std::string simulate;
  double noise = 0;
  bool noise_given = false;
  std::string ops;
  std::string shard;  // "I/N"; empty: the whole workload
  std::string l2 = "flush";
  std::string target = "cuda";
  int threads = 0;  // --target cpu: 0 = every CPU of the affinity mask
  bool threads_given = false;
  std::string cxx;
  std::string arch;  // --target cpu: the highest x86-64 level tuned
  bool constant_weights = false;  // --target cpu: time kernels on weights packed once
  int runoff = JointSearchOptions{}.runoff_finalists;
  int restarts = JointSearchOptions{}.budget.restarts;
  std::string objective = "time";  // --objective: time or geomean
  std::string kernels;  // --kernels: a kernel list or a tuning log; empty: search
  bool json = false;
};

[[noreturn]] void bad_option(const std::string& what) { throw UserError("dietcode tune: " + what); }

// Trials per op when a time budget is given and --trials is not: the budget decides (and an
// op still stops on its own once its rounds stop improving). With the default of 96, the first
// 4-minute tune on an H200 ended after 225 s with time to spare.
constexpr int kTrialsUnderATimeBudget = 4096;

JointSearchOptions search_options(const TuneOptions& o) {
  JointSearchOptions s;
  if (o.trials_given && !o.kernels.empty())
    bad_option("--trials and --kernels: the list decides what is timed; give one of them");
  if (o.trials < 1)
    bad_option(fmt::format("--trials: expected a positive integer, got {}", o.trials));
  s.budget.trials_per_op =
      o.trials_given || o.time_budget.empty() ? o.trials : kTrialsUnderATimeBudget;
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
  if (o.runoff < 0)
    bad_option(fmt::format("--runoff: expected 0 (off) or a positive integer, got {}", o.runoff));
  s.runoff_finalists = o.runoff;
  if (o.restarts < 0)
    bad_option(fmt::format("--restarts: expected 0 (stop at the first stall) or a positive "
                           "integer, got {}", o.restarts));
  s.budget.restarts = o.restarts;
  s.objective =
      o.objective == "geomean" ? SearchObjective::kWeightedLogTime : SearchObjective::kWeightedTime;
  if (o.device < 0)
    bad_option(fmt::format("--device: expected a CUDA device ordinal >= 0, got {}", o.device));
  if (o.device_given && o.devices_given) bad_option("--device and --devices: give one of them");
  if (o.devices_given && o.devices.empty())
    bad_option(
        "--devices: expected \"all\" or GPU ordinals separated by commas (such as 0,1,3), got "
        "\"\"");
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
                                      Target target, std::vector<std::string>& notes) {
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
    if (template_spaces_for(op, target).empty()) {
      notes.push_back(fmt::format("{}: skipped: no {} template computes {} yet", op.name,
                                  to_string(target), op_computation_text(op)));
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

// Narrows `ops` to shard I/N's share (search/shard.h), recording instance ranges in `options`
// and saying what the shard tunes in `notes`.
void apply_shard(const Workload& workload, ShardSpec shard, std::vector<const OpSpec*>& ops,
                 JointSearchOptions& options, std::vector<std::string>& notes) {
  std::vector<size_t> counts;
  for (const OpSpec* op : ops) counts.push_back(expand_instances(workload, *op).size());
  std::vector<const OpSpec*> mine;
  for (const ShardPiece& piece : plan_shard(counts, shard)) {
    const OpSpec* op = ops[piece.op];
    mine.push_back(op);
    if (piece.begin != 0 || piece.end != counts[piece.op])
      options.instance_ranges[op->name] = {piece.begin, piece.end};
    notes.push_back(fmt::format("shard {}/{}: {}: instances {} to {} of {}", shard.index,
                                shard.count, op->name, piece.begin + 1, piece.end,
                                counts[piece.op]));
  }
  ops = std::move(mine);
}

// "" when some instance of some op has a kernel; else why no candidate passed, one line.
std::string nothing_passed(const JointSearchResult& result, const DeviceIdentity& device,
                           const std::string& log_path) {
  OpSearchStats sum;
  for (const OpOutcome& op : result.ops) {
    if (op.kernels_used > 0) return "";
    sum.compiled += op.stats.compiled;
    sum.compile_errors += op.stats.compile_errors;
    sum.over_limits += op.stats.over_limits;
    sum.failed_kernels += op.stats.failed_kernels;
  }
  return fmt::format(
      "dietcode tune: no candidate passed on {}: of {} kernels compiled in this run, {} did not "
      "compile, {} exceeded the device's limits and {} failed when run (launch errors, timeouts, "
      "wrong results); {} has each one's error",
      device.name, sum.compiled, sum.compile_errors, sum.over_limits, sum.failed_kernels,
      log_path);
}

void print_notes(const std::vector<std::string>& notes, bool quiet) {
  if (quiet) return;
  for (const std::string& note : notes) std::fprintf(stderr, "%s\n", note.c_str());
}

TuneMachineRequest machine_request(const TuneOptions& o) {
  TuneMachineRequest r;
  r.target = *parse_target(o.target);  // CLI11 checked it
  r.gpu.simulate = o.simulate;
  r.gpu.devices = o.devices;
  r.gpu.device = o.device;
  r.gpu.noise = o.noise;
  r.gpu.seed = o.seed;
  r.gpu.flush_l2 = o.l2 == "flush";
  r.threads = o.threads;
  r.cxx = o.cxx;
  r.cpu_arch = o.arch;
  r.constant_weights = o.constant_weights;
  if (r.target == Target::kCpu) {
    for (const auto& [given, name] : {std::pair{o.device_given, "--device"},
                                      {o.devices_given, "--devices"},
                                      {!o.simulate.empty(), "--simulate"}})
      if (given) bad_option(fmt::format("{} is for GPUs; --target cpu tunes on this host", name));
    if (o.threads_given && o.threads < 1)
      bad_option(fmt::format("--threads: expected a positive integer, got {}", o.threads));
  } else {
    if (o.threads_given) bad_option("--threads is for --target cpu");
    if (!o.cxx.empty()) bad_option("--cxx is for --target cpu");
    if (!o.arch.empty()) bad_option("--arch is for --target cpu (a GPU is tuned for its own arch)");
    if (o.constant_weights) bad_option("--constant-weights is for --target cpu");
  }
  return r;
}

int run_tune(const TuneOptions& o, const GlobalOptions& global) {
  JointSearchOptions options = search_options(o);
  const TuneMachineRequest request = machine_request(o);
  // The runoff's finalists weighed as `build` weighs kernels by default (--portable-margin).
  options.serving_factor = [&pack = pack_target(request.target)](const MicroKernel& mk) {
    return pack.serving_factor(mk);
  };
  Workload workload = load_workload(o.workload);
  std::vector<std::string> notes;
  if (!o.kernels.empty()) {
    KernelList list = read_kernel_list(o.kernels);
    notes.insert(notes.end(), list.notes.begin(), list.notes.end());
    notes.push_back(fmt::format("{}: {} kernel{} listed: timing {} on every op {} can compute, "
                                "with no search",
                                o.kernels, list.kernels.size(),
                                list.kernels.size() == 1 ? "" : "s",
                                list.kernels.size() == 1 ? "it" : "them",
                                list.kernels.size() == 1 ? "it" : "they"));
    options.listed_kernels = std::move(list.kernels);
  }
  std::vector<const OpSpec*> ops = select_ops(workload, o.ops, request.target, notes);
  std::string log_path = o.log.empty() ? workload.name + ".jsonl" : o.log;
  if (!o.shard.empty()) {
    ShardSpec shard;
    try {
      shard = parse_shard(o.shard);
    } catch (const UserError& e) {
      bad_option(e.what());
    }
    // Shards on a shared file system must not append to one file: each gets its own log.
    if (o.log.empty())
      log_path = fmt::format("{}.shard-{}-of-{}.jsonl", workload.name, shard.index, shard.count);
    apply_shard(workload, shard, ops, options, notes);
    if (ops.empty()) {
      if (!global.quiet)
        std::fprintf(stderr, "shard %d/%d: nothing to tune: %s has fewer instances than shards\n",
                     shard.index, shard.count, workload.name.c_str());
      return 0;
    }
  }

  check_log_appendable(log_path);  // before a GPU or the CPU's cores are set up for nothing
  TuneMachine machine = open_tune_machine(request);
  if (machine.max_instances_per_kernel > 0)
    options.max_instances_per_kernel = machine.max_instances_per_kernel;
  if (machine.kernels_per_round > 0) options.kernels_per_round = machine.kernels_per_round;
  TuneDevices& devices = machine.devices;
  const DeviceIdentity identity = devices.measurers[0]->device();

  SearchEnvironment env;  // the log is set once there is work (set_log)
  env.compiler = machine.compiler.get();
  env.measurer = devices.measurers[0].get();
  env.pool = devices.pool.get();
  env.target = machine.target;
  env.gpu = devices.gpu;
  env.cpu = machine.cpu;
  env.device = identity;
  env.workload = workload.name;
  JointSearch search(workload, ops, env, options,
                     [&machine](const OpSpec& op) { return machine.spaces_for(op); });
  if (search.searches().empty()) {  // --kernels, and none of them computes any op
    print_notes(notes, global.quiet);
    print_notes(search.notes(), global.quiet);
    std::string names;
    for (const OpSpec* op : ops) names += (names.empty() ? "" : ", ") + op->name;
    throw UserError(fmt::format("dietcode tune: no kernel listed in {} can compute any op to tune "
                                "({}); nothing to time",
                                o.kernels, names));
  }

  if (o.fresh) {
    const std::string moved = move_log_aside(log_path);
    if (!moved.empty())
      notes.push_back(fmt::format("{}: moved the old log aside to {}", log_path, moved));
  }
  ResumeState resume = read_log_for_resume(log_path, workload.name, identity);
  notes.insert(notes.end(), resume.notes.begin(), resume.notes.end());

  FILE* progress_out = o.json ? stderr : stdout;
  if (!global.quiet) {
    const std::string on = devices.ordinals.size() == 1
                               ? identity.name
                               : fmt::format("{} x {}", devices.ordinals.size(), identity.name);
    const std::string where = machine.where.empty() ? "" : ", " + machine.where;
    const size_t tuned = search.searches().size();
    std::fprintf(progress_out, "tuning %s (%zu op%s) on %s (%s%s, %s)%s\n",
                 workload.name.c_str(), tuned, tuned == 1 ? "" : "s", on.c_str(),
                 identity.arch.c_str(), where.c_str(), machine.regime.c_str(),
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
  search.set_log(&writer);
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
    try {
      result = search.run();
    } catch (const EnvironmentError& e) {
      // One GPU's error is its own message, as it always was; the pool's names the GPUs.
      if (!devices.pool) throw;
      throw EnvironmentError(std::string("dietcode tune: ") + e.what());
    }
  }
  writer.sync();

  if (devices.pool && !global.quiet) print_device_shares(*devices.pool, progress_out);
  if (o.json) {
    nlohmann::ordered_json summary = summary_json(result, workload, identity, log_path, o.seed);
    summary["device"]["ordinals"] = devices.ordinals;
    std::printf("%s\n", summary.dump(2).c_str());
  } else if (!global.quiet) {
    std::printf("%s", summary_text(result, identity).c_str());
  }
  if (std::string why = nothing_passed(result, identity, log_path); !why.empty())
    throw EnvironmentError(why);
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
  auto* trials = cmd->add_option(
      "--trials", o->trials,
      "Micro-kernels to compile and measure per op, counting those already in the log (a "
      "resumed run does the rest); with --time-budget and no --trials, the budget decides");
  trials->capture_default_str();
  cmd->add_option("--time-budget", o->time_budget,
                  "Wall time for the whole run, all ops together: 90s, 10m, 1h30m. The rounds "
                  "stop early enough for the end (timing the chosen kernels on every shape, the "
                  "cost model's held-out evaluation) to fit");
  auto* device =
      cmd->add_option("--device", o->device, "CUDA device ordinal to tune on (--devices N)")
          ->capture_default_str();
  auto* devices = cmd->add_option(
      "--devices", o->devices,
      "Tune on several GPUs of this host at once: ordinals (0,1,3) or \"all\", all of one "
      "model. Kernels are compiled once and measured on whichever GPU is free; the log is the "
      "same as with one GPU");
  auto* jobs = cmd->add_option("--jobs", o->jobs,
                               "Parallel compiles, NVRTC or C++ (default: one per core)");
  cmd->add_option("--target", o->target,
                  "cuda (default): tune on the GPU; cpu: tune the x86-64 templates on this "
                  "host's cores, compiled by the system C++ compiler")
      ->check(CLI::IsMember({"cuda", "cpu"}))
      ->capture_default_str();
  auto* threads = cmd->add_option(
      "--threads", o->threads, "--target cpu: threads a kernel runs on (default: all cores)");
  cmd->add_option("--cxx", o->cxx,
                  "--target cpu: the C++ compiler (default: $CXX, else g++, else clang++)");
  cmd->add_option("--arch", o->arch,
                  "--target cpu: tune only kernels of this x86-64 level and below, e.g. "
                  "x86-64-v3 on an AVX-512 host for servers with AVX2 alone (default: this "
                  "CPU's level)");
  cmd->add_flag("--constant-weights", o->constant_weights,
                "--target cpu: time kernels as a pack runs weights declared constant "
                "(dietcode_declare_constant): packed once, outside the timing. Recorded in every "
                "log record; a resumed run uses only records of its own regime");
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
  cmd->add_option("--l2", o->l2,
                  "flush (default): the L2 is flushed before every timed launch, as bench does; "
                  "warm: not flushed. Recorded in every log record; a resumed run uses only "
                  "records of its own regime")
      ->check(CLI::IsMember({"flush", "warm"}))
      ->capture_default_str();
  cmd->add_option("--runoff", o->runoff,
                  "At the end, time each instance's N fastest kernels (those within 25% of its "
                  "best) again, all of an op's together, and let those times decide the "
                  "instance: a same-time comparison, free of the rounds' luck. Logged as "
                  "\"runoff\" records; 0: off")
      ->capture_default_str();
  cmd->add_option("--restarts", o->restarts,
                  "An op whose rounds stop improving while trials and time are left starts "
                  "afresh up to N times (the next round explores as the first did) before it "
                  "stops; 0: stop at the first stall")
      ->capture_default_str();
  cmd->add_option("--objective", o->objective,
                  "What the search minimises per op: time (default), the weighted mean latency, "
                  "what a server spends as the weights spread the calls; geomean, the weighted "
                  "geometric mean of the latencies, every instance's relative speed alike, as "
                  "bench's geometric-mean speedup counts it")
      ->check(CLI::IsMember({"time", "geomean"}))
      ->capture_default_str();
  cmd->add_option("--kernels", o->kernels,
                  "Time exactly these micro-kernels, on every op they can compute and all its "
                  "shapes, instead of searching (an A/B of two variants, a hand-picked tile): a "
                  "JSON array of log-record \"mk\" objects, [{\"template\": \"dense_f32\", "
                  "\"params\": {\"TM\": 8}}], tunables left out at their defaults; or a "
                  "tuning log (a name ending in .jsonl or .jsonl.gz), whose kernels are timed "
                  "here. Kernels an op cannot run are skipped, with the reason. Not with "
                  "--trials");
  cmd->add_option("--shard", o->shard,
                  "Tune only share I of N (1 <= I <= N) for a cluster job array; default log: "
                  "NAME.shard-I-of-N.jsonl. Combine the logs with 'dietcode merge'");
  cmd->footer(
      "Examples:\n"
      "  dietcode tune configs/workloads/bert_base_dense.json\n"
      "  dietcode tune configs/workloads/bert_base_dense.json --simulate h100 --trials 32\n"
      "  dietcode tune w.json -o w.jsonl --time-budget 10m --ops qkv,fc1\n"
      "  dietcode tune w.json --devices all              (every GPU of this host)\n"
      "  dietcode tune w.json --target cpu --time-budget 10m   (this host's CPU)\n"
      "  dietcode tune w.json --ops qkv,fc2 --kernels ab.json -o ab.jsonl   (an A/B)\n"
      "  dietcode tune w.json --shard 3/8 -o w.3.jsonl   (one of 8 cluster jobs)\n"
      "  dietcode merge w.*.jsonl -o w.jsonl            (when all 8 are done)\n"
      "The log is the state: run the same command again to resume a stopped run; records of\n"
      "other GPUs in the log are ignored. Exit 1 for bad input, 2 when there is no GPU (use\n"
      "--simulate GPU to run against a model of one).\n");
  cmd->callback([o, trials, noise, jobs, device, devices, threads, &global, &action] {
    o->threads_given = threads->count() > 0;
    o->trials_given = trials->count() > 0;
    o->noise_given = noise->count() > 0;
    o->device_given = device->count() > 0;
    o->devices_given = devices->count() > 0;
    o->jobs_given = jobs->count() > 0;
    action = [o, &global] { return run_tune(*o, global); };
  });
}

}  // namespace dietcode::cli
