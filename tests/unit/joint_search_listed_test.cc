// tune --kernels on the simulated device with a stand-in compiler (test doubles): the listed
// kernels are timed on every instance a trial would be and nothing else, those the log has are
// not timed again, and an op none of them computes is left out with the reason.
#include "joint_search_fixture.h"

namespace dietcode {
namespace {


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
