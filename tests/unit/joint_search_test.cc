// The joint search on the simulated device with a stand-in compiler (no NVRTC, no GPU): it gets
// within 5% of the exhaustive optimum of a small space while measuring at most a fifth of it,
// resumes from its log without measuring a pair twice, is deterministic for a seed, records
// crashing and hanging kernels and never assigns them, and samples instances of large cross
// products. The parts it is made of are tested in search_parts_test.cc.
// The runoff is tested in joint_search_runoff_test.cc.
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

// One dense op over B x T = 12 x 16 instances: more than a kernel is timed on.
Workload cross_product_workload() {
  return parse_workload(R"({
    "name": "cross",
    "shape_vars": { "B": { "min": 1, "max": 12 }, "T": { "min": 1, "max": 16 } },
    "ops": [ { "name": "dense", "op": "dense", "dtype": "float32", "M": "B*T", "N": 768,
               "K": 768 } ]
  })",
                        "cross.json");
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

// Three dense ops of different shapes over T in 1..8, searched with the fixture's space.
Workload three_dense_ops() {
  return parse_workload(R"({
    "name": "three",
    "shape_vars": { "T": { "min": 1, "max": 8 } },
    "ops": [
      { "name": "a", "op": "dense", "dtype": "float32", "M": "16*T", "N": 768, "K": 768 },
      { "name": "b", "op": "dense", "dtype": "float32", "M": "16*T", "N": 256, "K": 512 },
      { "name": "c", "op": "dense", "dtype": "float32", "M": "16*T", "N": 512, "K": 256 }
    ]
  })",
                        "three.json");
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


// tune --kernels: the fixture's space with a few of its tunables changed from its defaults
// (which break a constraint: 4 x 4 lanes), as a list names them.
ListedKernel listed(const TemplateSpace& space, std::map<std::string, int> changes,
                    const std::string& origin) {
  MicroKernel mk = space.defaults();
  for (const auto& [name, value] : changes) mk.params[name] = value;
  return {mk, origin};
}

TEST_F(JointSearchTest, ListedKernelsAreTimedOnEveryInstanceAndNothingElse) {
  const ListedKernel a = listed(space_, {{"THREADS_N", 8}}, "ab.json[0]");
  const ListedKernel b = listed(space_, {{"THREADS_N", 8}, {"TM", 4}}, "ab.json[1]");
  JointSearchOptions options;
  options.listed_kernels = {
      a,
      listed(space_, {}, "ab.json[2]"),                                 // 4 x 4 lanes
      b,
      listed(space_, {{"THREADS_N", 8}, {"TM", 16}}, "ab.json[3]"),     // TM not in the space
      {template_space("x86_avx2_f32").defaults(), "ab.json[4]"},       // the CPU's
      {a.mk, "ab.json[5]"},                                            // a again
  };
  options.kernels_per_round = 1;       // a round per kernel...
  options.budget.patience_rounds = 1;  // ... which a search would stop after the first stall
  options.runoff_finalists = 0;        // counts the rounds' pairs
  CountingDevice device(h100());
  JointSearch search(workload_, {&workload_.ops[0]}, environment(device, nullptr), options,
                     [this](const OpSpec&) { return std::vector<const TemplateSpace*>{&space_}; });
  EXPECT_EQ(search.notes(),
            (std::vector<std::string>{
                "dense: ab.json[2] (dense_f32) skipped: violates \"THREADS_M * THREADS_N == warp "
                "size (lanes cover the warp's tile once)\"",
                "dense: ab.json[3] (dense_f32) skipped: TM=16 is not one of 2, 4, 8",
                "dense: ab.json[4] (x86_avx2_f32) skipped: a cpu template, and this run tunes for "
                "cuda"}));
  const JointSearchResult result = search.run();
  const OpOutcome& op = result.ops.at(0);
  EXPECT_EQ(device.kernels, (std::set<std::string>{a.mk.key(), b.mk.key()}));
  EXPECT_EQ(device.pairs.size(), 2u * 32u);  // each on every instance...
  for (const auto& [pair, count] : device.pairs) EXPECT_EQ(count, 1);  // ... once
  EXPECT_EQ(op.stop, StopReason::kListed);
  EXPECT_STREQ(to_string(op.stop), "listed kernels measured");
  EXPECT_EQ(op.stats.rounds, 2);
  EXPECT_EQ(op.trials, 2);
  EXPECT_EQ(search.searches()[0]->trial_budget(), 2);
}

TEST_F(JointSearchTest, ListedKernelsTheLogHasAreNotTimedAgain) {
  const std::string log = (dir_ / "listed.jsonl").string();
  const ListedKernel a = listed(space_, {{"THREADS_N", 8}}, "ab.json[0]");
  const ListedKernel b = listed(space_, {{"THREADS_N", 8}, {"TM", 4}}, "ab.json[1]");
  JointSearchOptions options;
  options.listed_kernels = {a};
  CountingDevice first(h100());
  run(first, options, log);
  EXPECT_EQ(first.kernels, std::set<std::string>{a.mk.key()});

  options.listed_kernels = {a, b};
  CountingDevice second(h100());
  const JointSearchResult grown = run(second, options, log);
  EXPECT_EQ(second.kernels.count(b.mk.key()), 1u);  // and a in the runoff, with b
  EXPECT_EQ(grown.ops[0].stats.compiled, 1);        // a not even compiled for its rounds
  EXPECT_EQ(grown.ops[0].trials, 2);
  EXPECT_EQ(grown.ops[0].stop, StopReason::kListed);
  std::vector<std::string> warnings;
  std::set<MeasuredPair> pairs;
  for (const TuningRecord& r : read_tuning_log(log, warnings).records)
    if (r.runoff == 0)
      EXPECT_TRUE(pairs.insert({r.mk.key(), instance_key(r)}).second) << r.mk.key();
  EXPECT_EQ(pairs.size(), 2u * 32u);

  CountingDevice third(h100());
  const JointSearchResult same = run(third, options, log);
  EXPECT_EQ(third.inputs_measured, 0);  // not even a runoff: nothing new was timed
  EXPECT_EQ(same.ops[0].stats.rounds, 0);
  EXPECT_EQ(same.ops[0].stop, StopReason::kListed);
  EXPECT_EQ(same.ops[0].stats.resumed_kernels, 2);
}

TEST_F(JointSearchTest, ListedKernelsAreTimedOnTheInstancesATrialWouldBe) {
  workload_ = cross_product_workload();
  JointSearchOptions options;
  options.listed_kernels = {listed(space_, {{"THREADS_N", 8}}, "ab.json[0]"),
                            listed(space_, {{"THREADS_N", 8}, {"TM", 4}}, "ab.json[1]")};
  options.max_instances_per_kernel = 48;
  options.complete_kernels = 0;  // no final completion, no runoff: the rounds' own pairs
  options.runoff_finalists = 0;
  CountingDevice device(h100());
  run(device, options);
  std::map<std::string, int> per_kernel;
  for (const auto& [pair, count] : device.pairs) {
    EXPECT_EQ(count, 1);
    ++per_kernel[pair.first];
  }
  EXPECT_EQ(per_kernel.size(), 2u);
  for (const auto& [key, count] : per_kernel) EXPECT_EQ(count, 48) << key;
}

TEST_F(JointSearchTest, AnOpNoListedKernelComputesIsLeftOutSayingWhy) {
  workload_ = parse_workload(R"({
    "name": "two",
    "shape_vars": { "T": { "min": 1, "max": 8 } },
    "ops": [
      { "name": "proj", "op": "dense", "dtype": "float32", "M": "16*T", "N": 768, "K": 768 },
      { "name": "scores", "op": "batch_matmul", "dtype": "float32", "B": 12, "M": "T",
        "N": "T", "K": 64 }
    ]
  })",
                             "two.json");
  JointSearchOptions options;
  options.listed_kernels = {{dense_f32_space().defaults(), "ab.json[0]"}};
  options.runoff_finalists = 0;
  CountingDevice device(h100());
  JointSearch search(workload_, {&workload_.ops[0], &workload_.ops[1]},
                     environment(device, nullptr), options);
  ASSERT_EQ(search.searches().size(), 1u);
  EXPECT_EQ(search.searches()[0]->op().name, "proj");
  EXPECT_EQ(search.notes(),
            (std::vector<std::string>{
                "scores: ab.json[0] (dense_f32) skipped: dense_f32 does not compute float32 "
                "batch_matmul with A stored [M,K] and B stored [K,N]",
                "scores: no listed kernel can compute it: left untuned"}));
  const JointSearchResult result = search.run();
  ASSERT_EQ(result.ops.size(), 1u);
  EXPECT_EQ(device.kernels, std::set<std::string>{dense_f32_space().defaults().key()});
}

}  // namespace
}  // namespace dietcode
