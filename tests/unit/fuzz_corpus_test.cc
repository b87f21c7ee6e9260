// Replays the fuzzing corpus (tests/fuzz/corpus/, seeds and inputs that once crashed) through
// both parsers in the normal suite, with any compiler: the workload parser may only return or
// throw UserError, the log parser may not throw at all, and what the log parser accepts must
// merge with itself (only ever throwing UserError).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "search/log_merge.h"
#include "search/tuning_log.h"
#include "workload/workload.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> corpus_files() {
  std::vector<fs::path> files;
  for (const char* dir : {"workload", "log"})
    for (const auto& entry :
         fs::directory_iterator(fs::path(DIETCODE_SOURCE_DIR) / "tests/fuzz/corpus" / dir))
      if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(FuzzCorpus, HasSeedsForBothParsers) {
  size_t workloads = 0, logs = 0;
  for (const fs::path& file : corpus_files())
    ++(file.parent_path().filename() == "workload" ? workloads : logs);
  EXPECT_GE(workloads, 4u);
  EXPECT_GE(logs, 4u);
}

TEST(FuzzCorpus, EveryFileIsHandledByBothParsers) {
  for (const fs::path& file : corpus_files()) {
    SCOPED_TRACE(file.string());
    const std::string text = slurp(file);
    try {
      Workload workload = parse_workload(text, file.filename().string());
      EXPECT_FALSE(workload.ops.empty());
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "parse_workload threw something other than UserError: " << e.what();
    }

    std::vector<std::string> warnings;
    TuningLog log;
    try {
      log = parse_tuning_log(text, file.filename().string(), warnings);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "parse_tuning_log threw: " << e.what();
      continue;
    }
    try {
      MergeResult merged = merge_tuning_logs({{"a", log}, {"b", log}}, false);
      EXPECT_LE(merged.records.size(), log.records.size());
    } catch (const UserError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "merge threw something other than UserError: " << e.what();
    }
  }
}

TEST(FuzzCorpus, SeedsParseAsExpected) {
  const fs::path root = fs::path(DIETCODE_SOURCE_DIR) / "tests/fuzz/corpus";
  EXPECT_NO_THROW(parse_workload(slurp(root / "workload/valid_tune_small.json"), "w.json"));
  EXPECT_THROW(parse_workload(slurp(root / "workload/truncated.json"), "w.json"), UserError);
  std::vector<std::string> warnings;
  TuningLog log = parse_tuning_log(slurp(root / "log/valid.jsonl"), "valid.jsonl", warnings);
  EXPECT_EQ(log.records.size(), 2u);
  EXPECT_EQ(log.others.size(), 1u);
  EXPECT_TRUE(warnings.empty());
  log = parse_tuning_log(slurp(root / "log/torn.jsonl"), "torn.jsonl", warnings);
  EXPECT_EQ(log.records.size(), 1u);
  EXPECT_EQ(warnings.size(), 2u);
}

}  // namespace
}  // namespace dietcode
