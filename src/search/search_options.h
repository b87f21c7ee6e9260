// The knobs of the joint search (joint_search.h), with defaults sized for a real GPU.
//
// Why these defaults. The flagship run is bert_base_dense on an H100 host: 4 ops x 128 shape
// instances, and it must finish within 10 minutes of wall time. What a trial costs there:
//   compile   0.15-0.5 s of NVRTC per kernel and core; 16 cores compile a round of 16 kernels
//             in one wave, so 96 kernels per op cost 6 waves x ~0.5 s ≈ 3 s per op;
//   measure   3 warm-up + 10 timed launches of 10-100 us on each of 128 instances: 17-170 ms
//             per kernel, 2-16 s for 96 kernels;
//   model     a retrain per round (a few hundred ms of XGBoost and analytic fitting).
// 4 ops x 96 trials is then ~1-2 minutes typically and under 4 minutes in the worst case (2
// cores at 0.5 s per compile: 384 x 0.25 s ≈ 96 s of compiling, plus 64 s of launches), with
// room to spare under 10 minutes. 96 trials per op is ~10x fewer than DietCode's 1000, which
// is affordable because every compiled kernel is timed on every instance (METHOD.md §4), so
// each trial labels the cost model 128 times instead of once.
//
// A round selects 16 kernels: one compile wave on a 16-core host, and 6 retrains per op at
// the default budget, enough for the learned f_MK to take over from the prior (it needs 16
// distinct kernels) after the first round. 20% of a round is drawn at random among the
// candidates (epsilon-greedy), so the model also sees kernels it does not yet believe in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/kernel_list.h"
#include "search/objective.h"

namespace dietcode {

struct SearchBudget {
  // Micro-kernels per op that go through the compiler (and are measured unless rejected),
  // counting those an earlier run left in the log: a resumed run does the rest.
  int trials_per_op = 96;
  // Wall seconds for the whole run, all ops together; 0 means no limit.
  double time_budget_seconds = 0;
  // An op stops early after this many rounds in a row that improve its objective (its
  // weighted-mean latency, or their weighted geometric mean) by less than min_improvement
  // (relative).
  int patience_rounds = 4;
  double min_improvement = 0.002;
  // An op that stalls with trials and time left starts afresh this many times before it stops:
  // its population (the mutations' parents among the unmeasured) is dropped and its next round
  // draws first_round_exploration of its kernels at random, so that what the budget has left
  // goes to kernels unlike those the search kept refining, and to the cost model's view of
  // them. A fresh start that gains nothing within patience rounds stops the op as before.
  int restarts = 1;
};

struct JointSearchOptions {
  SearchBudget budget;
  // What a round's selection, the mutations' targets and the early stop go by (objective.h).
  SearchObjective objective = SearchObjective::kWeightedTime;

  int kernels_per_round = 16;  // compiled and measured per round and op
  double exploration = 0.2;    // share of a round drawn at random (epsilon)
  // The first round has only the analytic prior to go by: explore more.
  double first_round_exploration = 0.5;

  int random_samples = 192;  // fresh uniform samples of the space per round
  int children = 256;        // mutants per round
  int population = 64;       // best unmeasured candidates carried to the next round
  int max_mutation_steps = 3;

  // A compiled kernel is timed on every instance when an op has at most this many; beyond,
  // on a sample: half where it is predicted to gain most, half drawn by priority.
  size_t max_instances_per_kernel = 256;
  // Where kernels were timed on a sample: at the end, the kernels serving most of each op's
  // time, at most this many (a pack keeps 8 per op by default), are timed on every instance
  // they lack, so that `build` fits its decision tree to measurements on every instance. It
  // runs after the time budget's rounds, and costs about `complete_kernels` full passes over
  // the op's instances. 0: off.
  int complete_kernels = 8;
  // The runoff (runoff.h), after the completion: per instance, at most this many kernels
  // within runoff_margin of its best are timed again, all of the op's in one measurement, and
  // decide the instance. Costs about runoff_finalists passes over the op's instances with
  // its faster kernels. 0: off. The margin is wide because the best time it is measured from
  // is itself the lucky one: a kernel that is truly as fast can read 20% slower.
  int runoff_finalists = 4;
  double runoff_margin = 0.25;
  // How much slower than timed a pack counts a kernel when it chooses what serves an instance
  // (PackTarget::portable_kernel_margin: on a CPU, an AVX2 kernel beside AVX-512 ones counts
  // 10% slower). The runoff's finalists are chosen by the times so weighed, so that its places
  // go to the kernels a pack would serve, not to ones it would pass over for a kernel just
  // outside the field. Unset: every kernel as timed. Only ratios between kernels matter: a
  // factor every kernel shares changes nothing.
  std::function<double(const MicroKernel&)> serving_factor;
  // Kernels per Measurer::measure() call: enough to interleave a few candidates on a real
  // GPU, few enough that a killed run loses little (results are logged per call). On several
  // GPUs a call is one job, smaller when there are more GPUs than jobs (op_search.cc).
  int measure_batch = 4;

  int jobs = 0;       // parallel compiles; 0: one per core
  uint64_t seed = 0;  // the only source of randomness

  // Cost-model quality at the end of an op: held-out share of the measured kernels.
  double holdout_fraction = 0.2;
  double regret_tolerance = 0.05;  // "top-1 within 5% of the measured best"

  // A cluster shard's share (search/shard.h): only instances [first, second) of the named op,
  // in expand_instances order. An op not named here is searched over all its instances.
  std::map<std::string, std::pair<size_t, size_t>> instance_ranges;

  // tune --kernels (kernel_list.h): when set, an op times exactly these kernels, those its
  // templates hold and its constraints allow, each as a round's candidate is timed, and stops
  // ("listed kernels measured"): no model-guided round follows, and trials_per_op, patience
  // and exploration play no part. The completion and the runoff still run. Unset: the search
  // chooses.
  std::optional<std::vector<ListedKernel>> listed_kernels;
};

}  // namespace dietcode
