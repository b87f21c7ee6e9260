// Merging tuning logs (search/log_merge.h): one record per measurement, the median latency on
// conflict, order independence, refusals with exact messages, and damaged input lines skipped.
#include "search/log_merge.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace dietcode {
namespace {

TuningRecord record(int64_t t, double latency,
                    const std::string& stamp = "2025-03-01T12:00:00.000Z") {
  TuningRecord r;
  r.workload = "bert_dense";
  r.op = "qkv";
  r.mk = {"dense_f32", {{"BM", 64}, {"BN", 128}, {"BK", 16}}};
  r.shape = {{"T", t}};
  r.gemm = {1, 16 * t, 2304, 768};
  r.latency_us = latency;
  r.device = "NVIDIA H100 80GB HBM3";
  r.arch = "sm_90";
  r.tool_version = "0.1.0";
  r.timestamp = stamp;
  return r;
}

TuningRecord failure(int64_t t) {
  TuningRecord r = record(t, 0);
  r.latency_us.reset();
  r.status = MeasureStatus::kCompileError;
  r.error = "ptxas: too many registers";
  return r;
}

MergeInput input(const std::string& path, std::vector<TuningRecord> records,
                 std::vector<nlohmann::json> others = {}) {
  return {path, TuningLog{std::move(records), std::move(others)}};
}

TEST(LogMerge, SameMeasurementInTwoLogsIsOneRecord) {
  MergeResult m = merge_tuning_logs({input("a.jsonl", {record(1, 10), record(2, 20)}),
                                     input("b.jsonl", {record(2, 20), record(3, 30)})},
                                    false);
  ASSERT_EQ(m.records.size(), 3u);
  EXPECT_EQ(m.records_read, 4u);
  EXPECT_EQ(m.conflicts, 0u);
  EXPECT_EQ(m.records[0].shape.at("T"), 1);
  EXPECT_EQ(m.records[1].shape.at("T"), 2);
  EXPECT_EQ(m.records[2].shape.at("T"), 3);
}

TEST(LogMerge, ConflictingLatenciesTakeTheMedianOfThree) {
  MergeResult m =
      merge_tuning_logs({input("a.jsonl", {record(4, 30)}), input("b.jsonl", {record(4, 10)}),
                         input("c.jsonl", {record(4, 50)})},
                        false);
  ASSERT_EQ(m.records.size(), 1u);
  EXPECT_DOUBLE_EQ(*m.records[0].latency_us, 30);
  EXPECT_EQ(m.conflicts, 1u);
}

TEST(LogMerge, EvenCountKeepsTheLowerMiddleRecord) {
  MergeResult m = merge_tuning_logs({input("a.jsonl", {record(4, 40), record(4, 10)}),
                                     input("b.jsonl", {record(4, 20), record(4, 30)})},
                                    false);
  ASSERT_EQ(m.records.size(), 1u);
  EXPECT_DOUBLE_EQ(*m.records[0].latency_us, 20);
}

TEST(LogMerge, OutputDoesNotDependOnInputOrder) {
  std::vector<MergeInput> inputs = {
      input("a.jsonl", {record(3, 30, "2025-03-01T12:00:01.000Z"), failure(5)},
            {{{"kind", "quality"}, {"op", "qkv"}}}),
      input("b.jsonl", {record(1, 11), record(3, 33), failure(5)},
            {{{"kind", "quality"}, {"op", "qkv"}}}),
      input("c.jsonl", {record(3, 30, "2025-03-01T12:00:02.000Z"), record(1, 12)},
            {{{"kind", "note"}, {"text", "x"}}})};
  const std::string first = render_merged_log(merge_tuning_logs(inputs, false));
  std::sort(inputs.begin(), inputs.end(),
            [](const MergeInput& a, const MergeInput& b) { return a.path > b.path; });
  EXPECT_EQ(render_merged_log(merge_tuning_logs(inputs, false)), first);
  std::rotate(inputs.begin(), inputs.begin() + 1, inputs.end());
  EXPECT_EQ(render_merged_log(merge_tuning_logs(inputs, false)), first);

  MergeResult m = merge_tuning_logs(inputs, false);
  EXPECT_EQ(m.records.size(), 3u);  // T=1, T=3, the T=5 failure once
  EXPECT_EQ(m.others.size(), 2u);   // the identical quality lines are one
  // T=3 has 30 us (at :01), 33 us and 30 us (at :02): ties between equal latencies are broken
  // by the record's text, so the middle one is always the 30 us record of :02.
  EXPECT_DOUBLE_EQ(*m.records[1].latency_us, 30);
  EXPECT_EQ(m.records[1].timestamp, "2025-03-01T12:00:02.000Z");
}

TEST(LogMerge, FailureKeptOnceAndOkWinsOverIt) {
  MergeResult m = merge_tuning_logs(
      {input("a.jsonl", {failure(5), failure(6)}), input("b.jsonl", {failure(5), record(6, 9)})},
      false);
  ASSERT_EQ(m.records.size(), 2u);
  EXPECT_EQ(m.records[0].status, MeasureStatus::kCompileError);
  EXPECT_EQ(m.records[1].status, MeasureStatus::kOk);
}

TEST(LogMerge, DifferentGpusAreRefusedUnlessForced) {
  TuningRecord a100 = record(1, 10);
  a100.device = "NVIDIA A100-SXM4-80GB";
  a100.arch = "sm_80";
  std::vector<MergeInput> inputs = {input("h.jsonl", {record(1, 10)}), input("a.jsonl", {a100})};
  try {
    merge_tuning_logs(inputs, false);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "dietcode merge: h.jsonl has records of NVIDIA H100 80GB HBM3 (sm_90) but "
                 "a.jsonl has records of NVIDIA A100-SXM4-80GB (sm_80); use --force to merge "
                 "logs of different GPUs");
  }
  MergeResult forced = merge_tuning_logs(inputs, true);
  EXPECT_EQ(forced.records.size(), 2u);  // same instance, two GPUs: both kept
}

TEST(LogMerge, SimulatedAndRealAreNeverMixed) {
  TuningRecord sim = record(1, 10);
  sim.simulated = true;
  sim.device = "simulated NVIDIA H100 80GB HBM3";
  try {
    merge_tuning_logs({input("sim.jsonl", {sim}), input("real.jsonl", {record(2, 10)})}, true);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "dietcode merge: sim.jsonl has simulated records (a model of a GPU) and "
                 "real.jsonl has measurements of a real one; they are never merged");
  }
}

class TempFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("log_merge_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(TempFiles, TornLinesAreSkippedWithWarnings) {
  std::string line1 = record(1, 10).to_json().dump() + "\n";
  std::string line2 = record(2, 20).to_json().dump();
  std::string a = write("a.jsonl", line1 + line2.substr(0, 40) + "\n" + line2 + "\n");
  std::string b = write("b.jsonl", line1 + "{\"kind\":");
  std::vector<std::string> warnings;
  MergeResult m = merge_log_files({a, b}, false, warnings);
  EXPECT_EQ(m.records.size(), 2u);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], a + ":2: skipped: invalid JSON (truncated or corrupt line)");
  EXPECT_EQ(warnings[1], b + ":2: skipped: invalid JSON (truncated or corrupt line)");
}

TEST_F(TempFiles, AtomicWriteReplacesTheWholeFile) {
  std::string path = write("out.jsonl", "old content that is longer than the new\n");
  write_file_atomically(path, "new\n");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "new\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_),
                          std::filesystem::directory_iterator()),
            1);  // no temporary left behind
}

TEST_F(TempFiles, AtomicWriteIntoAMissingDirectoryIsAnEnvironmentError) {
  std::string path = (dir_ / "no" / "out.jsonl").string();
  EXPECT_THROW(write_file_atomically(path, "x\n"), EnvironmentError);
}

}  // namespace
}  // namespace dietcode
