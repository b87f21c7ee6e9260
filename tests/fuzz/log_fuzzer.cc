// libFuzzer target: parse_tuning_log on arbitrary bytes never throws and never crashes; a
// damaged line is a warning. What it parses is then put through what readers do next: every
// record survives a to_json/from_json round trip, and merging the log with itself (the
// `dietcode merge` logic) yields one record per measurement and only ever throws UserError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/error.h"
#include "search/log_merge.h"
#include "search/tuning_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> warnings;
  dietcode::TuningLog log = dietcode::parse_tuning_log(text, "fuzz.jsonl", warnings);
  for (const dietcode::TuningRecord& r : log.records) {
    // A record the reader accepted must be one the writer can write and read back.
    dietcode::TuningRecord again = dietcode::TuningRecord::from_json(r.to_json());
    if (again.to_json() != r.to_json()) std::abort();
  }
  try {
    dietcode::MergeResult merged = dietcode::merge_tuning_logs({{"a", log}, {"a", log}}, false);
    if (merged.records.size() > log.records.size()) std::abort();
    (void)dietcode::render_merged_log(merged);
  } catch (const dietcode::UserError&) {
  }
  return 0;
}
