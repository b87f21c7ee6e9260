// `dietcode tune` without the command line: one joint search per op over all of its shape
// instances (op_search.h), the ops interleaved round by round so a time budget, or a run killed
// at any moment, leaves every op with kernels rather than a few ops with all of them.
//
// A guided tour:
//   JointSearchOptions (search_options.h)  budgets and knobs, and why the defaults fit a real
//                                          H100 run of BERT-base in well under 10 minutes
//   InstanceTable                          an op's instances, weights and priorities
//   KernelBook                             what is known per micro-kernel and instance
//   OpCostModel                            the cost model fed from the book, and from the
//                                          other ops' books (a kernel's f_MK is its own)
//   propose_candidates / select_round      where candidates come from, which ones a round takes
//   compile_candidates                     parallel NVRTC through the kernel cache
//   OpSearch                               one op's rounds, the log as its state
//   evaluate_held_out                      the cost model's quality on held-out kernels
//   JointSearch                            all ops, the deadline, progress, the outcome
//
// Determinism: for a seed, and a Measurer that is a function of its input (the simulated
// device), the log's content is the same on every run apart from timestamps, unless the
// time budget cuts the run short; measuring on several devices at once (SearchEnvironment::
// pool) changes only when results arrive, never the log, whose lines are committed in job
// order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "search/op_search.h"
#include "search/tuning_log.h"

namespace dietcode {

// Sent to an observer as the search goes: after every measured batch and every round, and
// when an op finishes.
struct SearchProgress {
  enum class Kind { kBatch, kRound, kOpDone };
  Kind kind = Kind::kBatch;
  const OpSearch* op = nullptr;
  RoundReport round;        // for kRound
  int trials_done = 0;      // all ops
  int trials_total = 0;     // all ops' budgets
  int trials_at_start = 0;  // trials_done when this run started (from the log)
  double elapsed_seconds = 0;
  double time_limit_seconds = 0;  // 0: none
};

struct OpOutcome {
  std::string op;
  size_t instances = 0;
  int trials = 0;  // kernels tried, the log's included
  OpSearchStats stats;
  StopReason stop = StopReason::kNone;
  std::vector<std::map<std::string, int64_t>> shapes;  // per instance
  std::vector<double> weights;                         // per instance, normalised
  std::vector<double> flops;                           // per instance
  std::vector<InstanceChoice> assignment;              // per instance, into `kernels`
  std::vector<MicroKernel> kernels;                    // by book index
  double weighted_mean_us = 0;                         // +infinity when some instance has no kernel
  double tflops = 0;
  int kernels_used = 0;  // distinct kernels in the assignment
  CostModelQuality quality;
  RoundReport runoff;  // runoff == 0: none ran
};

struct JointSearchResult {
  std::vector<OpOutcome> ops;
  double wall_seconds = 0;
  bool out_of_time = false;
};

class JointSearch {
 public:
  // Ops are searched in the order given. Each op's templates come from `spaces_for`, by
  // default template_spaces_for (every template that can compute it). With listed kernels
  // (JointSearchOptions::listed_kernels), an op none of them can compute is left out, and
  // notes() says so and why each listed kernel an op cannot time was skipped.
  using SpacesFor = std::function<std::vector<const TemplateSpace*>(const OpSpec&)>;
  JointSearch(const Workload& workload, std::vector<const OpSpec*> ops, SearchEnvironment env,
              JointSearchOptions options, SpacesFor spaces_for = {});
  ~JointSearch();

  void set_observer(std::function<void(const SearchProgress&)> observer) {
    observer_ = std::move(observer);
  }

  // Where every op's records go from now on (OpSearch::set_log).
  void set_log(TuningLogWriter* log);

  // Warm start from earlier records (already filtered to this workload and device).
  void resume_from(const std::vector<const TuningRecord*>& records);
  // What construction and resume_from found worth saying (listed kernels skipped, records
  // not used, and why).
  const std::vector<std::string>& notes() const { return notes_; }

  JointSearchResult run();

  const std::vector<std::unique_ptr<OpSearch>>& searches() const { return searches_; }

 private:
  void notify(SearchProgress::Kind kind, const OpSearch& op, const RoundReport* round,
              const Deadline& deadline) const;
  int trials_done() const;
  // The kernel serving most of each other op's weighted time now, given to the op at
  // `position` for its next round (OpSearch::borrow): one op's winner is often another's,
  // since the kernels are shape-generic and the ops of a model share their extents.
  std::vector<MicroKernel> kernels_of_other_ops(size_t position) const;
  // Makes every op's model learn from the other ops' measurements, those already in their
  // books (a resumed log's) and those to come.
  void share_measurements();
  // How many new kernels the op at `position` may compile in its round: its share of the time
  // left at the rate kernels were compiled and timed so far (one wave of parallel compiles
  // before there is a rate); INT_MAX without a time budget.
  int round_cap(const Deadline& deadline, size_t position) const;
  // The seconds of `deadline` left for the op at `position` in this pass; infinite without a
  // time budget.
  double round_share_seconds(const Deadline& deadline, size_t position) const;
  // What the ops' ends will take, all together (OpSearch::end_seconds).
  double end_seconds() const;
  OpOutcome outcome(OpSearch& search) const;

  const Workload* workload_;
  JointSearchOptions options_;
  std::vector<std::unique_ptr<OpSearch>> searches_;
  std::vector<std::string> notes_;
  std::function<void(const SearchProgress&)> observer_;
  int trials_at_start_ = 0;
};

}  // namespace dietcode
