// `dietcode tune --devices` end to end on a simulated host (TEST DOUBLES of GPUs, with the
// artificial speeds and failures DIETCODE_SIMULATED_GPUS gives them; NVRTC compiles for real):
// three GPUs write the log one GPU writes, whatever their speeds; a GPU that dies mid-run
// changes nothing in the log; losing every GPU exits 2; a run on several GPUs killed with
// SIGKILL resumes keeping every completed line byte for byte; bad lists and mixed models exit 1
// with their message; and on a host with a (stand-in) driver, the ordinals are checked against
// the GPUs the driver sees.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

const std::string kWorkload = test::test_data_dir() + "/tune_small.json";

class CliTuneDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(tmp_.path());
    cache_ = test::shared_tune_cache_dir();
  }

  // `dietcode tune WORKLOAD ARGS` in the test's folder, on a simulated host described by
  // `host` (DIETCODE_SIMULATED_GPUS; empty: the default host of eight plain GPUs).
  CommandResult tune(const std::string& args, const std::string& host = "") {
    CommandOptions options;
    options.cwd = dir_.string();
    options.env = {{"DIETCODE_CACHE_DIR", cache_.string()}};
    if (!host.empty())
      options.env.push_back({"DIETCODE_SIMULATED_GPUS", host});
    else
      options.unset_env.push_back("DIETCODE_SIMULATED_GPUS");
    std::vector<std::string> argv = {"tune", kWorkload};
    for (const std::string& w : test::words(args)) argv.push_back(w);
    return test::run_cli(argv, options);
  }

  test::TempDir tmp_;
  fs::path dir_, cache_;
};

// Two rounds with noise, so the retrained model and the evolved population take part.
const std::string kArgs = "--simulate h100 --noise 0.05 --ops up --trials 24 --seed 7";

TEST_F(CliTuneDevices, ThreeGpusWriteTheLogOneGpuWritesWhateverTheirSpeeds) {
  ASSERT_EQ(tune(kArgs + " -q -o one.jsonl --devices 0").exit_code, 0);
  const std::vector<std::string> one =
      test::log_without_timestamps(test::read_file_or_empty(dir_ / "one.jsonl"));
  ASSERT_GT(one.size(), 16u * 16);

  // GPU 0 slow, GPU 1 fast, GPU 2 in between: results arrive out of order.
  CommandResult three =
      tune(kArgs + " --json -o three.jsonl --devices 0,1,2", "delay_ms=30;delay_ms=1;delay_ms=8");
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_EQ(test::log_without_timestamps(test::read_file_or_empty(dir_ / "three.jsonl")), one);
  const json summary = json::parse(three.out);
  EXPECT_EQ(summary["device"]["ordinals"], json::array({0, 1, 2}));
  EXPECT_THAT(three.err, HasSubstr("on 3 x simulated NVIDIA H100 80GB HBM3 (sm_90, GPUs 0,1,2, L2 flushed"));
  EXPECT_THAT(three.err, HasSubstr("GPU 1: "));

  // Any arrival order: the slow one first this time, and GPUs chosen from a larger host.
  CommandResult other = tune(kArgs + " -q -o other.jsonl --devices 3,1", "");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(test::log_without_timestamps(test::read_file_or_empty(dir_ / "other.jsonl")), one);
}

TEST_F(CliTuneDevices, AGpuThatDiesMidRunChangesNothingInTheLog) {
  ASSERT_EQ(tune(kArgs + " -q -o one.jsonl").exit_code, 0);
  // GPU 1 dies on its first job. The first round has four jobs and the other three GPUs are
  // slow, so one of the four is GPU 1's.
  CommandResult run = tune(kArgs + " -o lost.jsonl --devices all",
                           "delay_ms=10;fail_after=0;delay_ms=10;delay_ms=10");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(test::log_without_timestamps(test::read_file_or_empty(dir_ / "lost.jsonl")),
            test::log_without_timestamps(test::read_file_or_empty(dir_ / "one.jsonl")));
  EXPECT_THAT(run.out,
              HasSubstr("GPU 1: 0 jobs (0 kernels), 0.0 s measuring, then dropped: simulated "
                        "GPU 1: the measurement worker died and cannot be restarted (a test "
                        "double told to fail after 0 jobs)\n"));
}

TEST_F(CliTuneDevices, LosingEveryGpuExitsTwoKeepingWhatWasMeasured) {
  CommandResult run = tune(kArgs + " -q -o lost.jsonl --devices 0,1", "fail_after=1;fail_after=2");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_THAT(run.err,
              ::testing::MatchesRegex("dietcode tune: every one of the 2 GPUs failed; the last: "
                                      "simulated GPU [01]: the measurement worker died and "
                                      "cannot be restarted \\(a test double told to fail after "
                                      "[12] jobs\\)\n"));
  EXPECT_FALSE(test::read_file_or_empty(dir_ / "lost.jsonl").empty());
}

TEST_F(CliTuneDevices, BadListsAndMixedModelsExitOneWithTheirMessage) {
  const std::map<std::pair<std::string, std::string>, std::string> cases = {
      {{"--devices 0,0", ""}, "dietcode tune: --devices: GPU 0 is listed twice\n"},
      {{"--devices x", ""},
       "dietcode tune: --devices: expected \"all\" or GPU ordinals separated by commas (such as "
       "0,1,3), got \"x\"\n"},
      {{"--devices 1,-2", ""},
       "dietcode tune: --devices: expected \"all\" or GPU ordinals separated by commas (such as "
       "0,1,3), got \"1,-2\"\n"},
      {{"--devices 5", ";"}, "dietcode tune: --devices: no GPU 5: this host has 2 GPUs (0 to 1)\n"},
      {{"--devices 0,2", ";;gpu=a100"},
       "dietcode tune: --devices: GPU 0 (NVIDIA H100 80GB HBM3, sm_90, 132 SMs) and GPU 2 "
       "(NVIDIA A100-SXM4-80GB, sm_80, 108 SMs) are different GPU models; a run tunes one "
       "model: start one run per model, each with its own log\n"},
      {{"--device 1 --devices 0,1", ""},
       "dietcode tune: --device and --devices: give one of them\n"},
      {{"--devices 0", "speed=2"},
       "dietcode tune: DIETCODE_SIMULATED_GPUS: GPU 0: cannot read \"speed=2\" (expected gpu=ID, "
       "delay_ms=MS or fail_after=N)\n"},
  };
  for (const auto& [input, message] : cases) {
    CommandResult run = tune("--simulate h100 --ops up --trials 4 " + input.first, input.second);
    EXPECT_EQ(run.exit_code, 1) << input.first << ": " << run.summary();
    EXPECT_EQ(run.err, message) << input.first;
    EXPECT_FALSE(fs::exists(dir_ / "tune_small.jsonl")) << input.first;
  }
}

TEST_F(CliTuneDevices, KilledRunOnSeveralGpusResumesKeepingEveryCompletedLine) {
  const std::string log = (dir_ / "killed.jsonl").string();
  // Slow, uneven GPUs: the kill lands while results wait behind an unfinished job; it waits
  // for the first records of a measured job.
  ASSERT_TRUE(test::run_cli_killed_once_written(
      {"tune", kWorkload, "--simulate", "h100", "--ops", "down", "--trials", "32", "--seed", "5",
       "--devices", "0,1,2", "--runoff", "0", "-q", "-o", log},
      {{"DIETCODE_CACHE_DIR", cache_.string()},
       {"DIETCODE_SIMULATED_GPUS", "delay_ms=40;delay_ms=5;delay_ms=15"}},
      log, 20000, 120))
      << "the run finished before it could be killed";
  const std::string before = test::read_file_or_empty(log);
  ASSERT_FALSE(before.empty());
  const std::string complete = before.substr(0, before.rfind('\n') + 1);

  CommandResult resumed =
      tune("--simulate h100 --ops down --trials 32 --seed 5 --devices 0,1,2 --runoff 0 --json "
           "-o killed.jsonl",
           "delay_ms=4;delay_ms=1;delay_ms=2");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const std::string after = test::read_file_or_empty(log);
  EXPECT_EQ(after.substr(0, complete.size()), complete);
  EXPECT_EQ(json::parse(resumed.out)["ops"][0]["trials"], 32);

  std::map<std::string, std::set<int64_t>> shapes;
  std::istringstream in(after);
  std::string line;
  while (std::getline(in, line)) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || j["kind"] != "measurement") continue;  // a torn line, a summary
    EXPECT_TRUE(shapes[j["mk"].dump()].insert(j["shape"]["T"].get<int64_t>()).second)
        << "measured twice: " << line;
  }
  for (const auto& [mk, ts] : shapes) EXPECT_EQ(ts.size(), 16u) << mk;
}

// The stand-in driver (tests/data/fake_driver, a TEST DOUBLE of one GPU), built beside the
// tests; without it this check is skipped.
TEST_F(CliTuneDevices, OrdinalsAreCheckedAgainstTheGpusTheDriverSees) {
  const fs::path fake = fs::path(test::cli_path()).parent_path() / "tests" / "fake_driver";
  if (!fs::exists(fake / "libcuda.so.1")) GTEST_SKIP() << "no stand-in driver at " << fake;
  CommandOptions options;
  options.cwd = dir_.string();
  options.env = {{"DIETCODE_CACHE_DIR", cache_.string()}, {"LD_LIBRARY_PATH", fake.string()}};
  CommandResult run = test::run_cli({"tune", kWorkload, "--devices", "0,1"}, options);
  EXPECT_EQ(run.exit_code, 1) << run.summary();
  EXPECT_EQ(run.err, "dietcode tune: --devices: no GPU 1: this host has 1 GPU (0)\n");
}

TEST_F(CliTuneDevices, WithoutADriverAListExitsTwoSayingSo) {
  std::string why;
  if (driver_or_null(&why)) GTEST_SKIP() << "this machine has a CUDA driver";
  CommandResult run = tune("--devices all");
  EXPECT_EQ(run.exit_code, 2) << run.summary();
  EXPECT_EQ(run.err, "dietcode tune: no CUDA GPU: the measurement worker cannot count the GPUs: " +
                         why + " (use --simulate GPU to run against a model of one)\n");
  EXPECT_FALSE(fs::exists(dir_ / "tune_small.jsonl"));
}

}  // namespace
}  // namespace dietcode
