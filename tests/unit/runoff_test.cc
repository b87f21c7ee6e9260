// The runoff's arithmetic and how every reader of a log applies it (search/runoff.h): which
// kernels are finalists, how an instance is settled, the latest runoff deciding, and the
// search's book, inspect's best records, merge and build all agreeing. The runoff as the
// search runs it is in joint_search_test.cc.
#include "search/runoff.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>

#include "common/error.h"
#include "pack/choices.h"
#include "search/kernel_book.h"
#include "search/log_merge.h"
#include "search/tuning_log.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(RunoffFinalists, FastestFirstWithinTheMarginAtMostPerInstance) {
  const std::vector<double> us = {10.0, kNaN, 10.4, 9.5, 12.0, 10.9, 9.5};
  // Best 9.5 (kernels 3 and 6, tied: the earlier first); 10% above is 10.45.
  EXPECT_EQ(runoff_finalists(us, 4, 0.10), (std::vector<size_t>{3, 6, 0, 2}));
  EXPECT_EQ(runoff_finalists(us, 2, 0.10), (std::vector<size_t>{3, 6}));
  EXPECT_EQ(runoff_finalists(us, 9, 0.20), (std::vector<size_t>{3, 6, 0, 2, 5}));
  EXPECT_EQ(runoff_finalists(us, 9, 0.0), (std::vector<size_t>{3, 6}));
  EXPECT_TRUE(runoff_finalists({kNaN, kNaN}, 4, 0.1).empty());
  EXPECT_TRUE(runoff_finalists(us, 0, 0.1).empty());
}

TEST(SettleRunoff, FinalistsTakeTheirRunoffTimesOthersScaleByTheMedianRatio) {
  // Kernels 0 and 1 ran again: 0 went from 4 to 6 (x1.5), 1 from 5 to 5.5 (x1.1). The others
  // are scaled by the median ratio, 1.3; kernel 3 has no time and keeps none.
  const std::vector<double> settled =
      settle_runoff({4.0, 5.0, 4.8, kNaN}, {6.0, 5.5, kNaN, kNaN});
  ASSERT_EQ(settled.size(), 4u);
  EXPECT_DOUBLE_EQ(settled[0], 6.0);
  EXPECT_DOUBLE_EQ(settled[1], 5.5);
  EXPECT_DOUBLE_EQ(settled[2], 4.8 * 1.3);
  EXPECT_TRUE(std::isnan(settled[3]));
  // The lucky first timing of kernel 0 no longer wins the instance: 1 does.
  // An odd count takes the middle ratio.
  EXPECT_DOUBLE_EQ(settle_runoff({1, 1, 1, 2}, {2, 3, 4, kNaN})[3], 2 * 3.0);
  // A finalist with a runoff time only (its ordinary record lost) is no ratio: scale 1.
  EXPECT_DOUBLE_EQ(settle_runoff({kNaN, 2.0}, {3.0, kNaN})[1], 2.0);
  // No runoff here: unchanged.
  const std::vector<double> ordinary = {1.0, kNaN, 3.0};
  const std::vector<double> same = settle_runoff(ordinary, {kNaN, kNaN, kNaN});
  EXPECT_DOUBLE_EQ(same[0], 1.0);
  EXPECT_TRUE(std::isnan(same[1]));
  EXPECT_DOUBLE_EQ(same[2], 3.0);
}

TEST(InstanceRunoff, TheLatestRunoffDecides) {
  InstanceRunoff r;
  EXPECT_EQ(r.latest(), 0);
  r.add(0, 1, 5.0);
  r.add(1, 1, 6.0);
  EXPECT_EQ(r.latest(), 1);
  EXPECT_EQ(r.times().size(), 2u);
  r.add(2, 2, 7.0);  // a later runoff: what the first said is gone
  EXPECT_EQ(r.latest(), 2);
  ASSERT_EQ(r.times().size(), 1u);
  r.add(0, 1, 1.0);  // an earlier runoff's record read after it: dropped
  const std::vector<double> v = r.as_vector(3);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_DOUBLE_EQ(v[2], 7.0);
}

Workload unit_workload() {
  return parse_workload(R"({"name": "w", "shape_vars": {"T": {"min": 1, "max": 2}},
      "ops": [{"name": "d", "op": "dense", "dtype": "float32", "M": "16*T", "N": 64,
               "K": 32}]})",
                        "w.json");
}

TEST(KernelBookRunoff, InstancesSettleAndLaterKernelsAreScaledToo) {
  const Workload w = unit_workload();
  InstanceTable table(w, w.ops[0]);
  KernelBook book(table);
  book.add({"dense_f32", {{"BK", 8}}}, LaunchPlan{});
  book.add({"dense_f32", {{"BK", 16}}}, LaunchPlan{});
  book.add_latency(book[0], 0, 4.0);  // a's lucky first timing
  book.add_latency(book[1], 0, 5.0);
  book.add_latency(book[0], 1, 8.0);
  EXPECT_EQ(book.best_kernel()[0], 0);
  EXPECT_EQ(book.latest_runoff(), 0);

  book.add_runoff_latency(book[0], 0, 1, 6.0);
  book.add_runoff_latency(book[1], 0, 1, 5.5);
  EXPECT_EQ(book.latest_runoff(), 1);
  EXPECT_DOUBLE_EQ(book[0].latency_us[0], 6.0);
  EXPECT_DOUBLE_EQ(book[1].latency_us[0], 5.5);
  EXPECT_DOUBLE_EQ(book[0].ordinary_us[0], 4.0);
  EXPECT_EQ(book.best_kernel()[0], 1);
  EXPECT_DOUBLE_EQ(book[0].latency_us[1], 8.0);  // instance 1 had no runoff

  // A kernel timed after the runoff is scaled as the finalists moved (median of 1.5 and 1.1).
  KernelEntry& c = book.add({"dense_f32", {{"BK", 32}}}, LaunchPlan{});
  book.add_latency(c, 0, 4.0);
  EXPECT_DOUBLE_EQ(book[2].latency_us[0], 4.0 * 1.3);
  EXPECT_EQ(book[2].measured, 1u);
  EXPECT_EQ(book.best_kernel()[0], 2);  // 5.2 beats 5.5 fairly
}

TuningRecord record(int64_t t, int bk, double us, int runoff = 0) {
  TuningRecord r;
  r.workload = "w";
  r.op = "d";
  r.mk = {"dense_f32", {{"BK", bk}}};
  r.shape = {{"T", t}};
  r.gemm = {1, 16 * t, 64, 32};
  r.latency_us = us;
  r.runoff = runoff;
  r.device = "NVIDIA H100";
  r.arch = "sm_90";
  r.tool_version = "0.1.0";
  r.timestamp = "2025-01-01T00:00:00.000Z";
  return r;
}

TEST(RunoffRecords, RoundTripAndBadValuesAreRejected) {
  const TuningRecord r = record(1, 8, 3.5, 2);
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j.at("runoff"), 2);
  EXPECT_EQ(TuningRecord::from_json(j).runoff, 2);
  EXPECT_FALSE(record(1, 8, 3.5).to_json().contains("runoff"));  // ordinary: no field
  EXPECT_EQ(TuningRecord::from_json(record(1, 8, 3.5).to_json()).runoff, 0);
  for (const nlohmann::json& bad : {nlohmann::json(0), nlohmann::json(-1), nlohmann::json("1"),
                                    nlohmann::json(1.5)}) {
    nlohmann::json k = j;
    k["runoff"] = bad;
    EXPECT_THROW(TuningRecord::from_json(k), UserError) << bad;
  }
  nlohmann::json failed = j;
  failed["status"] = "timeout";
  failed.erase("latency_us");
  try {
    TuningRecord::from_json(failed);
    FAIL() << "a failure with a runoff number was accepted";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "runoff: only a record with status \"ok\" has one");
  }
}

TEST(RunoffRecords, InspectsBestIsTheLatestRunoffsFastest) {
  TuningLog log;
  log.records = {record(1, 8, 4.0), record(1, 16, 5.0), record(2, 8, 9.0),
                 record(1, 8, 6.0, 1), record(1, 16, 5.5, 1)};
  std::vector<const TuningRecord*> all;
  for (const TuningRecord& r : log.records) all.push_back(&r);
  auto best = best_per_instance(all);
  const TuningRecord* t1 = best.at(InstanceKey{"w", "d", {{"T", 1}}});
  EXPECT_EQ(t1->mk.get("BK"), 16);
  EXPECT_EQ(t1->runoff, 1);
  EXPECT_DOUBLE_EQ(*best.at(InstanceKey{"w", "d", {{"T", 2}}})->latency_us, 9.0);
}

TEST(RunoffRecords, MergeKeepsARunoffApartFromTheOrdinaryTimeOfThePair) {
  TuningLog a, b;
  a.records = {record(1, 8, 4.0), record(1, 8, 6.0, 1)};
  b.records = {record(1, 8, 4.2)};
  MergeResult merged = merge_tuning_logs({{"a", a}, {"b", b}}, false);
  ASSERT_EQ(merged.records.size(), 2u);
  int runoffs = 0;
  for (const TuningRecord& r : merged.records) runoffs += r.runoff == 1;
  EXPECT_EQ(runoffs, 1);
}

TEST(RunoffRecords, BuildSettlesEachInstanceAsTheSearchDoes) {
  const fs::path dir =
      fs::temp_directory_path() / ("dietcode_runoff_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string log = (dir / "w.jsonl").string();
  {
    TuningLogWriter writer(log);
    for (const TuningRecord& r :
         {record(1, 8, 4.0), record(1, 16, 5.0), record(1, 32, 4.8), record(2, 8, 9.0),
          record(2, 16, 9.5),
          // runoff 1 at T=1: BK=8's 4.0 was luck
          record(1, 8, 6.0, 1), record(1, 16, 5.5, 1),
          // runoff 2 at T=2 only
          record(2, 16, 9.0, 2), record(2, 8, 9.9, 2)})
      writer.append(r);
  }
  const Workload w = unit_workload();
  std::vector<std::string> warnings;
  OpChoices c = make_log_choices(w, log, false, warnings)->choices(w, w.ops[0]);
  ASSERT_EQ(c.candidates.size(), 3u);  // by key: BK=16, BK=32, BK=8
  EXPECT_EQ(c.candidates[0].get("BK"), 16);
  EXPECT_EQ(c.candidates[1].get("BK"), 32);
  ASSERT_EQ(c.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(c.samples[0].latency_us[0], 5.5);
  EXPECT_DOUBLE_EQ(c.samples[0].latency_us[1], 4.8 * 1.3);
  EXPECT_DOUBLE_EQ(c.samples[0].latency_us[2], 6.0);
  EXPECT_DOUBLE_EQ(c.samples[1].latency_us[0], 9.0);
  EXPECT_TRUE(std::isnan(c.samples[1].latency_us[1]));
  EXPECT_DOUBLE_EQ(c.samples[1].latency_us[2], 9.9);
  fs::remove_all(dir);
}

TEST(TimingNoise, WhatIsLeftOfEachInstancesChangeOfPhaseIsTwoTimingsNoise) {
  // 1000 instances of 4 finalists, every timing off by 5% (lognormal), and the host 0.6x to
  // 1.8x slower in the runoff than in the rounds, one phase per instance.
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0.0, 0.05);
  std::uniform_real_distribution<double> phase(0.6, 1.8), base(10.0, 5000.0);
  std::vector<std::vector<std::pair<double, double>>> instances(1000);
  for (auto& list : instances) {
    const double p = phase(rng);
    for (int k = 0; k < 4; ++k) {
      const double us = base(rng);
      list.emplace_back(us * std::exp(noise(rng)), p * us * std::exp(noise(rng)));
    }
  }
  std::optional<TimingNoise> n = runoff_timing_noise(instances);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->pairs, 4000u);
  EXPECT_NEAR(n->sd, 0.05, 0.005);
}

TEST(TimingNoise, AllFinalistsMovingAlikeIsNoNoiseAndTooFewPairsTellNothing) {
  // Each instance's finalists all moved by the same factor: the phase, and no noise.
  std::vector<std::vector<std::pair<double, double>>> alike = {
      {{1, 2}, {3, 6}, {5, 10}}, {{4, 3}, {8, 6}}, {{7, 7}, {9, 9}, {2, 2}}};
  std::optional<TimingNoise> n = runoff_timing_noise(alike);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->pairs, 8u);
  EXPECT_DOUBLE_EQ(n->sd, 0.0);
  // An instance with one finalist timed in both says nothing of the noise, nor does a time
  // that is not one; seven pairs are too few.
  std::vector<std::vector<std::pair<double, double>>> few = {
      {{1, 2}, {3, 6}, {5, 11}}, {{4, 3}, {8, 6}, {1, kNaN}}, {{7, 7}, {9, 9}}, {{1, 5}}};
  EXPECT_FALSE(runoff_timing_noise(few));
  EXPECT_FALSE(runoff_timing_noise({}));
}

TEST(RunoffRecords, BuildMeasuresTheTimingNoiseOnTheRunoffs) {
  const fs::path dir =
      fs::temp_directory_path() / ("dietcode_runoff_noise_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string log = (dir / "w.jsonl").string();
  const Workload w = unit_workload();
  std::vector<std::string> warnings;
  {
    TuningLogWriter writer(log);
    for (int bk : {8, 16, 32, 64})
      for (int64_t t : {1, 2}) writer.append(record(t, bk, 10.0 * bk));
  }
  // No runoff yet: nothing measured.
  EXPECT_FALSE(make_log_choices(w, log, false, warnings)->timing_noise());
  // Runoff 1 times every kernel again, 1.5x slower and each off by its own few percent; a
  // later runoff of T = 2 replaces that instance's, 1.2x slower, each off by another few.
  std::vector<std::vector<std::pair<double, double>>> same(2);
  {
    TuningLogWriter writer(log);
    const double off[] = {1.02, 0.97, 1.05, 0.99};
    int i = 0;
    for (int bk : {8, 16, 32, 64}) {
      for (int64_t t : {1, 2}) writer.append(record(t, bk, 15.0 * bk * off[i++ % 4], 1));
      same[0].emplace_back(10.0 * bk, 15.0 * bk * off[(i - 2) % 4]);
    }
    const double later[] = {0.98, 1.01, 1.03, 0.96};
    i = 0;
    for (int bk : {8, 16, 32, 64}) {
      writer.append(record(2, bk, 12.0 * bk * later[i], 2));
      same[1].emplace_back(10.0 * bk, 12.0 * bk * later[i++]);
    }
  }
  std::optional<TimingNoise> n = make_log_choices(w, log, false, warnings)->timing_noise();
  ASSERT_TRUE(n);
  EXPECT_EQ(n->pairs, 8u);
  EXPECT_DOUBLE_EQ(n->sd, runoff_timing_noise(same)->sd);
  EXPECT_GT(n->sd, 0.0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dietcode
