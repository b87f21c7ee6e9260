// `dietcode tune --shard I/N` end to end on the simulated device (a TEST DOUBLE of a GPU;
// NVRTC compiles for real): the shards of a workload, merged, cover every (op, instance) of
// it; each shard writes its own default log; a bad --shard exits 1 with its message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "e2e/cli_util.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::CommandResult;
using ::testing::HasSubstr;

const std::string kWorkload = test::test_data_dir() + "/tune_small.json";

class CliShard : public ::testing::Test {
 protected:
  CommandResult cli(std::vector<std::string> args) {
    test::CommandOptions options;
    options.cwd = dir_.path();
    // Kernels compiled by one shard are cache hits for the next.
    options.env = {{"DIETCODE_CACHE_DIR", test::shared_tune_cache_dir()}};
    return test::run_cli(args, options);
  }
  CommandResult shard(const std::string& spec, const std::string& log = "") {
    std::vector<std::string> args = {"tune",   kWorkload, "--simulate", "h100",    "--trials", "4",
                                     "--seed", "3",       "-q",         "--shard", spec};
    if (!log.empty()) args.insert(args.end(), {"-o", log});
    return cli(args);
  }
  // (op, T) -> records, over the merged log's measurements.
  std::map<std::pair<std::string, int64_t>, int> coverage(const std::string& path) {
    std::map<std::pair<std::string, int64_t>, int> seen;
    std::istringstream in(test::read_file(path));
    std::string l;
    while (std::getline(in, l)) {
      json j = json::parse(l);
      if (j.value("kind", "measurement") != "measurement") continue;
      EXPECT_EQ(j["simulated"], true);
      ++seen[{j["op"].get<std::string>(), j["shape"]["T"].get<int64_t>()}];
    }
    return seen;
  }
  void expect_all_covered(const std::map<std::pair<std::string, int64_t>, int>& seen) {
    for (const std::string op : {"up", "down"})
      for (int64_t t = 1; t <= 16; ++t) EXPECT_GT(seen.count({op, t}), 0u) << op << " T=" << t;
    EXPECT_EQ(seen.size(), 32u);
  }
  test::TempDir dir_;
};

TEST_F(CliShard, TwoShardsSplitByOpAndMergeToTheWholeWorkload) {
  CommandResult one = shard("1/2");
  ASSERT_EQ(one.exit_code, 0) << one.summary();
  CommandResult two = shard("2/2");
  ASSERT_EQ(two.exit_code, 0) << two.summary();
  const std::string log1 = dir_.file("tune_small.shard-1-of-2.jsonl");
  const std::string log2 = dir_.file("tune_small.shard-2-of-2.jsonl");
  // Two ops, two shards: whole ops, one each.
  std::set<std::string> ops1, ops2;
  for (const auto& [key, n] : coverage(log1)) ops1.insert(key.first);
  for (const auto& [key, n] : coverage(log2)) ops2.insert(key.first);
  EXPECT_EQ(ops1, std::set<std::string>{"up"});
  EXPECT_EQ(ops2, std::set<std::string>{"down"});

  CommandResult merged = cli({"merge", log1, log2, "-o", "all.jsonl", "-q"});
  ASSERT_EQ(merged.exit_code, 0) << merged.summary();
  expect_all_covered(coverage(dir_.file("all.jsonl")));
}

TEST_F(CliShard, MoreShardsThanOpsSplitInstanceRanges) {
  for (const std::string spec : {"1/3", "2/3", "3/3"}) {
    CommandResult r = shard(spec, "s" + spec.substr(0, 1) + ".jsonl");
    ASSERT_EQ(r.exit_code, 0) << spec << ": " << r.summary();
  }
  // up is cut into T=1..8 and T=9..16; down is whole.
  auto first = coverage(dir_.file("s1.jsonl"));
  ASSERT_FALSE(first.empty());
  for (const auto& [key, n] : first) {
    EXPECT_EQ(key.first, "up");
    EXPECT_LE(key.second, 8);
  }
  for (const auto& [key, n] : coverage(dir_.file("s2.jsonl"))) {
    EXPECT_EQ(key.first, "up");
    EXPECT_GE(key.second, 9);
  }
  CommandResult merged =
      cli({"merge", "s1.jsonl", "s2.jsonl", "s3.jsonl", "-o", "all.jsonl", "-q"});
  ASSERT_EQ(merged.exit_code, 0) << merged.summary();
  expect_all_covered(coverage(dir_.file("all.jsonl")));
}

TEST_F(CliShard, BadShardExitsOne) {
  for (const std::string spec : {"0/2", "3/2", "x"}) {
    CommandResult r = shard(spec);
    EXPECT_EQ(r.exit_code, 1) << spec;
    EXPECT_EQ(r.err, "dietcode tune: --shard: expected I/N with 1 <= I <= N, such as 2/8, got \"" +
                         spec + "\"\n");
  }
}

}  // namespace
}  // namespace dietcode
