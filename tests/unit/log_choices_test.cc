// The build side of the tuning log: which kernels and times a pack is built from.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "pack/choices.h"
#include "search/tuning_log.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

class LogChoicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dietcode_log_choices_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    log_ = (dir_ / "w.jsonl").string();
    w_ = parse_workload(R"({"name": "w", "shape_vars": {"T": {"min": 1, "max": 4}},
        "ops": [{"name": "d", "op": "dense", "dtype": "float32", "M": "16*T", "N": 64,
                 "K": 32}]})",
                        "w.json");
  }
  void TearDown() override { fs::remove_all(dir_); }

  MicroKernel mk(int bk) { return {"dense_f32", {{"BK", bk}}}; }

  void add(const MicroKernel& k, int64_t t, MeasureStatus status, double us, bool simulated = false,
           int64_t n = 64) {
    TuningRecord r;
    r.workload = "w";
    r.op = "d";
    r.mk = k;
    r.shape = {{"T", t}};
    r.gemm = {1, 16 * t, n, 32};
    r.status = status;
    if (status == MeasureStatus::kOk) r.latency_us = us;
    r.device = "NVIDIA H100";
    r.arch = "sm_90";
    r.simulated = simulated;
    r.tool_version = "0.1.0";
    r.timestamp = "2025-01-01T00:00:00.000Z";
    TuningLogWriter(log_).append(r);
  }

  OpChoices choices(bool allow_simulated = false) {
    auto provider = make_log_choices(w_, log_, allow_simulated, warnings_);
    description_ = provider->description();
    return provider->choices(w_, w_.ops[0]);
  }

  fs::path dir_;
  std::string log_;
  Workload w_;
  std::vector<std::string> warnings_;
  std::string description_;
};

TEST_F(LogChoicesTest, LatestTimePerKernelAndInstance) {
  add(mk(8), 1, MeasureStatus::kOk, 5.0);
  add(mk(8), 2, MeasureStatus::kOk, 6.0);
  add(mk(16), 1, MeasureStatus::kOk, 4.0);
  add(mk(8), 1, MeasureStatus::kOk, 4.5);  // a resumed run measured it again: latest wins
  OpChoices c = choices();
  ASSERT_EQ(c.candidates.size(), 2u);
  EXPECT_EQ(c.candidates[0].key(), "dense_f32:BK=16");  // ordered by key
  ASSERT_EQ(c.samples.size(), 2u);                      // T = 3, 4 have no time
  EXPECT_EQ(c.samples[0].values, std::vector<int64_t>{1});
  EXPECT_DOUBLE_EQ(c.samples[0].latency_us[1], 4.5);
  EXPECT_DOUBLE_EQ(c.samples[0].latency_us[0], 4.0);
  EXPECT_TRUE(std::isnan(c.samples[1].latency_us[0]));
  EXPECT_DOUBLE_EQ(c.samples[0].weight, 0.25);
  EXPECT_EQ(description_, "measured on NVIDIA H100 (sm_90)");
}

TEST_F(LogChoicesTest, AKernelThatEverFailedIsDroppedATimeoutOnlyLeavesAGap) {
  add(mk(8), 1, MeasureStatus::kOk, 5.0);
  add(mk(8), 2, MeasureStatus::kWrongResult, 0);
  add(mk(16), 1, MeasureStatus::kOk, 4.0);
  add(mk(16), 2, MeasureStatus::kTimeout, 0);
  add(mk(32), 1, MeasureStatus::kLaunchError, 0);
  OpChoices c = choices();
  ASSERT_EQ(c.candidates.size(), 1u);
  EXPECT_EQ(c.candidates[0].key(), "dense_f32:BK=16");
  ASSERT_EQ(c.samples.size(), 1u);
}

TEST_F(LogChoicesTest, IgnoresOtherShapesAndStaleDefinitions) {
  add(mk(8), 1, MeasureStatus::kOk, 5.0);
  add(mk(8), 9, MeasureStatus::kOk, 5.0);             // T = 9 is not an instance
  add(mk(8), 2, MeasureStatus::kOk, 5.0, false, 32);  // measured when N was 32
  OpChoices c = choices();
  EXPECT_EQ(c.samples.size(), 1u);
  ASSERT_EQ(warnings_.size(), 2u);
  EXPECT_EQ(warnings_[0], log_ +
                              ": op d: 1 record(s) for shapes that are not instances of the "
                              "workload ignored");
  EXPECT_EQ(warnings_[1], log_ +
                              ": op d: 1 record(s) measured for another definition of the "
                              "op ignored");
}

TEST_F(LogChoicesTest, RefusesSimulatedMeasurementsUnlessAllowed) {
  add(mk(8), 1, MeasureStatus::kOk, 5.0, true);
  try {
    choices();
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              log_ +
                  ": 1 measurement(s) come from a simulated device (dietcode tune "
                  "--simulate), a test double, not a GPU; pass --allow-simulated to build "
                  "from them anyway");
  }
  OpChoices c = choices(true);
  EXPECT_EQ(c.candidates.size(), 1u);
  EXPECT_EQ(description_,
            "simulated (a test double's numbers, not GPU measurements) on NVIDIA H100 (sm_90)");
}

TEST_F(LogChoicesTest, TornLastLineIsSkippedWithAWarning) {
  add(mk(8), 1, MeasureStatus::kOk, 5.0);
  std::ofstream(log_, std::ios::app) << R"({"kind": "measurement", "op": "d", "mk)";
  OpChoices c = choices();
  EXPECT_EQ(c.candidates.size(), 1u);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_EQ(warnings_[0].rfind(log_ + ":2: skipped:", 0), 0u) << warnings_[0];
}

TEST_F(LogChoicesTest, MissingLogIsAUserError) {
  try {
    choices();
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), log_ + ": no such tuning log");
  }
}

}  // namespace
}  // namespace dietcode
