// `dietcode tune --target cpu` end to end, for real: the system C++ compiler builds the x86
// candidates and this machine's cores time them in the measuring worker. Checks that the log
// names the CPU and its ISA level, that every record is a measurement of this run's regime,
// that a killed run resumes without measuring a pair twice, and that options meant for the
// other target are refused with one line. Kept small (a few kernels of a tiny workload): CI
// runs it on 2 cores.
#include <gtest/gtest.h>
#include <gmock/gmock.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/cli_util.h"
#include "x86/host_cpu.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::CommandOptions;
using test::CommandResult;
using ::testing::HasSubstr;

const std::string kWorkload = test::test_data_dir() + "/tune_small.json";

std::vector<json> measurements(const std::string& log_text) {
  std::vector<json> out;
  std::istringstream in(log_text);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("kind", "") == "measurement") out.push_back(j);
  }
  return out;
}

class CliTuneCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (detect_host_cpu().isa_level_number < 3)
      GTEST_SKIP() << "this CPU is below x86-64-v3, which every CPU template needs";
    dir_ = fs::path(tmp_.path());
    cache_ = fs::temp_directory_path() / ("dietcode_cli_tune_cpu_cache_" + std::to_string(getuid()));
  }

  // Tunes `workload` (the shared tiny workload unless given; a relative path is in dir_).
  CommandResult tune(const std::string& args, const fs::path& cache = {},
                     const std::string& workload = kWorkload) {
    CommandOptions options;
    options.cwd = dir_.string();
    options.env = {{"DIETCODE_CACHE_DIR", (cache.empty() ? cache_ : cache).string()}};
    std::vector<std::string> argv = {"tune", workload};
    for (const std::string& w : test::words(args)) argv.push_back(w);
    return test::run_cli(argv, options);
  }

  test::TempDir tmp_;
  fs::path dir_, cache_;
};

TEST_F(CliTuneCpu, RealRunNamesTheCpuAndItsIsaLevelInEveryRecord) {
  CommandResult r =
      tune("--target cpu --threads 2 --ops down --trials 4 --seed 3 --json -o cpu.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_THAT(r.err, HasSubstr("tuning tune_small (1 op) on "));
  EXPECT_THAT(r.err, HasSubstr("2 threads, caches evicted before every timing)"));
  const json summary = json::parse(r.out);
  EXPECT_EQ(summary["ops"][0]["trials"], 4);

  const HostCpu cpu = detect_host_cpu();
  const std::vector<json> records = measurements(test::read_file(dir_ / "cpu.jsonl"));
  ASSERT_FALSE(records.empty());
  size_t ok = 0;
  for (const json& j : records) {
    EXPECT_EQ(j["device"], cpu.model_name);
    EXPECT_EQ(j["arch"], cpu.isa_level);
    EXPECT_EQ(j["simulated"], false);
    EXPECT_EQ(j["l2"], "flush");
    EXPECT_THAT(j["mk"]["template"].get<std::string>(), testing::StartsWith("x86_"));
    if (j["status"] == "ok") {
      ++ok;
      EXPECT_GT(j["latency_us"].get<double>(), 0);
    }
  }
  EXPECT_GE(ok, 16u) << "at least one kernel timed on all 16 instances";

  // The log makes a CPU pack for this CPU's level (its target read from the records; "up",
  // untuned, gets the default kernel; a pack for a level with no measured kernel of "down" is
  // refused), which a plain C program
  // loads with dlopen and runs on host buffers, checking the result against its own reference.
  CommandResult built = test::run_cli(
      {"build", kWorkload, "--log", (dir_ / "cpu.jsonl").string(), "--arch", cpu.isa_level,
       "-o", (dir_ / "libsmall.so").string()},
      CommandOptions{dir_.string(), {{"DIETCODE_CACHE_DIR", cache_.string()}}});
  ASSERT_EQ(built.exit_code, 0) << built.summary();
  const std::string example = (dir_ / "run_pack").string();
  CommandResult cc = test::run_command(
      {"cc", "-std=c99", "-O1", "-o", example, test::source_dir() + "/examples/c/run_pack.c",
       "-ldl", "-lm"});
  ASSERT_EQ(cc.exit_code, 0) << cc.summary();
  for (const char* t : {"T=1", "T=7", "T=16", "T=29"}) {
    CommandResult run = test::run_command({example, (dir_ / "libsmall.so").string(), "down", t});
    EXPECT_EQ(run.exit_code, 0) << t << ": " << run.summary() << run.out;
  }
}

// The CPU times a kernel on at most 24 instances. With more, the kernels in use are timed on
// the rest at the end, so that build has a measured time from them on every instance.
TEST_F(CliTuneCpu, KernelsInUseAreTimedOnEveryInstanceSoMoreThan24InstancesBuild) {
  const std::string workload = (dir_ / "many.json").string();
  {
    std::ofstream(workload) << R"({"name": "many", "shape_vars": {"T": {"min": 1, "max": 40}},
      "ops": [{"name": "d", "op": "dense", "dtype": "float32", "M": "T", "N": 48, "K": 40}]})";
  }
  const CommandOptions options{dir_.string(), {{"DIETCODE_CACHE_DIR", cache_.string()}}};
  CommandResult r = test::run_cli({"tune", workload, "--target", "cpu", "--trials", "4", "--seed",
                                   "2", "-o", (dir_ / "many.jsonl").string()},
                                  options);
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_THAT(r.out + r.err, HasSubstr("timed on every instance they lacked"));
  std::map<std::string, std::set<int64_t>> timed;  // kernel -> instances with a time
  for (const json& j : measurements(test::read_file(dir_ / "many.jsonl")))
    if (j["status"] == "ok") timed[j["mk"].dump()].insert(j["shape"]["T"].get<int64_t>());
  size_t complete = 0;
  for (const auto& [kernel, instances] : timed) {
    EXPECT_TRUE(instances.size() == 24 || instances.size() == 40) << kernel << ": " << instances.size();
    complete += instances.size() == 40;
  }
  EXPECT_GE(complete, 1u);
  CommandResult built = test::run_cli({"build", workload, "--log", (dir_ / "many.jsonl").string(),
                                       "--arch", detect_host_cpu().isa_level, "-o",
                                       (dir_ / "libmany.so").string()},
                                      options);
  EXPECT_EQ(built.exit_code, 0) << built.summary();
}

TEST_F(CliTuneCpu, KilledRunResumesMeasuringNoPairTwice) {
  const fs::path cache = dir_ / "cache";  // its own: slow enough to be caught between rounds
  const std::string log = (dir_ / "killed.jsonl").string();
  ASSERT_TRUE(test::run_cli_killed_once_written(
      {"tune", kWorkload, "--target", "cpu", "--ops", "up", "--trials", "8", "--seed", "5",
       "--runoff", "0", "-q", "-o", log},
      {{"DIETCODE_CACHE_DIR", cache.string()}}, log, 0, 240))
      << "the run finished before it could be killed";
  const std::string before = test::read_file_or_empty(log);
  ASSERT_FALSE(before.empty());
  const std::string complete = before.substr(0, before.rfind('\n') + 1);

  CommandResult resumed =
      tune("--target cpu --ops up --trials 8 --seed 5 --runoff 0 --json -o killed.jsonl", cache);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.summary();
  EXPECT_THAT(resumed.err, HasSubstr("resuming from"));
  const std::string after = test::read_file_or_empty(log);
  EXPECT_EQ(after.substr(0, complete.size()), complete);
  EXPECT_EQ(json::parse(resumed.out)["ops"][0]["trials"], 8);
  std::map<std::string, std::set<int64_t>> shapes;
  for (const json& j : measurements(after))
    EXPECT_TRUE(shapes[j["mk"].dump()].insert(j["shape"]["T"].get<int64_t>()).second)
        << "measured twice: " << j.dump();
  EXPECT_GE(shapes.size(), 1u);
}

// Records of templates a run does not offer (AVX-512 ones under --arch x86-64-v3) are left out
// of its search, so they can never become the incumbent of an AVX2-only tune.
TEST_F(CliTuneCpu, ArchCapLeavesHigherLevelRecordsOutOfAResumedSearch) {
  if (detect_host_cpu().isa_level_number < 4)
    GTEST_SKIP() << "needs an AVX-512 (x86-64-v4) CPU to measure kernels above the cap";
  CommandResult r = tune("--target cpu --threads 2 --ops down --trials 2 --seed 5 -o cpu.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  size_t avx512 = 0;
  for (const json& j : measurements(test::read_file(dir_ / "cpu.jsonl")))
    avx512 += j["mk"]["template"].get<std::string>().rfind("x86_avx512", 0) == 0;
  if (avx512 == 0) GTEST_SKIP() << "the first run measured no AVX-512 kernel (seeded; rare)";

  r = tune("--target cpu --arch x86-64-v3 --threads 2 --ops down --trials 2 --seed 5 "
           "-o cpu.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_THAT(r.out, HasSubstr("2 threads, kernels up to x86-64-v3, caches evicted"));
  EXPECT_THAT(r.err, HasSubstr(std::to_string(avx512) +
                               " earlier records measured templates this run does not offer"));
  size_t avx2 = 0;
  for (const json& j : measurements(test::read_file(dir_ / "cpu.jsonl")))
    avx2 += j["mk"]["template"].get<std::string>().rfind("x86_avx2", 0) == 0;
  EXPECT_GT(avx2, 0u) << "the capped run measured its own trials";
}

// --constant-weights: BLIS kernels are checked and timed reading weights packed once (their
// constant-weights entries, on panels the worker packs outside the timing), every record says
// so, and a run without the flag resumes from none of them. The op's weights are stored K x N,
// which only the BLIS form reads, so every kernel the search picks is one that packs them.
TEST_F(CliTuneCpu, ConstantWeightsAreTimedPackedOnceAndRecordedAsARegime) {
  {
    std::ofstream w(dir_ / "kn.json");
    w << R"({"name": "kn", "shape_vars": {"T": {"min": 1, "max": 16}},
             "ops": [{"name": "down", "op": "dense", "dtype": "float32", "M": "8*T", "N": 128,
                      "K": 256, "weight_layout": "KN", "epilogue": "bias"}]})";
  }
  CommandResult r = tune("--target cpu --threads 2 --trials 4 --seed 3 --constant-weights "
                         "-o cw.jsonl",
                         {}, "kn.json");
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_THAT(r.out + r.err, HasSubstr("weights packed once (constant)"));
  const std::vector<json> records = measurements(test::read_file(dir_ / "cw.jsonl"));
  ASSERT_FALSE(records.empty());
  for (const json& j : records) {
    EXPECT_EQ(j.value("weights", ""), "constant");
    EXPECT_EQ(j["status"], "ok") << j.dump();  // the prepacked results matched the reference
    const std::string tmpl = j["mk"]["template"];
    EXPECT_TRUE(tmpl == "x86_avx2_f32" || tmpl == "x86_avx512_f32") << tmpl;
  }
  r = tune("--target cpu --threads 2 --trials 1 --seed 3 -o cw.jsonl", {}, "kn.json");
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_THAT(r.out + r.err, HasSubstr("records timed with the weights constant: this run times them "
                               "packed in every call"));
}

TEST_F(CliTuneCpu, OptionsOfTheOtherTargetAreRefusedWithOneLine) {
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--target cpu --simulate h100", "--simulate is for GPUs; --target cpu tunes on this host"},
           {"--target cpu --devices all", "--devices is for GPUs"},
           {"--target cpu --threads 0", "--threads: expected a positive integer, got 0"},
           {"--threads 2", "--threads is for --target cpu"},
           {"--cxx g++", "--cxx is for --target cpu"},
           {"--arch x86-64-v3", "--arch is for --target cpu"},
           {"--constant-weights", "--constant-weights is for --target cpu"},
           {"--target cpu --arch x86-64-v9", "--arch: unknown ISA level \"x86-64-v9\""},
           {"--target cpu --arch x86-64-v2", "--arch x86-64-v2: every CPU template needs x86-64-v3"},
           {"--target tpu", "--target"}}) {
    CommandResult r = tune(args);
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.summary();
    EXPECT_THAT(r.err, HasSubstr(message)) << args;
  }
  CommandResult r = tune("--target cpu --cxx /nonexistent/g++ --trials 1");
  EXPECT_EQ(r.exit_code, 2) << r.summary();
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/g++"));
}

}  // namespace
}  // namespace dietcode
