// The parts the joint search is made of: kernel-subset selection, targeting the instances
// that lose most time, budgets as users write them and early stopping, duplicate binaries and
// compile error lines, and resuming or moving aside an old log.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/error.h"
#include "search/budget.h"
#include "search/candidate_selection.h"
#include "search/compile_step.h"
#include "search/evolution.h"
#include "search/instance_table.h"
#include "search/log_resume.h"
#include "search/tuning_log.h"
#include "workload/workload.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

// One dense op over T in 1..32.
constexpr const char* kWorkload = R"({
  "name": "unit",
  "shape_vars": { "T": { "min": 1, "max": 32 } },
  "ops": [ { "name": "dense", "op": "dense", "dtype": "float32", "M": "16*T", "N": 768,
             "K": 768 } ]
})";

TEST(CandidateSelection, GreedyPrefersKernelsThatWinDifferentShapes) {
  // Two equally weighted instances. D is the best generalist; after it, A (a specialist that
  // wins the first instance) is worth more than C, another generalist, and then B.
  const std::vector<double> predicted = {1,        10,  // A
                                         10,       2,   // B
                                         4,        4,   // C
                                         3.9,      4,   // D
                                         INFINITY, 1};  // E cannot run on every shape
  const std::vector<double> weights = {0.5, 0.5};
  const std::vector<double> incumbent = {INFINITY, INFINITY};
  SelectionInput in{&predicted, 5, &weights, &incumbent};
  EXPECT_EQ(select_greedy(in, 3), (std::vector<size_t>{3, 0, 1}));
  EXPECT_DOUBLE_EQ(assignment_cost_with(in, 2), 4.0);
  EXPECT_EQ(select_greedy(in, 10).size(), 4u);  // never E

  // With an incumbent of 2 on both, only A gains; the rest then tie at no gain and go by
  // their mean prediction: D, C, B.
  const std::vector<double> two = {2, 2};
  SelectionInput in2{&predicted, 5, &weights, &two};
  EXPECT_EQ(select_greedy(in2, 4), (std::vector<size_t>{0, 3, 2, 1}));

  std::mt19937_64 rng(1);
  std::vector<bool> random;
  std::vector<size_t> round = select_round(in, 4, 0.5, rng, &random);
  EXPECT_EQ(round.size(), 4u);
  EXPECT_EQ(round[0], 3u);
  EXPECT_EQ(round[1], 0u);
  EXPECT_EQ(random, (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(std::set<size_t>(round.begin(), round.end()).size(), 4u);
}

TEST(Evolution, TargetsInstancesInProportionToWeightedLatency) {
  Workload w = parse_workload(kWorkload, "unit.json");
  InstanceTable table(w, w.ops[0]);
  std::vector<double> incumbent(table.size(), 0.0);
  incumbent[3] = 10;
  incumbent[7] = 30;
  incumbent[9] = INFINITY;  // unknown: not a target while others are known
  std::mt19937_64 rng(5);
  std::map<size_t, int> hits;
  for (int i = 0; i < 4000; ++i) ++hits[pick_target_instance(table, incumbent, rng)];
  EXPECT_EQ(hits.size(), 2u);
  EXPECT_NEAR(double(hits[7]) / 4000, 0.75, 0.03);

  std::vector<double> unknown(table.size(), INFINITY);
  std::set<size_t> any;
  for (int i = 0; i < 2000; ++i) any.insert(pick_target_instance(table, unknown, rng));
  EXPECT_EQ(any.size(), table.size());  // by weight alone: all uniform here
}

TEST(CandidateSelection, TheGeometricMeanObjectiveWeighsRelativeGains) {
  // A small instance (1 us) and a large one (100 us), equally weighted. A halves the small one,
  // B takes 1% off the large one: B saves more time (0.5 against 0.25 us), A far more of the
  // geometric mean (a factor of 2 on one instance against 1.01).
  const std::vector<double> predicted = {0.5, 100,  // A
                                         1,   99};  // B
  const std::vector<double> weights = {0.5, 0.5};
  const std::vector<double> incumbent = {1, 100};
  SelectionInput by_time{&predicted, 2, &weights, &incumbent};
  EXPECT_EQ(select_greedy(by_time, 1), (std::vector<size_t>{1}));
  EXPECT_DOUBLE_EQ(assignment_cost_with(by_time, 0), 50.25);
  SelectionInput by_log = by_time;
  by_log.objective = SearchObjective::kWeightedLogTime;
  EXPECT_EQ(select_greedy(by_log, 1), (std::vector<size_t>{0}));
  EXPECT_DOUBLE_EQ(assignment_cost_with(by_log, 0), 0.5 * std::log(0.5) + 0.5 * std::log(100.0));
}

TEST(Evolution, TheGeometricMeanObjectiveTargetsInstancesByWeightAlone) {
  Workload w = parse_workload(kWorkload, "unit.json");
  InstanceTable table(w, w.ops[0]);
  std::vector<double> incumbent(table.size(), INFINITY);
  incumbent[3] = 10;
  incumbent[7] = 30;  // three times the time, the same weight
  std::mt19937_64 rng(5);
  std::map<size_t, int> hits;
  for (int i = 0; i < 4000; ++i)
    ++hits[pick_target_instance(table, incumbent, rng, SearchObjective::kWeightedLogTime)];
  EXPECT_EQ(hits.size(), 2u);
  EXPECT_NEAR(double(hits[7]) / 4000, 0.5, 0.03);
}

TEST(Budget, DurationsAsUsersWriteThem) {
  EXPECT_EQ(parse_duration_seconds("90s"), 90.0);
  EXPECT_EQ(parse_duration_seconds("10m"), 600.0);
  EXPECT_EQ(parse_duration_seconds("1h30m"), 5400.0);
  EXPECT_EQ(parse_duration_seconds("1.5h"), 5400.0);
  EXPECT_EQ(parse_duration_seconds("250ms"), 0.25);
  EXPECT_EQ(parse_duration_seconds("600"), 600.0);
  EXPECT_EQ(parse_duration_seconds("2min"), 120.0);
  for (const char* bad : {"", "10x", "-5s", "0s", "m", "10 m", "5s10", "s5"})
    EXPECT_FALSE(parse_duration_seconds(bad)) << bad;
  EXPECT_EQ(format_duration(45.21), "45.2s");
  EXPECT_EQ(format_duration(90), "1m 30s");
  EXPECT_EQ(format_duration(7500), "2h 05m");
}

TEST(Budget, EarlyStopAfterPatienceRoundsWithoutImprovement) {
  ImprovementTracker t(2, 0.01);
  EXPECT_FALSE(t.stalled_after(INFINITY));  // nothing measured yet
  EXPECT_FALSE(t.stalled_after(100));
  EXPECT_FALSE(t.stalled_after(99.5));  // < 1% better: stalled once
  EXPECT_FALSE(t.stalled_after(90));    // real progress resets
  EXPECT_FALSE(t.stalled_after(89.5));
  EXPECT_TRUE(t.stalled_after(89.4));
  ImprovementTracker never(0, 0.01);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(never.stalled_after(50));
}

TEST(CompileStep, DuplicateBinariesAndErrorLines) {
  BinarySet set;
  EXPECT_EQ(set.check_and_add("a", "bytes1"), "");
  EXPECT_EQ(set.check_and_add("b", "bytes2"), "");
  EXPECT_EQ(set.check_and_add("c", "bytes1"), "a");
  EXPECT_EQ(first_error_line("\nfoo.cu(12): warning: x\nfoo.cu(30): error: identifier \"q\" is "
                             "undefined\nmore\n"),
            "foo.cu(30): error: identifier \"q\" is undefined");
  EXPECT_EQ(first_error_line(""), "the compiler produced no binary");
  EXPECT_EQ(first_error_line(std::string(300, 'e')).size(), 200u);
}

TEST(LogResume, FreshMovesTheOldLogAsideAndOtherDevicesAreIgnoredWithANote) {
  const fs::path dir =
      fs::temp_directory_path() / ("dietcode_log_resume_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "w.jsonl").string();
  EXPECT_EQ(move_log_aside(path), "");
  TuningRecord r;
  r.workload = "w";
  r.op = "dense";
  r.mk = {"dense_f32", {{"BK", 8}}};
  r.shape = {{"T", 1}};
  r.latency_us = 3.0;
  r.device = "NVIDIA A100-SXM4-80GB";
  r.arch = "sm_80";
  r.tool_version = "0.1.0";
  r.timestamp = "2025-01-01T00:00:00.000Z";
  {
    TuningLogWriter writer(path);
    writer.append(r);
    r.device = "simulated NVIDIA H100 80GB HBM3";
    r.arch = "sm_90";
    r.simulated = true;
    writer.append(r);
    r.workload = "other";
    writer.append(r);
  }
  DeviceIdentity h100_sim{"simulated NVIDIA H100 80GB HBM3", "sm_90", true};
  ResumeState state = read_log_for_resume(path, "w", h100_sim);
  EXPECT_EQ(state.records.size(), 1u);
  EXPECT_EQ(state.lines_read, 3u);
  EXPECT_EQ(state.notes,
            (std::vector<std::string>{
                path + ": ignoring 1 record measured on NVIDIA A100-SXM4-80GB (sm_80): this run "
                       "measures on simulated NVIDIA H100 80GB HBM3 (sm_90)",
                path + ": ignoring 1 record of workload \"other\""}));

  const std::string moved = move_log_aside(path);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::exists(moved));
  EXPECT_EQ(moved.rfind(path + ".", 0), 0u);
  EXPECT_EQ(moved.substr(moved.size() - 4), ".bak");
  { std::ofstream(path) << "x\n"; }
  const std::string moved_again = move_log_aside(path);  // same second: a numbered name
  EXPECT_NE(moved_again, moved);
  EXPECT_TRUE(fs::exists(moved_again));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dietcode
