// `dietcode tune --kernels FILE` end to end: on the simulated device (a TEST DOUBLE of a GPU;
// NVRTC compiles for real) the log holds records of exactly the listed kernels on every
// instance of every op they can compute, a kernel an op's constraints rule out is skipped for
// that op with the reason, a second run times nothing new, a tuning log lists the kernels its
// records name, and bad lists exit 1 with one line and no log; on this machine's CPU, for real,
// a tiny list is timed the same way.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "e2e/cli_util.h"
#include "space/template_space.h"
#include "space/templates.h"
#include "x86/host_cpu.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::CommandOptions;
using test::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kWorkload = test::test_data_dir() + "/tune_small.json";

// tune_small's ops: up (N 256, K 128) and down (N 128, K 256), T in 1..16. [1] splits K into
// 16 slices of 16: up's K holds 8 per slice only, which the space's constraint forbids.
constexpr const char* kList = R"([
  {"template": "dense_f32", "params": {"TM": 4}},
  {"template": "dense_f32", "params": {"SPLITK": 16, "BK": 16}},
  {"template": "dense_f32"}
])";

// The ordinary (not runoff) measurement records of a log: op -> kernel key -> instances (T).
using Timed = std::map<std::string, std::map<std::string, std::multiset<int64_t>>>;
Timed timed_in(const std::string& log_text) {
  Timed out;
  std::istringstream in(log_text);
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("kind", "") != "measurement" || j.contains("runoff")) continue;
    const MicroKernel mk{j["mk"]["template"].get<std::string>(),
                         j["mk"]["params"].get<std::map<std::string, int>>()};
    out[j["op"]][mk.key()].insert(j["shape"]["T"].get<int64_t>());
  }
  return out;
}

std::string dense_key(std::map<std::string, int> changes) {
  MicroKernel mk = dense_f32_space().defaults();
  for (const auto& [name, value] : changes) mk.params[name] = value;
  return mk.key();
}

std::multiset<int64_t> every_t() {
  std::multiset<int64_t> t;
  for (int64_t i = 1; i <= 16; ++i) t.insert(i);
  return t;
}

class CliTuneKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(tmp_.path());
    // The CLI tune tests' shared cache: kernels compiled by one are hits for the next.
    cache_ = test::shared_tune_cache_dir();
  }

  CommandResult tune(const std::string& args, const std::string& cache_name = "") {
    CommandOptions options;
    options.cwd = dir_.string();
    options.env = {{"DIETCODE_CACHE_DIR", cache_name.empty()
                                              ? cache_.string()
                                              : (fs::temp_directory_path() / cache_name).string()}};
    std::vector<std::string> argv = {"tune", kWorkload};
    for (const std::string& w : test::words(args)) argv.push_back(w);
    return test::run_cli(argv, options);
  }
  std::string log(const std::string& name) const { return test::read_file_or_empty(dir_ / name); }

  test::TempDir tmp_;
  fs::path dir_, cache_;
};

TEST_F(CliTuneKernels, TimesExactlyTheListedKernelsOnEveryInstanceOfEveryOpTheyCompute) {
  tmp_.write("ab.json", kList);
  CommandResult r = tune("--simulate h100 --kernels ab.json -o ab.jsonl --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("ab.json: 3 kernels listed: timing them on every op they can "
                               "compute, with no search\n"));
  EXPECT_THAT(r.err, HasSubstr("up: ab.json[1] (dense_f32) skipped: violates \"SPLITK == 1 or "
                               "largest K / SPLITK >= BK (every slice holds a full K tile)\"\n"));
  EXPECT_THAT(r.err, Not(HasSubstr("down: ab.json[1]")));
  const std::string tm4 = dense_key({{"TM", 4}}), split = dense_key({{"SPLITK", 16}, {"BK", 16}}),
                    defaults = dense_key({});
  const Timed timed = timed_in(log("ab.jsonl"));
  ASSERT_EQ(timed.size(), 2u);
  EXPECT_EQ(timed.at("up"), (std::map<std::string, std::multiset<int64_t>>{{tm4, every_t()},
                                                                           {defaults, every_t()}}));
  EXPECT_EQ(timed.at("down"), (std::map<std::string, std::multiset<int64_t>>{
                                  {tm4, every_t()}, {split, every_t()}, {defaults, every_t()}}));

  const json summary = json::parse(r.out);
  ASSERT_EQ(summary["ops"].size(), 2u);
  for (const json& op : summary["ops"]) {
    EXPECT_EQ(op["stopped"], "listed kernels measured") << op["op"];
    EXPECT_EQ(op["trials"], op["op"] == "up" ? 2 : 3) << op["op"];
    EXPECT_TRUE(op.contains("runoff")) << op["op"];  // the runoff runs as after a search
  }

  // Run again: everything is in the log, so nothing is timed, not even a runoff.
  const std::string before = log("ab.jsonl");
  CommandResult again = tune("--simulate h100 --kernels ab.json -o ab.jsonl");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("this run compiled 0 kernels"));
  EXPECT_THAT(again.out, HasSubstr("listed kernels measured"));
  EXPECT_EQ(log("ab.jsonl"), before);
}

TEST_F(CliTuneKernels, ATuningLogListsTheKernelsItsRecordsName) {
  CommandResult search = tune("--simulate h100 --ops up --trials 4 --seed 2 -q -o other.jsonl");
  ASSERT_EQ(search.exit_code, 0) << search.err;
  const Timed theirs = timed_in(log("other.jsonl"));
  ASSERT_EQ(theirs.at("up").size(), 4u);

  // Timed here for down, which the search never saw, and for up again into a log of its own.
  CommandResult r = tune("--simulate h100 --kernels other.jsonl --runoff 0 -o mine.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("other.jsonl: 4 kernels listed"));
  std::set<std::string> listed;
  for (const auto& [key, instances] : theirs.at("up")) listed.insert(key);
  const Timed mine = timed_in(log("mine.jsonl"));
  for (const std::string op : {"up", "down"}) {
    std::set<std::string> keys;
    for (const auto& [key, instances] : mine.at(op)) {
      keys.insert(key);
      EXPECT_EQ(instances, every_t()) << op << " " << key;
      EXPECT_EQ(listed.count(key), 1u) << op << " " << key;
    }
    // down's smaller N may rule out a tile up's search chose; each such is said.
    size_t skipped = 0;
    for (size_t at = 0; (at = r.err.find(op + ": other.jsonl:", at)) != std::string::npos; ++at)
      ++skipped;
    EXPECT_EQ(keys.size() + skipped, listed.size()) << op << "\n" << r.err;
    if (op == "up") EXPECT_EQ(keys, listed);
  }
}

TEST_F(CliTuneKernels, BadListsExitOneWithOneLineAndNoLog) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {R"([{"template": "dense_f32", "params": {"TM": 4}},
           {"template": "dense_f32", "params": {"TM": 16.5}}])",
       "ab.json: [1].params.TM: expected an integer, got 16.5"},
      {R"([{"template": "dense_f32", "params": {"TMM": 4}}])",
       "ab.json: [0].params.TMM: dense_f32 has no tunable \"TMM\" (did you mean \"TM\"?); its "
       "tunables are "},
      {R"([{"template": "dense_f64"}])",
       "ab.json: [0].template: unknown template \"dense_f64\" (did you mean \"dense_f32\"?); the "
       "templates are "},
      {R"([{"template": "dense_f32"})", "ab.json: not valid JSON: "},
  };
  for (const auto& [text, message] : files) {
    tmp_.write("ab.json", text);
    CommandResult r = tune("--simulate h100 --kernels ab.json -o ab.jsonl");
    EXPECT_EQ(r.exit_code, 1) << text;
    EXPECT_EQ(r.err.rfind(message, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "") << text;
    EXPECT_FALSE(fs::exists(dir_ / "ab.jsonl")) << text;
  }
  CommandResult missing = tune("--simulate h100 --kernels nope.json -o ab.jsonl");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "nope.json: cannot read: No such file or directory\n");

  tmp_.write("ab.json", kList);
  CommandResult trials = tune("--simulate h100 --kernels ab.json --trials 4 -o ab.jsonl");
  EXPECT_EQ(trials.exit_code, 1);
  EXPECT_EQ(trials.err,
            "dietcode tune: --trials and --kernels: the list decides what is timed; give one of "
            "them\n");

  // A CPU kernel on a GPU computes nothing: every op is skipped, which is an error of its own.
  tmp_.write("cpu.json", R"([{"template": "x86_avx2_f32"}])");
  CommandResult none = tune("--simulate h100 --kernels cpu.json -o ab.jsonl");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("up: cpu.json[0] (x86_avx2_f32) skipped: a cpu template, and "
                                  "this run tunes for cuda\n"));
  EXPECT_THAT(none.err, HasSubstr("down: no listed kernel can compute it: left untuned\n"));
  EXPECT_THAT(none.err, ::testing::EndsWith("\ndietcode tune: no kernel listed in cpu.json can "
                                            "compute any op to tune (up, down); nothing to "
                                            "time\n"));
  EXPECT_FALSE(fs::exists(dir_ / "ab.jsonl"));
}

// dense_wgmma's M_TILES changes the grid the host launches, not the binary: kernels that differ
// in it alone compile to the same CUBIN and must still each be timed, not set aside as
// duplicates of one another.
TEST_F(CliTuneKernels, KernelsThatDifferOnlyInTheirGridAreNotDuplicates) {
  tmp_.write("bf16.json", R"({"name": "w", "shape_vars": {"T": {"min": 1, "max": 8}},
      "ops": [{"name": "fc", "op": "dense", "dtype": "bfloat16", "M": "64*T", "N": 256,
               "K": 128}]})");
  tmp_.write("walks.json", R"([
    {"template": "dense_wgmma", "params": {"WG_M": 1, "BN": 64, "STAGES": 2, "M_TILES": 1}},
    {"template": "dense_wgmma", "params": {"WG_M": 1, "BN": 64, "STAGES": 2, "M_TILES": 2}},
    {"template": "dense_wgmma", "params": {"WG_M": 1, "BN": 64, "STAGES": 2, "M_TILES": 4}}
  ])");
  CommandOptions options;
  options.cwd = dir_.string();
  options.env = {{"DIETCODE_CACHE_DIR", cache_.string()}};
  CommandResult r = test::run_cli({"tune", "bf16.json", "--simulate", "h100", "--kernels",
                                   "walks.json", "--runoff", "0", "-o", "walks.jsonl"},
                                  options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("3 measured, 0 rejected, 0 failed, 0 duplicate"));
  std::set<int> walks;
  std::istringstream in(log("walks.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("kind", "") == "measurement")
      walks.insert(j["mk"]["params"]["M_TILES"].get<int>());
  }
  EXPECT_EQ(walks, (std::set<int>{1, 2, 4}));
}

TEST_F(CliTuneKernels, OnThisCpuTheListIsTimedForReal) {
  if (detect_host_cpu().isa_level_number < 3)
    GTEST_SKIP() << "this CPU is below x86-64-v3, which every CPU template needs";
  tmp_.write("cpu.json", R"([{"template": "x86_avx2_f32"}, {"template": "dense_f32"}])");
  CommandResult r =
      tune("--target cpu --threads 1 --ops down --kernels cpu.json --runoff 0 -o cpu.jsonl",
           "dietcode_cli_tune_cpu_cache_" + std::to_string(getuid()));
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_THAT(r.err, HasSubstr("down: cpu.json[1] (dense_f32) skipped: a cuda template, and this "
                               "run tunes for cpu\n"));
  EXPECT_THAT(r.out, HasSubstr("listed kernels measured"));
  const Timed timed = timed_in(log("cpu.jsonl"));
  EXPECT_EQ(timed,
            (Timed{{"down", {{template_space("x86_avx2_f32").defaults().key(), every_t()}}}}));
}

}  // namespace
}  // namespace dietcode
