#include "search/tuning_log.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/version.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

class TuningLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dietcode_tuning_log_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "run.jsonl").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string path_;
};

TuningRecord sample(int64_t t, double latency = 12.5) {
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
  r.timestamp = "2025-03-01T12:00:00.123Z";
  return r;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void expect_same(const TuningRecord& a, const TuningRecord& b) {
  EXPECT_EQ(a.to_json(), b.to_json());
  EXPECT_EQ(a.workload, b.workload);
  EXPECT_EQ(a.mk, b.mk);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.gemm.M, b.gemm.M);
  EXPECT_EQ(a.latency_us, b.latency_us);
  EXPECT_EQ(a.status, b.status);
}

TEST(MeasureStatus, SpellingsRoundTrip) {
  const char* names[] = {"ok",           "compile_error", "launch_error",
                         "wrong_result", "timeout",       "device_limits_exceeded"};
  for (const char* name : names) {
    auto status = parse_measure_status(name);
    ASSERT_TRUE(status) << name;
    EXPECT_STREQ(to_string(*status), name);
  }
  EXPECT_FALSE(parse_measure_status("OK"));
  EXPECT_FALSE(parse_measure_status(""));
}

TEST_F(TuningLogTest, RecordsRoundTripThroughTheFile) {
  TuningRecord ok = sample(37, 41.700000000000003);
  ok.registers = 96;
  ok.simulated = true;
  TuningRecord failed = sample(38);
  failed.latency_us.reset();
  failed.status = MeasureStatus::kWrongResult;
  failed.error = "max abs error 0.5 at C[3,7] (\xff not UTF-8)";
  {
    TuningLogWriter writer(path_);
    writer.append(ok);
    writer.append(failed);
    writer.sync();
  }
  std::vector<std::string> warnings;
  TuningLog log = read_tuning_log(path_, warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(log.records.size(), 2u);
  expect_same(log.records[0], ok);
  EXPECT_EQ(log.records[0].registers, 96);
  EXPECT_TRUE(log.records[0].simulated);
  EXPECT_EQ(log.records[1].status, MeasureStatus::kWrongResult);
  EXPECT_FALSE(log.records[1].latency_us);
  EXPECT_EQ(log.records[1].error, "max abs error 0.5 at C[3,7] (\xEF\xBF\xBD not UTF-8)");
  // One object per line, newline-terminated.
  std::string text = slurp(path_);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  EXPECT_EQ(text.back(), '\n');
}

// Tuning logs are kept and shipped gzip'ed (configs/tuned/h200/*.jsonl.gz): build, inspect and
// a resumed tune read them as they are; appending to one is refused before anything is written.
TEST_F(TuningLogTest, GzipCompressedLogsAreReadButNeverAppendedTo) {
  {
    TuningLogWriter writer(path_);
    for (int64_t t : {1, 2, 3}) writer.append(sample(t, 10.0 + double(t)));
  }
  const std::string text = slurp(path_);
  const std::string gz = path_ + ".gz";
  // Two gzip members, as `cat a.gz b.gz` makes: the reader goes on past the first.
  const size_t half = text.find('\n') + 1;
  for (const auto& [mode, part] : {std::pair<const char*, std::string>{"wb", text.substr(0, half)},
                                   {"ab", text.substr(half)}}) {
    gzFile f = gzopen(gz.c_str(), mode);
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, part.data(), unsigned(part.size())), int(part.size()));
    ASSERT_EQ(gzclose(f), Z_OK);
  }
  ASSERT_NE(slurp(gz), text);
  std::vector<std::string> warnings;
  TuningLog log = read_tuning_log(gz, warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(log.records.size(), 3u);
  for (int64_t t : {1, 2, 3}) expect_same(log.records[size_t(t - 1)], sample(t, 10.0 + double(t)));

  const std::string before = slurp(gz);
  try {
    TuningLogWriter writer(gz);
    FAIL() << "appended to a gzip file";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(gz + ": a gzip-compressed tuning log"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(slurp(gz), before);
  EXPECT_THROW(TuningLogWriter((dir_ / "new.jsonl.gz").string()), UserError);
  EXPECT_FALSE(fs::exists(dir_ / "new.jsonl.gz"));

  // Cut short, as an interrupted copy leaves it: an error naming the file, not a short log.
  write_file(gz, before.substr(0, before.size() - 12));
  try {
    read_tuning_log(gz, warnings);
    FAIL() << "read a truncated gzip file";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(gz + ": cannot read: corrupt gzip data"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(TuningLogTest, AppendingNeverRewritesEarlierBytes) {
  {
    TuningLogWriter writer(path_);
    for (int t = 1; t <= 3; ++t) writer.append(sample(t));
  }
  std::string before = slurp(path_);
  {
    TuningLogWriter writer(path_);
    writer.append(sample(4));
    writer.append(sample(5));
  }
  std::string after = slurp(path_);
  ASSERT_GT(after.size(), before.size());
  EXPECT_EQ(after.substr(0, before.size()), before);
  std::vector<std::string> warnings;
  EXPECT_EQ(read_tuning_log(path_, warnings).records.size(), 5u);
}

TEST_F(TuningLogTest, TornLastLineStaysIsolatedOnResume) {
  {
    TuningLogWriter writer(path_);
    for (int t = 1; t <= 3; ++t) writer.append(sample(t));
  }
  {
    std::ofstream out(path_, std::ios::app | std::ios::binary);
    out << R"({"kind": "measurement", "workload": "bert_dense", "op": "q)";
  }
  std::string before = slurp(path_);
  {
    TuningLogWriter writer(path_);
    writer.append(sample(5));
  }
  std::string after = slurp(path_);
  EXPECT_EQ(after.substr(0, before.size()), before);
  EXPECT_EQ(after[before.size()], '\n');

  std::vector<std::string> warnings;
  TuningLog log = read_tuning_log(path_, warnings);
  ASSERT_EQ(log.records.size(), 4u);
  EXPECT_EQ(log.records[3].shape.at("T"), 5);
  EXPECT_EQ(warnings, std::vector<std::string>{path_ + ":4: skipped: invalid JSON (truncated or "
                                                       "corrupt line)"});
}

TEST_F(TuningLogTest, DamagedLinesAreSkippedWithTheReason) {
  nlohmann::json good = sample(1).to_json();
  auto with = [&](const char* key, nlohmann::json value) {
    nlohmann::json j = good;
    j[key] = std::move(value);
    return j.dump();
  };
  auto without = [&](const char* key) {
    nlohmann::json j = good;
    j.erase(key);
    return j.dump();
  };
  nlohmann::json failed_with_latency = good;
  failed_with_latency["status"] = "timeout";
  std::string text = good.dump() + "\n" +                  // 1
                     "garbage\n" +                         // 2
                     "[1, 2]\n" +                          // 3
                     "\n" +                                // 4: blank
                     without("status") + "\n" +            // 5
                     with("status", "fast") + "\n" +       // 6
                     without("latency_us") + "\n" +        // 7
                     with("latency_us", -3) + "\n" +       // 8
                     failed_with_latency.dump() + "\n" +   // 9
                     with("shape", {{"T", "x"}}) + "\n" +  // 10
                     with("gemm", {{"batch", 1}, {"M", 0}, {"N", 1}, {"K", 1}}) + "\n" +  // 11
                     with("mk", {{"template", "t"}, {"params", {{"BM", 1.5}}}}) + "\n" +  // 12
                     with("simulated", "no") + "\n" +                                     // 13
                     with("kind", 7) + "\n" +                                             // 14
                     R"({"kind": "model_quality", "spearman": 0.93})"
                     "\n" +  // 15
                     without("kind") +
                     "\r\n" +                    // 16: no kind, CRLF
                     good.dump().substr(0, 40);  // 17: torn
  write_file(path_, text);
  std::vector<std::string> warnings;
  TuningLog log = read_tuning_log(path_, warnings);
  EXPECT_EQ(log.records.size(), 2u);
  ASSERT_EQ(log.others.size(), 1u);
  EXPECT_EQ(log.others[0]["spearman"], 0.93);
  std::vector<std::string> expected = {
      path_ + ":2: skipped: invalid JSON (truncated or corrupt line)",
      path_ + ":3: skipped: expected a JSON object",
      path_ + ":5: skipped: missing \"status\"",
      path_ + ":6: skipped: status: unknown status \"fast\"",
      path_ + ":7: skipped: missing \"latency_us\" for status \"ok\"",
      path_ + ":8: skipped: latency_us: expected a positive number",
      path_ + ":9: skipped: latency_us: not expected with status \"timeout\"",
      path_ + ":10: skipped: shape.T: expected an integer",
      path_ + ":11: skipped: gemm.M: expected a positive integer",
      path_ + ":12: skipped: mk: params.BM: expected an integer",
      path_ + ":13: skipped: simulated: expected true or false",
      path_ + ":14: skipped: kind: expected a string",
      path_ + ":17: skipped: invalid JSON (truncated or corrupt line)",
  };
  EXPECT_EQ(warnings, expected);
}

TEST_F(TuningLogTest, AWholeFileOfGarbageGivesNoRecordsAndAWarningPerLine) {
  write_file(path_,
             "\x7f"
             "ELF\x01\x02\n{{{{\nnull\n");
  std::vector<std::string> warnings;
  TuningLog log = read_tuning_log(path_, warnings);
  EXPECT_TRUE(log.records.empty());
  EXPECT_EQ(warnings.size(), 3u);
}

TEST_F(TuningLogTest, MissingFileIsAnErrorOnlyWhenItMustExist) {
  std::vector<std::string> warnings;
  std::string missing = (dir_ / "none.jsonl").string();
  try {
    read_tuning_log(missing, warnings);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": no such tuning log");
  }
  EXPECT_TRUE(read_tuning_log(missing, warnings, /*must_exist=*/false).records.empty());
  try {
    read_tuning_log(dir_.string(), warnings);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), dir_.string() + ": cannot read: Is a directory");
  }
}

TEST_F(TuningLogTest, FullDiskIsAnEnvironmentErrorNamingThePath) {
  TuningLogWriter writer("/dev/full");
  try {
    writer.append(sample(1));
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/dev/full: cannot write the tuning log: No space left on device");
  }
  try {
    TuningLogWriter unopenable((dir_ / "no" / "such" / "dir.jsonl").string());
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_EQ(std::string(e.what()), (dir_ / "no/such/dir.jsonl").string() +
                                         ": cannot open the tuning log: No such file or "
                                         "directory");
  }
}

// A file size limit makes write() fail part-way (EFBIG), like a disk filling up: the error
// names the path, and every earlier line survives.
TEST_F(TuningLogTest, AFailedWriteLeavesEarlierLinesIntact) {
  {
    TuningLogWriter writer(path_);
    for (int t = 1; t <= 3; ++t) writer.append(sample(t));
  }
  std::string before = slurp(path_);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{rlim_t(before.size() + 700), rlim_t(before.size() + 700)};
    setrlimit(RLIMIT_FSIZE, &limit);
    try {
      TuningLogWriter writer(path_);
      for (int t = 4; t < 100; ++t) writer.append(sample(t));
    } catch (const EnvironmentError& e) {
      _exit(std::string(e.what()) == path_ + ": cannot write the tuning log: File too large" ? 0
                                                                                             : 2);
    }
    _exit(1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);

  std::string after = slurp(path_);
  EXPECT_EQ(after.substr(0, before.size()), before);
  {
    TuningLogWriter writer(path_);
    writer.append(sample(100));
  }
  std::vector<std::string> warnings;
  TuningLog log = read_tuning_log(path_, warnings);
  EXPECT_LE(warnings.size(), 1u);  // the line cut by the limit, if it was cut mid-line
  ASSERT_GE(log.records.size(), 4u);
  for (int t = 1; t <= 3; ++t) EXPECT_EQ(log.records[t - 1].shape.at("T"), t);
  EXPECT_EQ(log.records.back().shape.at("T"), 100);
}

size_t count_lines(const std::string& path) {
  std::string text = slurp(path);
  return size_t(std::count(text.begin(), text.end(), '\n'));
}

TEST_F(TuningLogTest, SigkillLosesAtMostTheRecordInFlight) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    TuningLogWriter writer(path_);
    for (int64_t t = 1;; ++t) writer.append(sample(t, 1.0 + double(t)));
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (count_lines(path_) < 500 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  std::string text = slurp(path_);
  size_t complete = size_t(std::count(text.begin(), text.end(), '\n'));
  ASSERT_GE(complete, 500u);
  std::vector<std::string> warnings;
  TuningLog log = read_tuning_log(path_, warnings);
  // Every complete line is a record, in order; only an unterminated last line may be lost.
  ASSERT_EQ(log.records.size(), complete);
  for (size_t i = 0; i < complete; ++i) {
    EXPECT_EQ(log.records[i].shape.at("T"), int64_t(i + 1));
    EXPECT_EQ(log.records[i].latency_us, 2.0 + double(i));
  }
  EXPECT_LE(warnings.size(), 1u);

  // Resuming keeps every byte that was there.
  {
    TuningLogWriter writer(path_);
    writer.append(sample(100000));
  }
  std::string after = slurp(path_);
  EXPECT_EQ(after.substr(0, text.size()), text);
  EXPECT_EQ(read_tuning_log(path_, warnings).records.size(), complete + 1);
}

TEST_F(TuningLogTest, OtherKindsAreKeptAsideAndMustNameTheirKind) {
  {
    TuningLogWriter writer(path_);
    writer.append_json({{"kind", "model_quality"}, {"spearman", 0.91}});
    writer.append(sample(1));
    EXPECT_THROW(writer.append_json({{"spearman", 0.91}}), std::invalid_argument);
    EXPECT_THROW(writer.append_json({{"kind", "measurement"}}), std::invalid_argument);
  }
  std::vector<std::string> warnings;
  TuningLog log = read_tuning_log(path_, warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(log.records.size(), 1u);
  ASSERT_EQ(log.others.size(), 1u);
  EXPECT_EQ(log.others[0]["kind"], "model_quality");
}

TEST(TuningLogQueries, BestPerInstanceFilterAndMeasuredPairs) {
  TuningLog log;
  TuningRecord slow = sample(1, 20.0), fast = sample(1, 10.0), tie = sample(1, 10.0);
  fast.mk.params["BM"] = 32;
  tie.mk.params["BM"] = 16;
  TuningRecord failed = sample(2);
  failed.status = MeasureStatus::kTimeout;
  failed.latency_us.reset();
  TuningRecord simulated = sample(1, 1.0);
  simulated.simulated = true;
  TuningRecord other_op = sample(1, 5.0);
  other_op.op = "proj";
  log.records = {slow, fast, tie, failed, simulated, other_op};

  RecordFilter real{"bert_dense", "qkv", std::nullopt, "sm_90", false};
  auto records = filter_records(log, real);
  ASSERT_EQ(records.size(), 4u);
  auto best = best_per_instance(records);
  ASSERT_EQ(best.size(), 1u);  // T=2 only failed
  const TuningRecord* winner = best.at(InstanceKey{"bert_dense", "qkv", {{"T", 1}}});
  EXPECT_EQ(winner->mk.get("BM"), 32);  // the earlier of two equal latencies

  auto pairs = measured_pairs(records);
  EXPECT_EQ(pairs.size(), 4u);
  EXPECT_TRUE(pairs.count({failed.mk.key(), instance_key(failed)}));
  EXPECT_FALSE(pairs.count({other_op.mk.key(), instance_key(other_op)}));
  EXPECT_EQ(filter_records(log, RecordFilter{}).size(), 6u);
}

TEST(TuningLogRecords, OneRecordPerInstanceFromAResult) {
  OpSpec op;
  op.name = "qkv";
  op.vars = {"B", "T"};
  MeasureInput input;
  input.op = &op;
  input.mk = {"dense_f32", {{"BM", 64}}};
  input.kernel.plan.entry = "k";
  input.compiled.ok = true;
  input.compiled.binaries = {{"sm_80", "", {{"k", 80, 0, 0, 0, 0}}},
                             {"sm_90", "", {{"k", 90, 0, 0, 0, 0}}}};
  for (int64_t t : {1, 2, 3}) {
    Instance inst;
    inst.values = {4, t};
    inst.gemm = {1, 64 * t, 2304, 768};
    input.instances.push_back(inst);
  }
  DeviceIdentity device{"simulated NVIDIA H100 80GB HBM3", "sm_90", true};
  MeasureResult ok;
  ok.latency_us = {5.0, std::nan(""), 7.0};
  auto records = records_from_result("bert", input, ok, device);
  ASSERT_EQ(records.size(), 2u);  // the unmeasured instance has no record
  EXPECT_EQ(records[0].shape, (std::map<std::string, int64_t>{{"B", 4}, {"T", 1}}));
  EXPECT_EQ(records[1].shape.at("T"), 3);
  EXPECT_EQ(records[1].gemm.M, 192);
  EXPECT_EQ(records[1].latency_us, 7.0);
  EXPECT_EQ(records[0].registers, 90);
  EXPECT_TRUE(records[0].simulated);
  EXPECT_EQ(records[0].device, "simulated NVIDIA H100 80GB HBM3");
  EXPECT_EQ(records[0].tool_version, tool_version());
  EXPECT_EQ(records[0].timestamp.size(), std::string("2025-03-01T12:00:00.123Z").size());
  EXPECT_EQ(records[0].timestamp.back(), 'Z');
  // A record made here reads back.
  expect_same(TuningRecord::from_json(records[0].to_json()), records[0]);

  MeasureResult timeout;
  timeout.status = MeasureStatus::kTimeout;
  timeout.error = "no answer within 10 s";
  timeout.latency_us.assign(3, std::nan(""));
  records = records_from_result("bert", input, timeout, device);
  ASSERT_EQ(records.size(), 3u);  // failures are recorded for every instance: resume skips them
  for (const auto& r : records) {
    EXPECT_EQ(r.status, MeasureStatus::kTimeout);
    EXPECT_FALSE(r.latency_us);
    EXPECT_EQ(r.error, "no answer within 10 s");
  }
}

}  // namespace
}  // namespace dietcode
