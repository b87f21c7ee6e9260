// `dietcode merge` end to end: exit codes and messages, the merged log's content, and merging a
// log with itself changing nothing. Logs here are written by hand; cli_shard_test merges
// logs that `tune` wrote on the simulated device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "e2e/cli_util.h"

namespace dietcode {
namespace {

using nlohmann::json;
using test::CommandResult;
using ::testing::HasSubstr;

std::string line(int t, double latency, const std::string& device = "NVIDIA H100 80GB HBM3",
                 const std::string& arch = "sm_90", bool simulated = false) {
  json j = {{"kind", "measurement"},
            {"workload", "w"},
            {"op", "up"},
            {"mk", {{"template", "dense_f32"}, {"params", {{"BM", 64}, {"BN", 64}}}}},
            {"shape", {{"T", t}}},
            {"gemm", {{"batch", 1}, {"M", 8 * t}, {"N", 256}, {"K", 128}}},
            {"status", "ok"},
            {"latency_us", latency},
            {"device", device},
            {"arch", arch},
            {"simulated", simulated},
            {"tool_version", "0.1.0"},
            {"timestamp", "2025-03-01T12:00:00.000Z"}};
  return j.dump() + "\n";
}

std::vector<json> lines_of(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) out.push_back(json::parse(l));
  return out;
}

class CliMerge : public ::testing::Test {
 protected:
  CommandResult merge(std::vector<std::string> args) {
    args.insert(args.begin(), "merge");
    test::CommandOptions options;
    options.cwd = dir_.path();
    return test::run_cli(args, options);
  }
  test::TempDir dir_;
};

TEST_F(CliMerge, MergesDeduplicatesAndTakesTheMedian) {
  dir_.write("a.jsonl", line(1, 10) + line(2, 30) + "{\"kind\": \"note\", \"x\": 1}\n");
  dir_.write("b.jsonl", line(2, 10) + line(3, 5) + "{\"kind\": \"note\", \"x\": 1}\n");
  dir_.write("c.jsonl", line(2, 20) + "{\"workload\": \"w\", \"op\"\n");
  CommandResult r = merge({"a.jsonl", "b.jsonl", "c.jsonl", "-o", "out.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.out,
            "merged 3 logs (5 records) into out.jsonl: 3 records, 1 other lines, 1 conflicting "
            "latencies resolved by the median\n");
  EXPECT_EQ(r.err, "c.jsonl:2: skipped: invalid JSON (truncated or corrupt line)\n");
  std::vector<json> out = lines_of(test::read_file(dir_.file("out.jsonl")));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0]["shape"]["T"], 1);
  EXPECT_EQ(out[1]["shape"]["T"], 2);
  EXPECT_EQ(out[1]["latency_us"], 20.0);
  EXPECT_EQ(out[2]["shape"]["T"], 3);
  EXPECT_EQ(out[3], json({{"kind", "note"}, {"x", 1}}));
}

TEST_F(CliMerge, MergingALogWithItselfIsIdempotent) {
  dir_.write("a.jsonl", line(3, 7) + line(1, 10) + line(2, 30) + line(1, 12));
  ASSERT_EQ(merge({"a.jsonl", "-o", "once.jsonl", "-q"}).exit_code, 0);
  const std::string once = test::read_file(dir_.file("once.jsonl"));
  CommandResult r = merge({"once.jsonl", "once.jsonl", "-o", "twice.jsonl", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(test::read_file(dir_.file("twice.jsonl")), once);
  // In place: the output may be an input.
  ASSERT_EQ(merge({"once.jsonl", "-o", "once.jsonl", "-q"}).exit_code, 0);
  EXPECT_EQ(test::read_file(dir_.file("once.jsonl")), once);
  EXPECT_EQ(lines_of(once).size(), 3u);
}

TEST_F(CliMerge, DifferentGpusNeedForce) {
  dir_.write("h.jsonl", line(1, 10));
  dir_.write("a.jsonl", line(1, 20, "NVIDIA A100-SXM4-80GB", "sm_80"));
  CommandResult r = merge({"h.jsonl", "a.jsonl", "-o", "out.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "dietcode merge: h.jsonl has records of NVIDIA H100 80GB HBM3 (sm_90) but a.jsonl has "
            "records of NVIDIA A100-SXM4-80GB (sm_80); use --force to merge logs of different "
            "GPUs\n");
  EXPECT_FALSE(std::filesystem::exists(dir_.file("out.jsonl")));
  r = merge({"h.jsonl", "a.jsonl", "-o", "out.jsonl", "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(lines_of(test::read_file(dir_.file("out.jsonl"))).size(), 2u);
}

TEST_F(CliMerge, SimulatedAndRealAreRefusedEvenWithForce) {
  dir_.write("sim.jsonl", line(1, 10, "simulated NVIDIA H100 80GB HBM3", "sm_90", true));
  dir_.write("real.jsonl", line(2, 10));
  CommandResult r = merge({"real.jsonl", "sim.jsonl", "-o", "out.jsonl", "--force"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "dietcode merge: sim.jsonl has simulated records (a model of a GPU) and real.jsonl "
            "has measurements of a real one; they are never merged\n");
}

TEST_F(CliMerge, BadArgumentsExitOne) {
  dir_.write("a.jsonl", line(1, 10));
  CommandResult r = merge({"missing.jsonl", "-o", "out.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "missing.jsonl: no such tuning log\n");
  r = merge({"a.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--output is required"));
  r = merge({"-o", "out.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("LOG is required"));
}

TEST_F(CliMerge, UnwritableOutputExitsTwo) {
  dir_.write("a.jsonl", line(1, 10));
  CommandResult r = merge({"a.jsonl", "-o", "no/such/dir/out.jsonl"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "no/such/dir/out.jsonl: cannot write: No such file or directory\n");
}

}  // namespace
}  // namespace dietcode
