// The joint search on the simulated device with a stand-in compiler (no NVRTC, no GPU): it gets
// within 5% of the exhaustive optimum of a small space while measuring at most a fifth of it,
// resumes from its log without measuring a pair twice, is deterministic for a seed, records
// crashing and hanging kernels and never assigns them, and samples instances of large cross
// products. The parts it is made of are tested in search_parts_test.cc.
// The runoff is tested in joint_search_runoff_test.cc, the budgets in joint_search_budget_test.cc,
// tune --kernels in joint_search_listed_test.cc.
#include "joint_search_fixture.h"

namespace dietcode {
namespace {


TEST_F(JointSearchTest, ReachesTheExhaustiveOptimumWithinFivePercentMeasuringAFifth) {
  const Exhaustive best = exhaustive();
  ASSERT_GE(best.candidates, 150u) << "the space should be big enough to make a fifth a test";
  ASSERT_LE(best.candidates, 2000u);

  CountingDevice device(h100());
  JointSearchOptions options;
  options.budget.trials_per_op = int(best.candidates / 5);
  options.budget.patience_rounds = 0;  // spend the budget
  options.seed = 7;
  JointSearchResult result = run(device, options);

  ASSERT_EQ(result.ops.size(), 1u);
  const OpOutcome& op = result.ops[0];
  EXPECT_LE(device.kernels.size(), best.candidates / 5);
  EXPECT_EQ(op.trials, int(best.candidates / 5));
  EXPECT_LE(op.weighted_mean_us, 1.05 * best.weighted_mean_us)
      << "search " << op.weighted_mean_us << " us vs exhaustive " << best.weighted_mean_us
      << " us over " << best.candidates << " candidates";
  // Random picks at this budget land 1-3% away on this space; the guided search should not.
  EXPECT_LE(op.weighted_mean_us, 1.01 * best.weighted_mean_us);
  EXPECT_GE(op.weighted_mean_us, best.weighted_mean_us * (1 - 1e-9));  // cannot beat it
  for (const InstanceChoice& c : op.assignment) EXPECT_TRUE(c.measured);
  EXPECT_TRUE(op.quality.evaluated);
  EXPECT_GT(op.quality.held_out_kernels, 0u);
}

TEST_F(JointSearchTest, BeatsRandomPicksOnTheSameBudget) {
  const Exhaustive best = exhaustive();
  double guided = 0, random = 0;
  for (uint64_t seed : {1, 2, 3}) {
    JointSearchOptions options;
    options.budget.trials_per_op = int(best.candidates / 10);
    options.budget.patience_rounds = 0;
    options.seed = seed;
    CountingDevice a(h100());
    guided += run(a, options).ops[0].weighted_mean_us / best.weighted_mean_us;
    // Every pick at random among fresh samples: no model, no evolution.
    options.exploration = options.first_round_exploration = 1;
    options.children = options.population = 0;
    CountingDevice b(h100());
    random += run(b, options).ops[0].weighted_mean_us / best.weighted_mean_us;
  }
  EXPECT_LT(guided / 3 - 1, 0.5 * (random / 3 - 1))
      << "guided " << guided / 3 << " vs random " << random / 3 << " of the optimum";
}

TEST_F(JointSearchTest, SameSeedSameLogAndEveryPairMeasuredOnce) {
  JointSearchOptions options;
  options.budget.trials_per_op = 40;
  options.seed = 3;
  options.runoff_finalists = 0;  // the rounds' own bookkeeping; the runoff times pairs again
  CountingDevice a(h100()), b(h100());
  run(a, options, (dir_ / "a.jsonl").string());
  run(b, options, (dir_ / "b.jsonl").string());
  const std::vector<std::string> la = lines_without_timestamps((dir_ / "a.jsonl").string());
  EXPECT_EQ(la, lines_without_timestamps((dir_ / "b.jsonl").string()));
  ASSERT_FALSE(la.empty());
  for (const auto& [pair, count] : a.pairs) EXPECT_EQ(count, 1) << pair.first;

  options.seed = 4;
  CountingDevice c(h100());
  run(c, options, (dir_ / "c.jsonl").string());
  EXPECT_NE(la, lines_without_timestamps((dir_ / "c.jsonl").string()));
}

// Simulated devices (test doubles) of different speeds, for several-device runs.
std::vector<std::unique_ptr<SimulatedDevice>> simulated_host(const std::vector<double>& delay_ms,
                                                             const std::vector<int>& fail_after) {
  std::vector<std::unique_ptr<SimulatedDevice>> host;
  for (size_t d = 0; d < delay_ms.size(); ++d) {
    SimulatedDeviceOptions o;
    o.noise_sigma = 0.05;
    o.seed = 3;
    o.ordinal = int(d);
    o.delay_seconds = delay_ms[d] / 1000;
    o.fail_after_calls = fail_after[d];
    host.push_back(std::make_unique<SimulatedDevice>(h100(), o));
  }
  return host;
}

std::vector<PoolDevice> members(const std::vector<std::unique_ptr<SimulatedDevice>>& host) {
  std::vector<PoolDevice> out;
  for (size_t d = 0; d < host.size(); ++d) out.push_back({int(d), host[d].get()});
  return out;
}

TEST_F(JointSearchTest, SeveralDevicesWriteTheLogOneDeviceWritesWhateverTheirSpeed) {
  JointSearchOptions options;
  options.budget.trials_per_op = 40;
  options.seed = 3;
  auto one = simulated_host({0}, {-1});
  run(*one[0], options, (dir_ / "one.jsonl").string());
  const std::vector<std::string> reference =
      lines_without_timestamps((dir_ / "one.jsonl").string());
  ASSERT_GT(reference.size(), 100u);

  // The fast device dies on its first job, which goes to another one. The first round has four
  // jobs and the other two devices are slow, so one of the four is the fast device's.
  auto three = simulated_host({20, 0, 20}, {-1, 0, -1});
  {
    MeasurePool pool(members(three));
    run(*three[0], options, (dir_ / "three.jsonl").string(), &pool);
    EXPECT_TRUE(pool.stats()[1].failed);
    EXPECT_EQ(pool.stats()[1].jobs, 0);
  }
  EXPECT_EQ(lines_without_timestamps((dir_ / "three.jsonl").string()), reference);

  // Other speeds, other arrival orders: the same log. Eight devices for a round of 16
  // kernels: jobs of two, so that every device can get one.
  auto eight = simulated_host({2, 1, 3, 1, 2, 1, 3, 2}, std::vector<int>(8, -1));
  {
    MeasurePool pool(members(eight));
    const OpOutcome op = run(*eight[0], options, (dir_ / "eight.jsonl").string(), &pool).ops[0];
    size_t jobs = 0, kernels = 0;
    for (const PoolDeviceStats& s : pool.stats()) jobs += size_t(s.jobs), kernels += s.inputs;
    // The runoff is one job on one device, so that its finalists share one measurement.
    ASSERT_EQ(op.runoff.runoff, 1);
    EXPECT_GE((jobs - 1) * 2, kernels - size_t(op.runoff.runoff_kernels))
        << "jobs of more than two kernels";
  }
  EXPECT_EQ(lines_without_timestamps((dir_ / "eight.jsonl").string()), reference);
}

TEST_F(JointSearchTest, LosingEveryDeviceStopsTheRunWithAPrefixOfTheLog) {
  JointSearchOptions options;
  options.budget.trials_per_op = 40;
  options.seed = 3;
  auto one = simulated_host({0}, {-1});
  run(*one[0], options, (dir_ / "one.jsonl").string());
  const std::vector<std::string> reference =
      lines_without_timestamps((dir_ / "one.jsonl").string());

  auto failing = simulated_host({1, 2}, {3, 2});
  MeasurePool pool(members(failing));
  try {
    run(*failing[0], options, (dir_ / "lost.jsonl").string(), &pool);
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_THAT(std::string(e.what()),
                ::testing::StartsWith("every one of the 2 GPUs failed; the last: simulated GPU "));
  }
  const std::vector<std::string> lost = lines_without_timestamps((dir_ / "lost.jsonl").string());
  ASSERT_FALSE(lost.empty());
  ASSERT_LT(lost.size(), reference.size());
  EXPECT_TRUE(std::equal(lost.begin(), lost.end(), reference.begin()));
}

TEST_F(JointSearchTest, ResumingContinuesTheBudgetWithoutMeasuringAPairTwice) {
  const std::string log = (dir_ / "resume.jsonl").string();
  JointSearchOptions options;
  options.budget.trials_per_op = 24;
  options.budget.patience_rounds = 0;
  options.runoff_finalists = 0;  // resuming the rounds; the runoff's resume is tested below
  CountingDevice first(h100());
  run(first, options, log);
  EXPECT_EQ(first.kernels.size(), 24u);

  // The same budget again: nothing left to do.
  CountingDevice again(h100());
  JointSearchResult same = run(again, options, log);
  EXPECT_TRUE(again.kernels.empty());
  EXPECT_EQ(same.ops[0].trials, 24);
  EXPECT_EQ(same.ops[0].stats.resumed_kernels, 24);

  // A larger budget: only the difference is measured, and only new pairs.
  options.budget.trials_per_op = 40;
  CountingDevice more(h100());
  JointSearchResult grown = run(more, options, log);
  EXPECT_EQ(more.kernels.size(), 16u);
  for (const std::string& key : more.kernels) EXPECT_EQ(first.kernels.count(key), 0u) << key;
  EXPECT_EQ(grown.ops[0].trials, 40);

  std::vector<std::string> warnings;
  TuningLog parsed = read_tuning_log(log, warnings);
  EXPECT_TRUE(warnings.empty());
  std::set<MeasuredPair> pairs;
  for (const TuningRecord& r : parsed.records)
    EXPECT_TRUE(pairs.insert({r.mk.key(), instance_key(r)}).second) << r.mk.key();
  EXPECT_EQ(pairs.size(), 40u * 32u);
  // One quality line per run that measured something: the first and the third.
  ASSERT_EQ(parsed.others.size(), 2u);
  EXPECT_EQ(parsed.others[0]["kind"], "cost_model_quality");
}

TEST_F(JointSearchTest, ALogWrittenBeforeATunableExistedResumesWithItsDefault) {
  space_ = dense_f32_space();
  const std::string log = (dir_ / "older.jsonl").string();
  JointSearchOptions options;
  options.budget.trials_per_op = 16;
  options.kernels_per_round = 8;
  options.runoff_finalists = 0;
  CountingDevice first(h100());
  run(first, options, log);
  ASSERT_EQ(first.kernels.size(), 16u);
  // The log as a build without PRELOAD would have written it: its kernels, those that ran the
  // code PRELOAD = 0 is now, lack the tunable. (Those with PRELOAD = 1 stay as they are.)
  std::vector<std::string> lines;
  {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line);
      if (j.contains("mk") && j["mk"]["params"].value("PRELOAD", -1) == 0)
        j["mk"]["params"].erase("PRELOAD");
      lines.push_back(j.dump());
    }
  }
  {
    std::ofstream out(log, std::ios::trunc);
    for (const std::string& line : lines) out << line << "\n";
  }
  // Its kernels are today's kernels at PRELOAD = 0: the default and the seeds among them are
  // not timed again, nor is anything else.
  options.budget.trials_per_op = 24;
  CountingDevice more(h100());
  run(more, options, log);
  EXPECT_EQ(more.kernels.size(), 8u);
  for (const std::string& key : more.kernels) EXPECT_EQ(first.kernels.count(key), 0u) << key;
}

TEST_F(JointSearchTest, HalfMeasuredKernelsFromAKilledRunAreCompletedFirst) {
  const std::string log = (dir_ / "killed.jsonl").string();
  JointSearchOptions options;
  options.budget.trials_per_op = 16;
  options.runoff_finalists = 0;  // counts the rounds' records
  CountingDevice first(h100());
  run(first, options, log);
  // Keep the first kernel's first 10 records, as if the run had been killed while writing.
  std::ifstream in(log);
  std::string line, kept;
  for (int i = 0; i < 10 && std::getline(in, line); ++i) kept += line + "\n";
  in.close();
  { std::ofstream(log, std::ios::trunc) << kept; }

  CountingDevice resumed(h100());
  options.budget.trials_per_op = 8;
  JointSearchResult result = run(resumed, options, log);
  std::vector<std::string> warnings;
  TuningLog parsed = read_tuning_log(log, warnings);
  std::map<std::string, int> per_kernel;
  for (const TuningRecord& r : parsed.records) ++per_kernel[r.mk.key()];
  for (const auto& [key, count] : per_kernel) EXPECT_EQ(count, 32) << key;
  EXPECT_EQ(per_kernel.size(), 8u);
  for (const auto& [pair, count] : resumed.pairs) EXPECT_EQ(count, 1);
  EXPECT_EQ(result.ops[0].trials, 8);
}

TEST_F(JointSearchTest, CrashingAndHangingKernelsAreRecordedAndNeverChosen) {
  // The kernels that win in the exhaustive search crash or hang here, and so does a sixth of
  // the space besides.
  const Exhaustive best = exhaustive();
  CountingDevice device(h100());
  std::map<std::string, MeasureStatus> failing;
  int n = 0;
  for (const std::string& key : best.winners)
    failing[key] = n++ % 2 ? MeasureStatus::kTimeout : MeasureStatus::kLaunchError;
  auto faulty = [&](const MicroKernel& mk) -> std::optional<MeasureStatus> {
    auto it = failing.find(mk.key());
    if (it != failing.end()) return it->second;
    if (mk.get("SPLITK") == 2 && mk.get("WARPS_M") != 4) return MeasureStatus::kLaunchError;
    return std::nullopt;
  };
  device.fault = faulty;

  const std::string log = (dir_ / "faults.jsonl").string();
  JointSearchOptions options;
  options.budget.trials_per_op = int(best.candidates / 5);
  options.budget.patience_rounds = 0;
  options.seed = 7;
  JointSearchResult result = run(device, options, log);
  const OpOutcome& op = result.ops[0];
  EXPECT_EQ(op.trials, int(best.candidates / 5));  // tuning went on
  EXPECT_GT(op.stats.failed_kernels, 0);

  std::vector<std::string> warnings;
  TuningLog parsed = read_tuning_log(log, warnings);
  std::set<std::string> failed;
  for (const TuningRecord& r : parsed.records)
    if (r.status == MeasureStatus::kLaunchError || r.status == MeasureStatus::kTimeout) {
      failed.insert(r.mk.key());
      EXPECT_FALSE(r.latency_us);
      EXPECT_FALSE(r.error.empty());
    }
  EXPECT_EQ(int(failed.size()), op.stats.failed_kernels);
  for (const InstanceChoice& c : op.assignment) {
    ASSERT_GE(c.kernel, 0);
    EXPECT_FALSE(faulty(op.kernels[size_t(c.kernel)]));
  }
}


TEST_F(JointSearchTest, LargeCrossProductsAreSampledAndUnmeasuredInstancesPredicted) {
  workload_ = cross_product_workload();
  CountingDevice device(h100());
  JointSearchOptions options;
  options.budget.trials_per_op = 20;
  options.max_instances_per_kernel = 48;
  options.complete_kernels = 0;  // no final completion: see the next test
  options.runoff_finalists = 0;  // nor a runoff, which times pairs again
  JointSearchResult result = run(device, options);
  const OpOutcome& op = result.ops[0];
  ASSERT_EQ(op.instances, 12u * 16u);
  std::map<std::string, int> per_kernel;
  for (const auto& [pair, count] : device.pairs) {
    EXPECT_EQ(count, 1);
    ++per_kernel[pair.first];
  }
  for (const auto& [key, count] : per_kernel) EXPECT_EQ(count, 48) << key;
  int predicted = 0;
  for (const InstanceChoice& c : op.assignment) {
    EXPECT_GE(c.kernel, 0);
    EXPECT_TRUE(std::isfinite(c.latency_us));
    predicted += !c.measured;
  }
  EXPECT_LT(predicted, int(op.instances));
  EXPECT_TRUE(std::isfinite(op.weighted_mean_us));
}

TEST_F(JointSearchTest, SampledKernelsInUseAreTimedOnEveryInstanceAtTheEnd) {
  workload_ = cross_product_workload();
  CountingDevice device(h100());
  JointSearchOptions options;
  options.budget.trials_per_op = 20;
  options.max_instances_per_kernel = 48;
  options.complete_kernels = 3;
  options.runoff_finalists = 0;  // the runoff would time some pairs a second time
  JointSearchResult result = run(device, options);
  const OpOutcome& op = result.ops[0];
  std::map<std::string, int> per_kernel;
  for (const auto& [pair, count] : device.pairs) {
    EXPECT_EQ(count, 1);  // no pair timed twice, completion included
    ++per_kernel[pair.first];
  }
  int complete = 0;
  for (const auto& [key, count] : per_kernel) {
    EXPECT_TRUE(count == 48 || count == int(op.instances)) << key << ": " << count;
    complete += count == int(op.instances);
  }
  EXPECT_GE(complete, 1);
  EXPECT_LE(complete, 3);
  // The kernels serving the most time now have a time everywhere, so most of the
  // assignment is measured rather than predicted.
  int measured = 0;
  for (const InstanceChoice& c : op.assignment) measured += c.measured;
  EXPECT_EQ(measured, int(op.instances));
}


// The template's own default (here dense_f32's 128 x 128 tile) is timed in the first round,
// whatever the model thinks of it: a tune never ends behind the hand-picked configuration.
// On the H200, 96 trials of BERT's fc2 never timed a 128-row tile.
// Its seeds (cuBLAS's 16 x 8-per-thread tiles) follow: borrowed kernels take at most half of a
// round's slots, so the five starting kernels are all timed within the first two rounds.
TEST_F(JointSearchTest, TheTemplatesDefaultKernelIsTimedFirst) {
  space_ = dense_f32_space();
  const MicroKernel defaults = space_.defaults();
  CountingDevice device(h100());
  JointSearchOptions options;
  options.budget.trials_per_op = 16;
  options.kernels_per_round = 8;
  JointSearchResult result = run(device, options);
  EXPECT_EQ(result.ops[0].trials, 16);
  EXPECT_TRUE(device.kernels.count(defaults.key())) << defaults.key();
  ASSERT_EQ(space_.starting_kernels().size(), 7u);
  for (const MicroKernel& mk : space_.starting_kernels())
    EXPECT_TRUE(device.kernels.count(mk.key())) << mk.key();
  options.budget.trials_per_op = 8;
  // A space whose default breaks a constraint (the fixture's: 4 x 4 lanes) just goes on.
  space_ = small_space();
  CountingDevice other(h100());
  JointSearchResult small = run(other, options);
  EXPECT_EQ(small.ops[0].trials, 8);
  EXPECT_FALSE(other.kernels.count(space_.defaults().key()));
}


TEST_F(JointSearchTest, EachOpsModelLearnsFromTheOtherOpsKernels) {
  workload_ = three_dense_ops();
  CountingDevice device(h100());
  JointSearchOptions options;
  options.budget.trials_per_op = 24;
  options.budget.patience_rounds = 0;
  JointSearchResult result = run_every_op(device, options);
  ASSERT_EQ(result.ops.size(), 3u);
  for (const OpOutcome& op : result.ops) {
    size_t others = 0;
    for (const OpOutcome& other : result.ops)
      if (&other != &op) others += size_t(other.stats.measured_kernels);
    ASSERT_TRUE(op.quality.evaluated) << op.op;
    // Each fold learns every kernel the other ops measured, less those whose key it holds out
    // (one key can be a kernel of each of the two others); peer_kernels is the mean per fold.
    const size_t folds = op.quality.folds;
    EXPECT_EQ(folds, 5u) << op.op;
    EXPECT_GT(op.quality.peer_kernels, 0u) << op.op;
    EXPECT_LE(op.quality.peer_kernels, others) << op.op;
    EXPECT_LE(op.quality.peer_kernels_withheld, 2 * op.quality.held_out_kernels) << op.op;
    EXPECT_NEAR(double(op.quality.peer_kernels * folds + op.quality.peer_kernels_withheld),
                double(others * folds), folds / 2.0)
        << op.op;
    EXPECT_TRUE(op.quality.shapes_evaluated) << op.op;
  }
}

}  // namespace
}  // namespace dietcode
