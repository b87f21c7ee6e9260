// The runoff at the end of an op's search (search/runoff.h) on the simulated device: it times
// each instance's finalists together and undoes their luck, picks them as a pack weighs its
// kernels, drops a finalist that fails, and fits within a time budget.
#include "joint_search_fixture.h"

namespace dietcode {
namespace {

// A device whose first timing of a third of the (kernel, instance) pairs is lucky, 15% fast, as
// the best of many noisy timings is: later timings of a pair give the model's value. A test
// double.
class LuckyDevice : public Measurer {
 public:
  explicit LuckyDevice(GpuSpec gpu) : device_(std::move(gpu)) {}
  DeviceIdentity device() const override { return device_.device(); }
  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) override {
    std::vector<MeasureResult> results = device_.measure(inputs);
    calls.push_back(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string key = inputs[i].mk.key();
      for (size_t j = 0; j < inputs[i].instances.size(); ++j) {
        true_us[{key, inputs[i].instances[j].values}] = results[i].latency_us[j];
        const std::vector<int64_t>& values = inputs[i].instances[j].values;
        if (++timed[{key, values}] == 1 && lucky(key, values)) results[i].latency_us[j] *= 0.85;
      }
    }
    return results;
  }
  static bool lucky(const std::string& key, const std::vector<int64_t>& values) {
    return std::hash<std::string>{}(key + "@" + std::to_string(values.at(0))) % 3 == 0;
  }
  std::map<std::pair<std::string, std::vector<int64_t>>, double> true_us;
  std::map<std::pair<std::string, std::vector<int64_t>>, int> timed;
  std::vector<size_t> calls;  // inputs per measure() call

 private:
  SimulatedDevice device_;
};

TEST_F(JointSearchTest, TheRunoffTimesTheFinalistsTogetherAndUndoesTheirLuck) {
  JointSearchOptions options;
  options.budget.trials_per_op = 48;
  options.budget.patience_rounds = 0;
  options.seed = 5;
  auto true_mean = [&](const OpOutcome& op, const LuckyDevice& d) {
    std::vector<double> us;
    for (size_t i = 0; i < op.assignment.size(); ++i)
      us.push_back(d.true_us.at({op.kernels[size_t(op.assignment[i].kernel)].key(),
                                 std::vector<int64_t>{op.shapes[i].at("T")}}));
    return InstanceTable(workload_, workload_.ops[0]).weighted_mean(us);
  };

  options.runoff_finalists = 0;
  LuckyDevice without(h100());
  const OpOutcome lucky = run(without, options, (dir_ / "without.jsonl").string()).ops[0];
  EXPECT_EQ(lucky.runoff.runoff, 0);
  // The rounds kept lucky timings: the figure they report is better than what runs.
  EXPECT_LT(lucky.weighted_mean_us, 0.95 * true_mean(lucky, without));

  options.runoff_finalists = 4;
  LuckyDevice with(h100());
  const std::string log = (dir_ / "with.jsonl").string();
  const OpOutcome settled = run(with, options, log).ops[0];
  ASSERT_EQ(settled.runoff.runoff, 1);
  EXPECT_GT(settled.runoff.runoff_kernels, 1);
  EXPECT_GE(settled.runoff.runoff_pairs, 32u);  // every instance, at least its best
  EXPECT_LE(settled.runoff.runoff_pairs, 4u * 32u);
  // One measurement, all finalists interleaved in it, after the rounds.
  EXPECT_EQ(with.calls.back(), size_t(settled.runoff.runoff_kernels));
  // Every instance's kernel was a finalist, and its figure is its own time now.
  EXPECT_NEAR(settled.weighted_mean_us, true_mean(settled, with), 1e-9 * settled.weighted_mean_us);
  // Same rounds as without (same seed, same timings), better choices: finalists that were
  // only lucky lost to the kernels that are faster.
  EXPECT_LT(true_mean(settled, with), true_mean(lucky, without));

  // The log says so, and `build` reads the same choice out of it.
  std::vector<std::string> warnings;
  const TuningLog parsed = read_tuning_log(log, warnings);
  size_t runoff_records = 0;
  for (const TuningRecord& r : parsed.records) runoff_records += r.runoff == 1;
  EXPECT_EQ(runoff_records, settled.runoff.runoff_pairs);
  OpChoices choices = make_log_choices(workload_, log, true, warnings)->choices(workload_, workload_.ops[0]);
  for (size_t i = 0; i < settled.assignment.size(); ++i) {
    const TreeSample& s = choices.samples.at(i);
    double best = INFINITY;
    for (double us : s.latency_us)
      if (!std::isnan(us)) best = std::min(best, us);
    const std::string chosen = settled.kernels[size_t(settled.assignment[i].kernel)].key();
    size_t k = 0;
    while (k < choices.candidates.size() && choices.candidates[k].key() != chosen) ++k;
    ASSERT_LT(k, choices.candidates.size()) << chosen;
    // Equal times are ties the two break their own ways; the time is what must agree.
    EXPECT_DOUBLE_EQ(s.latency_us[k], best) << "T=" << s.values[0];
    EXPECT_DOUBLE_EQ(s.latency_us[k], settled.assignment[i].latency_us) << "T=" << s.values[0];
  }

  // Deterministic, like the rounds: the same seed writes the same log, runoff included.
  LuckyDevice twin(h100());
  run(twin, options, (dir_ / "twin.jsonl").string());
  EXPECT_EQ(lines_without_timestamps((dir_ / "twin.jsonl").string()),
            lines_without_timestamps(log));

  // Running the finished tune again times nothing: the runoff stands.
  LuckyDevice again(h100());
  const OpOutcome same = run(again, options, log).ops[0];
  EXPECT_TRUE(again.calls.empty());
  EXPECT_EQ(same.runoff.runoff, 0);
  EXPECT_NEAR(same.weighted_mean_us, settled.weighted_mean_us, 1e-9 * settled.weighted_mean_us);

  // A longer budget times new kernels, then holds runoff 2 over the new field.
  options.budget.trials_per_op = 64;
  LuckyDevice more(h100());
  const OpOutcome grown = run(more, options, log).ops[0];
  EXPECT_EQ(grown.runoff.runoff, 2);
  EXPECT_EQ(grown.stats.measured_kernels, 16);  // the runoff's kernels are not counted again
}

// The runoff's places go to kernels a pack would serve: where `build` counts some kernels
// slower than timed (a CPU pack's AVX2 kernels beside AVX-512 ones), the finalists are chosen
// by the times so weighed. Here every kernel but the rounds' best of some instance counts
// twice its time: no such kernel is within the 25% margin of an instance's (weighed) best.
TEST_F(JointSearchTest, TheRunoffsFinalistsAreChosenAsAPackWeighsItsKernels) {
  JointSearchOptions options;
  options.budget.trials_per_op = 48;
  options.budget.patience_rounds = 0;
  options.seed = 5;
  options.runoff_finalists = 0;
  LuckyDevice rounds_only(h100());
  const OpOutcome rounds = run(rounds_only, options, (dir_ / "rounds.jsonl").string()).ops[0];
  std::set<std::string> served;  // the rounds' best kernel of some instance
  for (const InstanceChoice& a : rounds.assignment)
    served.insert(rounds.kernels[size_t(a.kernel)].key());

  auto runoff_kernels = [&](const std::string& log) {
    std::vector<std::string> warnings;
    std::set<std::string> keys;
    for (const TuningRecord& r : read_tuning_log(log, warnings).records)
      if (r.runoff == 1) keys.insert(r.mk.key());
    return keys;
  };
  options.runoff_finalists = 4;
  LuckyDevice as_timed(h100());
  run(as_timed, options, (dir_ / "as_timed.jsonl").string());
  const std::set<std::string> field = runoff_kernels((dir_ / "as_timed.jsonl").string());
  // Unweighed, the field holds runners-up as well: the test can tell the two apart.
  ASSERT_TRUE(std::any_of(field.begin(), field.end(),
                          [&](const std::string& k) { return !served.count(k); }));

  options.serving_factor = [&](const MicroKernel& mk) { return served.count(mk.key()) ? 1.0 : 2.0; };
  LuckyDevice weighed(h100());
  const OpOutcome settled = run(weighed, options, (dir_ / "weighed.jsonl").string()).ops[0];
  ASSERT_EQ(settled.runoff.runoff, 1);
  const std::set<std::string> weighed_field = runoff_kernels((dir_ / "weighed.jsonl").string());
  EXPECT_FALSE(weighed_field.empty());
  for (const std::string& k : weighed_field) EXPECT_TRUE(served.count(k)) << k;
  // The factor chooses the field and nothing else: the rounds timed the same kernels.
  EXPECT_EQ(settled.stats.measured_kernels, rounds.stats.measured_kernels);
}

// A finalist that crashes when the runoff times it again is a broken kernel like any other:
// recorded as a failure (no runoff number), never assigned, and `build` drops it too.
TEST_F(JointSearchTest, AFinalistThatFailsInTheRunoffIsDroppedEverywhere) {
  JointSearchOptions options;
  options.budget.trials_per_op = 24;
  options.budget.patience_rounds = 0;
  options.seed = 2;
  CountingDevice device(h100());
  std::map<std::string, int> calls;
  std::string flaky;  // the first kernel timed twice: a finalist, in the runoff
  device.fault = [&](const MicroKernel& mk) -> std::optional<MeasureStatus> {
    if (++calls[mk.key()] == 2 && flaky.empty()) flaky = mk.key();
    if (mk.key() == flaky) return MeasureStatus::kLaunchError;
    return std::nullopt;
  };
  const std::string log = (dir_ / "flaky.jsonl").string();
  const OpOutcome op = run(device, options, log).ops[0];
  ASSERT_FALSE(flaky.empty()) << "no kernel was timed twice";
  ASSERT_EQ(op.runoff.runoff, 1);
  EXPECT_EQ(op.runoff.failed, 1);
  for (const InstanceChoice& c : op.assignment) {
    ASSERT_GE(c.kernel, 0);
    EXPECT_NE(op.kernels[size_t(c.kernel)].key(), flaky);
  }
  std::vector<std::string> warnings;
  const TuningLog parsed = read_tuning_log(log, warnings);
  size_t failures = 0;
  for (const TuningRecord& r : parsed.records)
    if (r.mk.key() == flaky && r.status != MeasureStatus::kOk) {
      ++failures;
      EXPECT_EQ(r.runoff, 0);
    }
  EXPECT_GT(failures, 0u);
  OpChoices choices =
      make_log_choices(workload_, log, true, warnings)->choices(workload_, workload_.ops[0]);
  for (const MicroKernel& mk : choices.candidates) EXPECT_NE(mk.key(), flaky);
}

// The runoff runs after the budget's rounds like the completion, and its time is held back
// for it too. Here a kernel costs 300 ms to load and check the first time a device sees it,
// and 5 ms a pair to time, as on a CPU, where the check costs more than timing a kernel on
// the runoff's few instances. A resumed run's finalists from the log are new to its device.
TEST_F(JointSearchTest, TimeBudgetHoldsTheRunoffsTimeBack) {
  auto slow_device = [] {
    auto device = std::make_unique<CountingDevice>(h100());
    device->per_input = std::chrono::microseconds(300000);
    device->per_instance = std::chrono::microseconds(5000);  // 460 ms per kernel in a round
    return device;
  };
  JointSearchOptions options;
  options.jobs = 1;
  options.kernels_per_round = 4;  // rounds of about 2 s, so the reserve decides when they stop
  options.budget.time_budget_seconds = 6.0;
  const std::string log = (dir_ / "budget.jsonl").string();
  auto first = slow_device();
  JointSearchResult fresh = run(*first, options, log);
  ASSERT_EQ(fresh.ops[0].runoff.runoff, 1);
  EXPECT_GT(fresh.ops[0].trials, 4);
  EXPECT_LT(fresh.wall_seconds, 6.0 + 0.3) << "trials " << fresh.ops[0].trials;

  // Resumed on a device that has loaded nothing: every finalist from the log costs its load.
  options.budget.trials_per_op = fresh.ops[0].trials + 40;  // time decides, not trials
  auto second = slow_device();
  JointSearchResult resumed = run(*second, options, log);
  const OpOutcome& op = resumed.ops[0];
  ASSERT_EQ(op.runoff.runoff, 2);
  EXPECT_GT(op.trials, fresh.ops[0].trials);
  // Here 4.1 s. Counting the finalists' timings alone, without their loads, it ended at 6.4 s.
  EXPECT_LT(resumed.wall_seconds, 6.0 + 0.3)
      << "trials " << op.trials << ", runoff kernels " << op.runoff.runoff_kernels << ", pairs "
      << op.runoff.runoff_pairs;
}

}  // namespace
}  // namespace dietcode
