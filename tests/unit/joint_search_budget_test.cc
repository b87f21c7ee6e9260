// The joint search's budgets on the simulated device with a stand-in compiler (test doubles):
// a time budget bounds the whole run, end included, is shared among the ops and sizes each
// round by what its kernels cost to time; rounds that stop improving stop an op or start it
// afresh while trials are left.
#include "joint_search_fixture.h"

namespace dietcode {
namespace {

// On a GPU the end of a 4-minute tune (completing the kernels in use, the held-out
// evaluations) ran past the budget by over a minute. The rounds now stop early enough for it.
TEST_F(JointSearchTest, TimeBudgetBoundsTheWholeRunEndIncluded) {
  workload_ = cross_product_workload();  // 192 instances, kernels timed on 48 of them
  CountingDevice device(h100());
  device.per_instance = std::chrono::microseconds(1000);  // 48 ms per kernel's sample
  JointSearchOptions options;
  options.jobs = 1;
  options.max_instances_per_kernel = 48;
  options.complete_kernels = 8;  // up to 8 x 144 ms at the end
  options.runoff_finalists = 0;  // the completion's reserve; the runoff's is tested below
  options.budget.time_budget_seconds = 2.0;
  JointSearchResult result = run(device, options);
  EXPECT_TRUE(result.out_of_time);
  const OpOutcome& op = result.ops[0];
  EXPECT_GT(op.trials, 4);
  EXPECT_GT(op.quality.folds, 0);  // the end ran: completion and evaluation
  // Without the reserve the run ended near 3.9 s (the end alone takes 1.5 s here); with it
  // 2.5 s: the end costs more than it is estimated to before the last round.
  EXPECT_LT(result.wall_seconds, 2.8) << "trials " << op.trials;
}


TEST_F(JointSearchTest, TimeBudgetSharesTheTimeAmongOpsAndMeasuresWhatItCompiled) {
  workload_ = three_dense_ops();
  compiler_.delay = std::chrono::milliseconds(20);
  CountingDevice device(h100());
  JointSearchOptions options;
  options.jobs = 1;
  // A 16-kernel round would take 0.32 s. Two seconds, not one: on a 2-core machine running
  // other tests beside this one, a 1 s budget once left the third op no share at all.
  options.budget.time_budget_seconds = 2.0;
  JointSearchResult result = run_every_op(device, options);
  EXPECT_TRUE(result.out_of_time);
  EXPECT_LT(result.wall_seconds, 4.0);  // the budget, one round over at most, and slack
  int compiled = 0, measured = 0, runoff = 0;
  for (const OpOutcome& op : result.ops) {
    EXPECT_EQ(op.stop, StopReason::kTime) << op.op;
    EXPECT_GT(op.trials, 0) << op.op << " got no share of the time";
    EXPECT_TRUE(std::isfinite(op.weighted_mean_us)) << op.op;
    compiled += op.stats.compiled;
    measured += op.stats.measured_kernels;
    runoff += op.runoff.runoff_kernels;  // timed again at the end
  }
  EXPECT_EQ(measured, compiled);  // nothing compiled went unmeasured
  EXPECT_EQ(measured + runoff, device.inputs_measured);
}

// On a CPU a kernel's timing costs its own run time a few times over, so an op of large
// shapes (here `large`, 576 times `small`'s FLOPs) costs more a kernel than the run's average, and
// a round of slow kernels (a fresh start's exploring) more than the op's. A 15-minute tune of
// BERT on 2 cores ended 14 s past its budget that way: its last round was sized by the average.
// Each round is now sized by what its own kernels are predicted to cost to time.
TEST_F(JointSearchTest, TimeBudgetSizesTheLastRoundByWhatItsKernelsCostToTime) {
  workload_ = parse_workload(R"({
    "name": "uneven",
    "shape_vars": { "T": { "min": 1, "max": 8 } },
    "ops": [
      { "name": "large", "op": "dense", "dtype": "float32", "M": "64*T", "N": 3072, "K": 3072 },
      { "name": "small", "op": "dense", "dtype": "float32", "M": "16*T", "N": 256, "K": 256 }
    ]
  })",
                             "uneven.json");
  CountingDevice device(h100());
  device.wall_per_latency = 100;  // 100 us of wall per microsecond the device reports
  JointSearchOptions options;
  options.jobs = 1;
  options.runoff_finalists = 0;
  options.budget.time_budget_seconds = 3.0;
  options.budget.patience_rounds = 0;
  JointSearchResult result = run_every_op(device, options);
  EXPECT_TRUE(result.out_of_time);
  int trials = 0;
  for (const OpOutcome& op : result.ops) trials += op.trials;
  EXPECT_GT(trials, 12);
  for (const OpOutcome& op : result.ops) EXPECT_GT(op.trials, 8) << op.op << " got too little";
  // Sized by the run's average kernel, large's rounds ended 0.41-0.47 s past the budget here
  // and left small one round; sized by their own kernels, the run ends at 2.99-3.04 s.
  EXPECT_LT(result.wall_seconds, 3.0 + 0.25) << "trials " << trials;
}

TEST_F(JointSearchTest, StopsEarlyWhenRoundsStopImproving) {
  CountingDevice device(h100());
  JointSearchOptions options;
  options.budget.trials_per_op = 96;
  options.budget.patience_rounds = 1;
  options.budget.min_improvement = 0.99;  // no round can lower the mean by 99%
  options.budget.restarts = 0;
  JointSearchResult result = run(device, options);
  EXPECT_EQ(result.ops[0].stop, StopReason::kNoImprovement);
  EXPECT_EQ(result.ops[0].stats.rounds, 2);
  EXPECT_EQ(result.ops[0].stats.restarts, 0);
  EXPECT_EQ(result.ops[0].trials, 32);
}

// A stall with budget left is a fresh start, as many times as allowed; each costs patience
// rounds more before the op stops for good.
TEST_F(JointSearchTest, AStalledOpWithBudgetLeftStartsAfreshBeforeItStops) {
  for (int restarts : {1, 2}) {
    CountingDevice device(h100());
    JointSearchOptions options;
    options.budget.trials_per_op = 96;
    options.budget.patience_rounds = 1;
    options.budget.min_improvement = 0.99;
    options.budget.restarts = restarts;
    std::vector<int> restarting_rounds;
    JointSearch search(workload_, {&workload_.ops[0]}, environment(device, nullptr, nullptr),
                       options,
                       [this](const OpSpec&) { return std::vector<const TemplateSpace*>{&space_}; });
    search.set_observer([&](const SearchProgress& p) {
      if (p.kind == SearchProgress::Kind::kRound && p.round.restarting)
        restarting_rounds.push_back(p.round.round);
    });
    JointSearchResult result = search.run();
    EXPECT_EQ(result.ops[0].stop, StopReason::kNoImprovement) << restarts;
    EXPECT_EQ(result.ops[0].stats.restarts, restarts);
    EXPECT_EQ(result.ops[0].stats.rounds, 2 + restarts);
    EXPECT_EQ(result.ops[0].trials, 16 * (2 + restarts));
    std::vector<int> expected;
    for (int r = 0; r < restarts; ++r) expected.push_back(2 + r);
    EXPECT_EQ(restarting_rounds, expected) << restarts;
  }
}

// No fresh start without trials to spend on it: the op stops where the budget ends.
TEST_F(JointSearchTest, AStallThatSpentTheTrialsStopsWithoutARestart) {
  CountingDevice device(h100());
  JointSearchOptions options;
  options.budget.trials_per_op = 32;
  options.budget.patience_rounds = 1;
  options.budget.min_improvement = 0.99;
  options.budget.restarts = 3;
  JointSearchResult result = run(device, options);
  EXPECT_EQ(result.ops[0].stats.restarts, 0);
  EXPECT_EQ(result.ops[0].stats.rounds, 2);
  EXPECT_EQ(result.ops[0].trials, 32);
}

}  // namespace
}  // namespace dietcode
