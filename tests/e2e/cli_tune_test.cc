// `dietcode tune` end to end on the simulated device (a TEST DOUBLE of a GPU; NVRTC compiles
// for real): a run writes a log and a summary, the same seed gives the same log, --fresh moves
// the old log aside, a run killed with SIGKILL resumes keeping every completed record byte for
// byte and measuring no pair twice, bad options exit 1 with their message, and without
// --simulate on a machine with no GPU it exits 2 saying so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cuda/driver.h"
#include "e2e/cli_util.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::CommandOptions;
using test::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kWorkload = test::test_data_dir() + "/tune_small.json";

class CliTune : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(tmp_.path());
    // Kernels compiled by one test are hits for the next: the tests share one cache.
    cache_ = test::shared_tune_cache_dir();
  }

  // Runs `dietcode tune WORKLOAD ARGS` in the test's folder.
  CommandResult tune(const std::string& args, const fs::path& cache = {}) {
    CommandOptions options;
    options.cwd = dir_.string();
    options.env = {{"DIETCODE_CACHE_DIR", (cache.empty() ? cache_ : cache).string()}};
    std::vector<std::string> argv = {"tune", kWorkload};
    for (const std::string& w : test::words(args)) argv.push_back(w);
    return test::run_cli(argv, options);
  }

  test::TempDir tmp_;
  fs::path dir_, cache_;
};

TEST_F(CliTune, BadOptionsExitOneWithTheirMessage) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--trials 0", "dietcode tune: --trials: expected a positive integer, got 0"},
      {"--trials -3", "dietcode tune: --trials: expected a positive integer, got -3"},
      {"--time-budget 10x",
       "dietcode tune: --time-budget: expected a duration such as 90s, 10m or 1h30m, got "
       "\"10x\""},
      {"--jobs 0", "dietcode tune: --jobs: expected a positive integer, got 0"},
      {"--runoff -1", "dietcode tune: --runoff: expected 0 (off) or a positive integer, got -1"},
      {"--restarts -2",
       "dietcode tune: --restarts: expected 0 (stop at the first stall) or a positive integer, "
       "got -2"},
      {"--device -1", "dietcode tune: --device: expected a CUDA device ordinal >= 0, got -1"},
      {"--noise 0.1",
       "dietcode tune: --noise needs --simulate (it is the simulated device's measurement "
       "noise)"},
      {"--simulate h100 --noise -1", "dietcode tune: --noise: expected a number >= 0, got -1"},
      {"--simulate h100 --ops up,sideways",
       "dietcode tune: --ops: no op \"sideways\" in workload tune_small (its ops: up, down)"},
      {"--simulate nosuch",
       "dietcode tune: --simulate: unknown GPU \"nosuch\": known GPUs are a100, h100, h200, l4, "
       "rtx4090, t4, or give the path of a GPU config file"},
  };
  for (const auto& [args, message] : cases) {
    CommandResult r = tune(args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_EQ(r.err, message + "\n") << args;
    EXPECT_FALSE(fs::exists(dir_ / "tune_small.jsonl")) << args;
  }
  // A compressed log is for reading (build, inspect, merge): tune refuses before it starts.
  CommandResult gz = tune("--simulate h100 -o tune_small.jsonl.gz");
  EXPECT_EQ(gz.exit_code, 1);
  EXPECT_EQ(gz.err,
            "tune_small.jsonl.gz: a gzip-compressed tuning log can be read but not appended to; "
            "decompress it (gunzip -k) and tune into the .jsonl\n");
  EXPECT_EQ(gz.out, "");
  EXPECT_FALSE(fs::exists(dir_ / "tune_small.jsonl.gz"));
  CommandOptions here;
  here.cwd = dir_.string();
  CommandResult missing =
      test::run_cli({"tune", (dir_ / "nope.json").string(), "--simulate", "h100"}, here);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("nope.json"));
}

// A time budget without --trials lets the budget decide (each op still stops once it stops
// improving): the run shows a cap of 4096 trials, not the default 96. --trials, given, is kept
// (8 trials end long before the budget).
TEST_F(CliTune, ATimeBudgetWithoutTrialsIsNotCutShortByTheDefaultTrials) {
  CommandResult r = tune("--simulate h100 --ops up --seed 1 --time-budget 15s");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("/4096;"));
  EXPECT_THAT(r.out, Not(HasSubstr("trial budget spent")));
  fs::remove(dir_ / "tune_small.jsonl");
  r = tune("--simulate h100 --ops up --seed 1 --time-budget 60s --trials 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("trials 8/8;"));
}

TEST_F(CliTune, WithoutAGpuOrSimulateExitsTwoSayingSo) {
  std::string why;
  if (driver_or_null(&why)) GTEST_SKIP() << "this machine has a CUDA driver";
  CommandResult r = tune("--trials 4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "dietcode tune: no CUDA GPU: " + why +
                       " (use --simulate GPU to run against a model of one)\n");
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(dir_ / "tune_small.jsonl"));
}

TEST_F(CliTune, SimulatedRunWritesALabelledLogAndASummary) {
  CommandResult r = tune("--simulate h100 --ops up --trials 8 --seed 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json summary = json::parse(r.out);
  EXPECT_EQ(summary["workload"], "tune_small");
  EXPECT_EQ(summary["log"], "tune_small.jsonl");
  EXPECT_EQ(summary["device"]["name"], "simulated NVIDIA H100 80GB HBM3");
  EXPECT_EQ(summary["device"]["simulated"], true);
  ASSERT_EQ(summary["ops"].size(), 1u);
  const json& op = summary["ops"][0];
  EXPECT_EQ(op["op"], "up");
  EXPECT_EQ(op["trials"], 8);
  EXPECT_EQ(op["stopped"], "trial budget spent");
  EXPECT_EQ(op["restarts"], 0);
  ASSERT_EQ(op["assignment"].size(), 16u);
  EXPECT_EQ(op["assignment"][0]["shape"], json({{"T", 1}}));
  EXPECT_GT(op["weighted_mean_latency_us"].get<double>(), 0);
  EXPECT_GT(op["tflops"].get<double>(), 0);
  EXPECT_GE(op["kernels_used"].get<int>(), 1);
  // Progress went to stderr, as plain lines (not a terminal).
  EXPECT_THAT(r.err, HasSubstr("up: round 1: 8 kernels (8 new)"));
  EXPECT_THAT(r.err, HasSubstr("up: runoff 1: the "));
  EXPECT_THAT(r.err, HasSubstr("SIMULATED"));
  ASSERT_TRUE(op.contains("runoff"));
  EXPECT_EQ(op["runoff"]["number"], 1);
  const int runoff_pairs = op["runoff"]["pairs"].get<int>();
  EXPECT_GE(runoff_pairs, 16);  // every instance's best at least
  EXPECT_LE(runoff_pairs, 4 * 16);

  std::istringstream log(test::read_file_or_empty(dir_ / "tune_small.jsonl"));
  std::string line;
  std::set<std::string> kernels;
  int measurements = 0, runoff = 0, quality = 0;
  while (std::getline(log, line)) {
    const json j = json::parse(line);
    EXPECT_EQ(j["simulated"], true);
    EXPECT_EQ(j["arch"], "sm_90");
    if (j["kind"] == "measurement" && j.contains("runoff")) {
      EXPECT_EQ(j["runoff"], 1);
      ++runoff;
    } else if (j["kind"] == "measurement") {
      ++measurements;
      kernels.insert(j["mk"].dump());
    } else {
      EXPECT_EQ(j["kind"], "cost_model_quality");
      // The knobs the search's model fitted: a GPU's partial-wave gamma and launch overhead.
      EXPECT_GE(j["analytic"]["underfilled_sm_gamma"].get<double>(), 0.0);
      EXPECT_GE(j["analytic"]["launch_overhead_us"].get<double>(), 0.0);
      EXPECT_FALSE(j["analytic"].contains("pack_ns_per_element"));
      ++quality;
    }
  }
  EXPECT_EQ(kernels.size(), 8u);
  EXPECT_EQ(measurements, 8 * 16);
  EXPECT_EQ(runoff, runoff_pairs);
  EXPECT_EQ(quality, 1);

  // The text summary, from the log alone: nothing left to measure, no second runoff.
  CommandResult again = tune("--simulate h100 --ops up --trials 8 --seed 1");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("resuming from " + std::to_string(128 + runoff) +
                                   " records of this workload and device"));
  EXPECT_THAT(again.out, HasSubstr("this run compiled 0 kernels"));
  EXPECT_THAT(again.out, HasSubstr("SIMULATED: these latencies come from a model"));
  const std::string unchanged = test::read_file_or_empty(dir_ / "tune_small.jsonl");
  EXPECT_EQ(std::count(unchanged.begin(), unchanged.end(), '\n'), measurements + runoff + quality);
  CommandResult quiet = tune("--simulate h100 --ops up --trials 8 -q");
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_EQ(quiet.out + quiet.err, "");
}

// tune grades as bench does: L2 flushed by default, --l2 warm on request; every record says
// which, and a run in the other regime does not resume from them.
TEST_F(CliTune, EveryRecordNamesItsL2RegimeAndResumingKeepsToOne) {
  CommandResult flushed = tune("--simulate h100 --ops up --trials 4 --seed 1 --runoff 0");
  ASSERT_EQ(flushed.exit_code, 0) << flushed.err;
  EXPECT_THAT(flushed.out, HasSubstr("L2 flushed before every timing"));
  CommandResult warm = tune("--simulate h100 --ops up --trials 4 --seed 1 --runoff 0 --l2 warm");
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  EXPECT_THAT(warm.out, HasSubstr("(sm_90, L2 warm)"));
  EXPECT_THAT(warm.err + warm.out,
              HasSubstr("ignoring 64 records timed with the L2 flushed: this run times with the "
                        "L2 warm (--l2)"));
  std::istringstream log(test::read_file_or_empty(dir_ / "tune_small.jsonl"));
  std::map<std::string, int> regimes;
  for (std::string line; std::getline(log, line);) {
    const json j = json::parse(line);
    if (j["kind"] == "measurement") ++regimes[j["l2"].get<std::string>()];
  }
  EXPECT_EQ(regimes, (std::map<std::string, int>{{"flush", 64}, {"warm", 64}}));
  CommandResult bad = tune("--simulate h100 --l2 cold");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--l2"));
}

// --objective geomean searches for the weighted geometric mean (search/objective.h); the log
// is the same kind of log, and a name tune does not know is bad input.
TEST_F(CliTune, TheGeometricMeanObjectiveTunesAndAnUnknownOneIsBadInput) {
  CommandResult geomean = tune("--simulate h100 --ops up --trials 8 --seed 1 --runoff 0 --objective geomean");
  ASSERT_EQ(geomean.exit_code, 0) << geomean.err;
  std::istringstream log(test::read_file_or_empty(dir_ / "tune_small.jsonl"));
  int measurements = 0;
  for (std::string line; std::getline(log, line);)
    measurements += json::parse(line)["kind"] == "measurement";
  EXPECT_GT(measurements, 0);
  CommandResult bad = tune("--simulate h100 --objective fastest");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--objective"));
}

TEST_F(CliTune, SameSeedSameLogModuloTimestamps) {
  // Two rounds, so the retrained model and the evolved population take part.
  const std::string args = "--simulate h100 --noise 0.05 --ops up --trials 18 --seed 1 -q";
  ASSERT_EQ(tune(args + " -o a.jsonl").exit_code, 0);
  ASSERT_EQ(tune(args + " -o b.jsonl").exit_code, 0);
  const auto a = test::log_without_timestamps(test::read_file_or_empty(dir_ / "a.jsonl"));
  const size_t runoff = size_t(std::count_if(a.begin(), a.end(), [](const std::string& line) {
    return line.find("\"runoff\":1") != std::string::npos;
  }));
  EXPECT_GE(runoff, 16u);  // the runoff's records are part of what must repeat
  EXPECT_EQ(a.size(), 18u * 16 + runoff + 1);
  EXPECT_EQ(a, test::log_without_timestamps(test::read_file_or_empty(dir_ / "b.jsonl")));
}

TEST_F(CliTune, FreshMovesTheOldLogAside) {
  const std::string args = "--simulate h100 --ops up --trials 8 --seed 1";
  ASSERT_EQ(tune(args + " -q").exit_code, 0);
  const std::string old = test::read_file_or_empty(dir_ / "tune_small.jsonl");
  CommandResult fresh = tune(args + " --fresh");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  std::vector<fs::path> moved;
  for (const auto& entry : fs::directory_iterator(dir_))
    if (entry.path().extension() == ".bak") moved.push_back(entry.path());
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(test::read_file_or_empty(moved[0]), old);
  EXPECT_THAT(fresh.err, HasSubstr("tune_small.jsonl: moved the old log aside to " +
                                   moved[0].filename().string()));
  EXPECT_THAT(fresh.out, HasSubstr("new records are appended as they arrive"));
  // Started over: the same seed measured the same kernels again, into the new log.
  EXPECT_EQ(test::log_without_timestamps(test::read_file_or_empty(dir_ / "tune_small.jsonl")),
            test::log_without_timestamps(old));
}

TEST_F(CliTune, KilledRunResumesKeepingEveryCompletedRecordAndMeasuringNoPairTwice) {
  // A cache of its own, so compiling is slow enough to be caught between two rounds.
  const fs::path cache = dir_ / "cache";
  const std::string log = (dir_ / "killed.jsonl").string();
  ASSERT_TRUE(test::run_cli_killed_once_written(
      {"tune", kWorkload, "--simulate", "h100", "--ops", "down", "--trials", "18", "--seed", "5",
       "--runoff", "0", "-q", "-o", log},
      {{"DIETCODE_CACHE_DIR", cache.string()}}, log, 0, 60))
      << "the run finished before it could be killed";
  const std::string before = test::read_file_or_empty(log);
  ASSERT_FALSE(before.empty());
  const std::string complete = before.substr(0, before.rfind('\n') + 1);

  CommandResult resumed =
      tune("--simulate h100 --ops down --trials 18 --seed 5 --runoff 0 --json -o killed.jsonl",
           cache);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const std::string after = test::read_file_or_empty(log);
  EXPECT_EQ(after.substr(0, complete.size()), complete);
  EXPECT_EQ(json::parse(resumed.out)["ops"][0]["trials"], 18);

  std::map<std::string, std::set<int64_t>> shapes;
  std::istringstream in(after);
  std::string line;
  size_t records = 0;
  while (std::getline(in, line)) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || j["kind"] != "measurement") continue;  // a torn line, a summary
    ++records;
    EXPECT_TRUE(shapes[j["mk"].dump()].insert(j["shape"]["T"].get<int64_t>()).second)
        << "measured twice: " << line;
  }
  // 18 trials, but a kernel whose binary is identical to one already measured counts as a
  // trial without a record of its own; where the kill lands changes which candidates the
  // resumed run draws, so such a duplicate may or may not occur.
  EXPECT_LE(shapes.size(), 18u);
  EXPECT_GE(shapes.size(), 16u);
  for (const auto& [mk, ts] : shapes) EXPECT_EQ(ts.size(), 16u) << mk;
  EXPECT_EQ(records, shapes.size() * 16u);
}

}  // namespace
}  // namespace dietcode
