// The search of one op over all its shape instances (METHOD.md §4), one round at a time:
//
//   propose   population + the kernels serving the workload's other ops + mutants retargeted
//             at costly instances + fresh samples (evolution.h)
//   score     the cost model predicts every candidate on every instance; the round takes the
//             candidates that would lower the op's weighted latency most, plus a few random
//             ones (candidate_selection.h); a kernel tried before (in this run or in the log)
//             is never proposed again
//   compile   in parallel through the kernel cache; failures and spills are recorded
//             (compile_step.h); a binary seen before is skipped
//   measure   each compiled kernel on many instances at once (all of them for up to
//             max_instances_per_kernel), in jobs of measure_batch kernels, on one GPU or on
//             several at once (measure_pool.h); every job's results go to the log as soon as
//             every earlier job's have, so the log's order never depends on timing
//   learn     the measurements feed the cost model, which is retrained for the next round.
//
// The log is the state: resume_from() rebuilds the book and warm-starts the model from earlier
// records, kernels a killed run measured on only some instances are completed first, and
// pairs already in the log are never measured again.
//
// With a list of kernels to time (tune --kernels, JointSearchOptions::listed_kernels), propose
// and score give way to the list: a round takes its next kernels that this op's spaces accept,
// and compiles, measures and learns from them as above; the op stops when the list is done.
#pragma once

#include <climits>
#include <cmath>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "measure/measurer.h"
#include "nvrtc/compiler.h"
#include "search/budget.h"
#include "search/compile_step.h"
#include "search/evolution.h"
#include "search/instance_table.h"
#include "search/kernel_book.h"
#include "search/model_quality.h"
#include "search/round_cost.h"
#include "search/op_cost_model.h"
#include "search/search_options.h"
#include "search/tuning_log.h"
#include "space/machine_spec.h"
#include "space/space.h"

namespace dietcode {

class MeasurePool;  // measure/measure_pool.h

// What the search compiles with, measures on and writes to; nothing here is owned.
struct SearchEnvironment {
  Compiler* compiler = nullptr;
  Measurer* measurer = nullptr;
  // Several GPUs of one host (measure_pool.h): when set, a round's jobs are measured there,
  // and committed in job order, instead of one after another on `measurer`. Either way the
  // log gets the same lines in the same order.
  MeasurePool* pool = nullptr;
  TuningLogWriter* log = nullptr;  // null: results are kept in memory only
  // The target measured on (its templates are the ones searched) and its figures: the GPU's
  // limits, or the CPU's caches, threads and peak.
  Target target = Target::kCuda;
  GpuSpec gpu;  // the limits of the GPU measured on
  CpuSpec cpu;  // the CPU measured on
  DeviceIdentity device;
  std::string workload;  // the workload's name, for records
  CostModelParams cost_model;

  MachineSpec machine() const {
    MachineSpec m = target == Target::kCpu ? MachineSpec::of_cpu(cpu) : MachineSpec(gpu);
    m.gpu = gpu;
    return m;
  }
};

struct OpSearchStats {
  int rounds = 0;
  int restarts = 0;            // fresh starts after stalled rounds (SearchBudget::restarts)
  int resumed_kernels = 0;     // kernels the log already had
  size_t resumed_records = 0;  // their records
  int compiled = 0;            // kernels through the compiler in this run
  int compile_errors = 0;
  int over_limits = 0;         // spills or registers / shared memory beyond the GPU's
  int duplicates = 0;          // same binary as another kernel
  int measured_kernels = 0;    // kernels timed in this run
  int failed_kernels = 0;      // launch errors, timeouts, wrong results
  size_t measurements = 0;     // (kernel, instance) latencies from this run
  double compile_seconds = 0;  // wall time of the parallel compiles
  double nvrtc_seconds = 0;    // summed over compiles (cache hits cost none)
  int cache_hits = 0;
  double measure_seconds = 0;  // wall time inside the measurer
  double model_seconds = 0;    // retraining and scoring
};

struct RoundReport {
  int round = 0;
  int selected = 0;   // new candidates sent to the compiler
  int completed = 0;  // kernels completed on missing instances (from the log, or at the end)
  bool final_completion = false;  // complete_kernels_in_use's report, not a round's
  // The runoff's report (runoff.h), not a round's: its number in the op's log, the kernels
  // and (kernel, instance) pairs it timed, and the op's weighted mean before it.
  int runoff = 0;
  int runoff_kernels = 0;
  size_t runoff_pairs = 0;
  double weighted_mean_before_us = 0;
  int rejected = 0;   // compile errors and kernels over the limits
  int duplicates = 0;
  int measured = 0;             // kernels timed
  int failed = 0;               // kernels whose measurement failed
  double weighted_mean_us = 0;  // of the op's assignment after the round
  // The rounds had stalled with budget left: the op starts afresh next round instead of
  // stopping (SearchBudget::restarts).
  bool restarting = false;
  // Picks left out because the round, priced by round_cost.h, would have outlasted the
  // caller's share of the time.
  int cut_for_time = 0;
};

// The kernel an instance gets, and how its latency is known.
struct InstanceChoice {
  int kernel = -1;  // index into the book; -1 when no kernel ever ran
  double latency_us = 0;
  bool measured = false;  // false: predicted (the instance was not measured with any kernel)
};

class OpSearch {
 public:
  // spaces: the templates that compute the op (template_spaces_for, or a test's own).
  OpSearch(const Workload& workload, const OpSpec& op, const SearchEnvironment& env,
           const JointSearchOptions& options, std::vector<const TemplateSpace*> spaces);
  ~OpSearch();
  OpSearch(const OpSearch&) = delete;  // spaces_ refer to env_.gpu and *op_
  OpSearch& operator=(const OpSearch&) = delete;

  // tune --kernels (JointSearchOptions::listed_kernels): whether this op times a list rather
  // than searching; the listed kernels it times, in the list's order; and one line for each
  // listed kernel it cannot time, saying why ("qkv: ab.json[1] (dense_f32) skipped: ...").
  bool times_listed_kernels() const { return options_.listed_kernels.has_value(); }
  const std::vector<MicroKernel>& listed_kernels() const { return listed_; }
  const std::vector<std::string>& listed_kernels_skipped() const { return listed_skipped_; }

  // Where records go from now on (null: nowhere). `tune` sets it once the search is known to
  // have work, so that a run refused early leaves no log behind.
  void set_log(TuningLogWriter* log) { env_.log = log; }

  // Warm start from earlier records of this op on this device. Records whose instance or GEMM
  // no longer matches the workload, or whose micro-kernel no template can generate, are not
  // used; `notes` says how many and why.
  void resume_from(const std::vector<const TuningRecord*>& records,
                   std::vector<std::string>& notes);

  // One round of at most max_new_kernels new candidates, and no more than its predicted cost
  // lets fit in seconds_share (the caller's share of the time left; round_cost.h); a round
  // that no kernel fits in is not started, and the op stops for time. Every kernel the round
  // compiles is measured. on_batch is called after every measured batch (progress displays).
  RoundReport run_round(const Deadline& deadline, int max_new_kernels = INT_MAX,
                        const std::function<void()>& on_batch = {},
                        double seconds_share = INFINITY);

  // When kernels were timed on a sample of the instances (max_instances_per_kernel), times
  // the kernels serving most of the op's time (at most max_kernels of them) on every instance
  // they lack, so the assignment, and the pack's decision tree after it, rest on measurements
  // everywhere rather than on a sample and predictions. Nothing to do when every kernel was
  // timed on every instance.
  RoundReport complete_kernels_in_use(int max_kernels, const std::function<void()>& on_batch = {});

  // The runoff (search/runoff.h): at the end, each instance's finalists (at most
  // options.runoff_finalists kernels within options.runoff_margin of its best) timed again,
  // all in one measurement, and the instances settled by those times. Nothing to do when
  // runoff_finalists is 0 or no kernel was timed.
  RoundReport runoff(const std::function<void()>& on_batch = {});

  // Kernels serving the workload's other ops best. The next round times those this op's
  // spaces hold and it has not tried, ahead of what its own model selects: a model trained on
  // this op's kernels alone has no reason to believe in a tile that wins elsewhere.
  void borrow(std::vector<MicroKernel> kernels) { borrowed_ = std::move(kernels); }
  // The workload's other ops, whose measurements this op's model learns from (OpCostModel::
  // learn_peer): what they measured so far now, what they measure later as they record it.
  // The peers must outlive this search; JointSearch owns them all.
  void learn_from_peers(std::vector<OpSearch*> peers);
  // The distinct kernels of this op's assignment, best-served weight first.
  std::vector<MicroKernel> kernels_in_use() const;

  bool finished() const { return stop_ != StopReason::kNone; }
  StopReason stop_reason() const { return stop_; }
  void stop(StopReason reason) {
    if (stop_ == StopReason::kNone) stop_ = reason;
  }

  // Cost-model quality on held-out kernels, written to the log when there is one.
  const CostModelQuality& evaluate_quality();
  // Seconds this op's end is expected to take once its rounds stop: timing the kernels in use
  // on the instances they lack (complete_kernels_in_use), the runoff and evaluate_quality's
  // trainings,
  // estimated from this run's own measuring rate and its model's last training time. A time
  // budget holds this much back for it.
  double end_seconds() const;

  const OpSpec& op() const { return *op_; }
  const InstanceTable& table() const { return table_; }
  const KernelBook& book() const { return book_; }
  const OpSearchStats& stats() const { return stats_; }
  const CostModelQuality& quality() const { return quality_; }
  // This run's runoff (runoff == 0 when none ran).
  const RoundReport& runoff_report() const { return runoff_report_; }
  // Kernels tried, the log's included, against the op's trial budget; of a list
  // (times_listed_kernels), the listed kernels tried against how many it lists for this op.
  int trials() const;
  int trial_budget() const;

  // Every instance's kernel: its best measured one, else the measured kernel predicted best.
  std::vector<InstanceChoice> assignment() const;
  double weighted_mean_us() const;
  // The assignment's weighted mean latency, or under kWeightedLogTime its weighted geometric
  // mean: what the early stop watches.
  double objective_value_us() const;

 private:
  struct Incumbent {
    std::vector<double> latency;
    std::vector<int> kernel;
  };
  Incumbent incumbent() const;
  const LaunchPlan& plan_of(const MicroKernel& mk);
  // The runoff's field as the book stands: book index -> the instances it is a finalist of.
  std::map<size_t, std::vector<size_t>> runoff_field() const;
  std::vector<size_t> instances_for(const KernelEntry* entry, const double* predicted_row,
                                    const std::vector<double>& incumbent);
  // Appends the result's records to the log and learns from them; indices are the table
  // indices of input.instances. runoff > 0: times of that runoff, which settle their instances
  // in the book and are not learned (the model's labels are the rounds' times).
  void record(const MeasureInput& input, const std::vector<size_t>& indices,
              const MeasureResult& result, int runoff = 0);
  // Compiles through the kernel cache, adding to the compile stats (not to `compiled`, which
  // counts the rounds' kernels).
  std::vector<CompiledCandidate> compile(const std::vector<MicroKernel>& mks);
  // What the measurer gets for a compiled kernel on the given table instances (moves its
  // binary out of cc).
  MeasureInput measure_input(CompiledCandidate& cc, const std::vector<size_t>& which);
  // Compiles `chosen` (through the cache) and measures each on its instances: those
  // instances_for picks (predicted rows parallel to chosen, empty when none), or with
  // every_instance all it has no record on. Fills the report's rejected/duplicates/measured.
  void compile_and_measure(const std::vector<MicroKernel>& chosen,
                           const std::vector<std::vector<double>>& predicted,
                           const std::vector<double>& incumbent, bool every_instance,
                           RoundReport& report, const std::function<void()>& on_batch);
  // runoff > 0: the inputs are that runoff's, measured in a single job (runoff.h). Returns
  // the sum of the latencies measured over every (kernel, instance) pair.
  double measure_ready(const std::vector<MeasureInput>& inputs,
                     const std::vector<std::vector<size_t>>& indices, RoundReport& report,
                     const std::function<void()>& on_batch, int runoff = 0);

  const OpSpec* op_;
  SearchEnvironment env_;
  JointSearchOptions options_;
  InstanceTable table_;
  std::vector<const TemplateSpace*> templates_;  // spaces_ refer to these
  std::vector<SearchSpace> spaces_;
  KernelBook book_;
  std::unique_ptr<OpCostModel> model_;
  double last_retrain_seconds_ = 0;  // of model_, for end_seconds()
  RoundCostFit round_cost_;          // this op's rounds' wall time, for run_round's share
  // How many of picks (indices into predicted's candidates, rows of table_.size()) fit in
  // seconds_share with `already` kernels in the round besides.
  size_t picks_within(const std::vector<size_t>& picks, const std::vector<double>& predicted,
                      size_t already, double seconds_share) const;
  void retrain_model();
  // The rounds stalled with budget left: drop the population, explore as a first round does.
  void restart();
  std::vector<OpSearch*> peers_;  // told of every measurement this op records
  std::mt19937_64 rng_;
  std::map<std::string, LaunchPlan> plans_;
  std::set<std::string> tried_;       // keys compiled here or recorded in the log
  std::vector<MicroKernel> pending_;  // logged kernels missing some instances
  std::vector<PopulationMember> population_;
  std::vector<MicroKernel> borrowed_;  // from other ops, for the next round
  // tune --kernels: the listed kernels this op can time, the next one a round takes, and why
  // the others were left out.
  std::vector<MicroKernel> listed_;
  size_t next_listed_ = 0;
  std::vector<std::string> listed_skipped_;
  void choose_listed_kernels();
  // Up to `slots` listed kernels not tried yet, in the list's order.
  std::vector<MicroKernel> take_listed(int slots);
  // A round of them into chosen (with the model's predictions); returns how many.
  int choose_listed_round(int slots, std::vector<MicroKernel>& chosen,
                          std::vector<std::vector<double>>& chosen_predicted);
  BinarySet binaries_;
  ImprovementTracker tracker_;
  bool explore_afresh_ = false;  // the next round is a fresh start's (SearchBudget::restarts)
  StopReason stop_ = StopReason::kNone;
  OpSearchStats stats_;
  CostModelQuality quality_;
  RoundReport runoff_report_;
};

}  // namespace dietcode
