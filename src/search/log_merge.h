// Merging tuning logs (SPEC §4 format, search/tuning_log.h): the logs of several tuning runs
// (cluster shards, resumed runs on different hosts) become one log that `build` reads.
//
// Rules, so merging is safe to repeat and its result does not depend on argument order:
//   - One record per (workload, op, micro-kernel key, shape, device, arch). Ok records of the
//     same key that disagree are resolved by the median latency (for an even count the lower
//     middle, so the kept record is one that was really measured, not an invented average).
//   - A key with no ok record keeps one failure record: a resumed run must still skip it.
//   - Lines of other kinds are passed through once (identical lines are one).
//   - Output is sorted (records by workload, op, device, arch, shape, key; then other lines by
//     their text), so merging a log with itself, or the same logs in any order, gives the
//     same bytes.
//   - Logs of different GPUs are refused unless forced: their numbers do not compare.
//   - Simulated and real records are never mixed: a model's numbers must not pass for
//     measurements.
#pragma once

#include <string>
#include <vector>

#include "search/tuning_log.h"

namespace dietcode {

struct MergeInput {
  std::string path;  // names the log in errors
  TuningLog log;
};

struct MergeResult {
  std::vector<TuningRecord> records;   // deduplicated, in output order
  std::vector<nlohmann::json> others;  // other kinds, once each, in output order
  size_t records_read = 0;             // measurement records over all inputs
  size_t conflicts = 0;                // keys whose ok records disagreed on the latency
};

// Throws UserError for logs of different GPUs (unless force) or for simulated and real records
// together.
MergeResult merge_tuning_logs(const std::vector<MergeInput>& inputs, bool force);

// Reads each log (damaged lines skipped, reported in warnings as the reader does) and merges.
MergeResult merge_log_files(const std::vector<std::string>& paths, bool force,
                            std::vector<std::string>& warnings);

// The merged log as JSON Lines.
std::string render_merged_log(const MergeResult& merged);

// Writes `text` to a temporary file beside `path`, syncs it and renames it over `path`, so a
// reader (or a crash) sees either the old file or the whole new one. Throws
// EnvironmentError("PATH: cannot write: REASON").
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace dietcode
