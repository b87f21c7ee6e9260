// The tuning log (SPEC §4): JSON Lines, one object per line, appended as results arrive.
//
// A measurement record (what `tune` writes once per micro-kernel and shape instance):
//
//   {"kind": "measurement", "workload": "bert_dense", "op": "qkv",
//    "mk": {"template": "dense_f32", "params": {"BK": 16, "BM": 64, ...}},
//    "shape": {"T": 37}, "gemm": {"batch": 1, "M": 592, "N": 2304, "K": 768},
//    "status": "ok", "latency_us": 41.7,
//    "device": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "simulated": false,
//    "tool_version": "0.1.0", "timestamp": "2025-03-01T12:00:00.123Z"}
//
//   status       "ok" | "compile_error" | "launch_error" | "wrong_result" | "timeout" |
//                "device_limits_exceeded"; latency_us (the median, microseconds, > 0) is
//                present exactly when status is "ok"; "error" (one line) may say why not.
//   gemm         the problem the shape meant when measured: a reader checks it against the
//                op's current definition, so editing a workload never reuses stale numbers.
//   simulated    true when a model (SimulatedDevice) produced the number: `build` refuses
//                such a log unless told --allow-simulated.
//   registers    optional: ptxas's registers per thread for the kernel, a cost-model feature.
//   l2           "flush" or "warm": the L2 regime of the timing (tune --l2). Absent in logs of
//                tools that always timed warm, and read as "warm" there.
//
// Other kinds of line (say a cost-model quality summary) carry a different "kind"; readers
// keep them aside untouched and skip kinds they do not know. A line without "kind" is a
// measurement. Unknown keys in a measurement are ignored, so newer tools may add fields.
//
// Durability: TuningLogWriter opens the file for append only and hands every record to the
// kernel in one write() before append() returns, so a killed run (even SIGKILL) loses at most
// the record in flight; it never rewrites or truncates what is there. A torn last line left by
// a crash is closed with a newline before the next record, and the reader skips it with a
// warning ("LOG:LINE: skipped: REASON"), never failing on a damaged line.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "measure/measurer.h"
#include "space/micro_kernel.h"
#include "workload/workload.h"

namespace dietcode {

struct TuningRecord {
  std::string workload;  // the workload's name
  std::string op;        // the op's name in the workload
  MicroKernel mk;
  std::map<std::string, int64_t> shape;  // shape variable -> value
  GemmShape gemm;
  MeasureStatus status = MeasureStatus::kOk;
  std::optional<double> latency_us;  // set exactly when status == kOk
  std::string error;                 // empty when ok
  std::optional<int> registers;
  std::string device;  // DeviceIdentity::name
  std::string arch;    // "sm_90"
  bool simulated = false;
  std::string l2 = "flush";  // DeviceIdentity::l2; "warm" for logs written before the field
  // DeviceIdentity::constant_weights: "weights": "constant" in the JSON (absent: packed in
  // every call, as every record before the field was).
  bool constant_weights = false;
  // "runoff": N for a time from the op's N-th runoff (search/runoff.h); 0 (absent in the JSON)
  // for an ordinary measurement.
  int runoff = 0;
  std::string tool_version;
  std::string timestamp;  // ISO-8601 UTC, "2025-03-01T12:00:00.123Z"

  nlohmann::json to_json() const;
  // Strict: throws UserError("JSON.PATH: what is wrong") for a malformed record.
  static TuningRecord from_json(const nlohmann::json& j);
};

// The current time as ISO-8601 UTC with milliseconds: "2025-03-01T12:00:00.123Z".
std::string iso8601_utc_now();

// One record per instance of a measured input: every instance when the status is not ok (so
// a resumed run does not retry a broken candidate), only instances with a finite latency when
// it is. Fills tool_version and the timestamp; workload names the workload the op belongs to.
std::vector<TuningRecord> records_from_result(const std::string& workload,
                                              const MeasureInput& input,
                                              const MeasureResult& result,
                                              const DeviceIdentity& device);

// Throws UserError when tune cannot append to PATH: a gzip-compressed log (LOG.jsonl.gz, or a
// file that starts with gzip's magic bytes) is for reading only.
void check_log_appendable(const std::string& path);

class TuningLogWriter {
 public:
  // Opens (creating if needed) for append. A last line without its newline, torn by a crash,
  // gets one now, so it stays a line of its own. Throws EnvironmentError("PATH: cannot open
  // the tuning log: REASON"), or UserError for a gzip-compressed log (check_log_appendable).
  explicit TuningLogWriter(const std::string& path);
  ~TuningLogWriter();
  TuningLogWriter(const TuningLogWriter&) = delete;
  TuningLogWriter& operator=(const TuningLogWriter&) = delete;

  // Appends one line with a single write(). Throws EnvironmentError("PATH: cannot write the
  // tuning log: REASON") on failure (disk full, file size limit); earlier lines stay intact.
  void append(const TuningRecord& record);
  // Appends a line of another kind; `line` must be an object with a string "kind".
  void append_json(const nlohmann::json& line);
  // Asks the kernel to put what was written on disk (fdatasync): survives a power cut too.
  void sync();

  const std::string& path() const { return path_; }

 private:
  void write_line(const std::string& text);
  std::string path_;
  int fd_ = -1;
  bool torn_ = false;  // a failed write left part of a line behind
};

struct TuningLog {
  std::vector<TuningRecord> records;   // measurements, in file order
  std::vector<nlohmann::json> others;  // lines of other kinds, in file order
  // The line (from 1) each record was read from, parallel to `records` in a log read from text
  // (parse_tuning_log), for messages about a record: "LOG:LINE: ...".
  std::vector<int> record_lines;
};

// Whether a path names a tuning log (".jsonl", or ".jsonl.gz" compressed): the name, not the
// content, decides, wherever a command takes a log or another kind of file.
bool is_tuning_log_path(const std::string& path);

// Reads every record. A line that is not valid JSON or not a valid record is skipped and
// reported in `warnings` as "PATH:LINE: skipped: REASON" (LINE counts from 1); blank lines are
// ignored. A missing file throws UserError("PATH: no such tuning log") when must_exist, and
// gives an empty log otherwise; an unreadable one throws UserError("PATH: cannot read: ...").
TuningLog read_tuning_log(const std::string& path, std::vector<std::string>& warnings,
                          bool must_exist = true);
// The same over text already in memory; `source` names it in warnings.
TuningLog parse_tuning_log(const std::string& text, const std::string& source,
                           std::vector<std::string>& warnings);

// Which records a consumer wants; an unset field matches everything.
struct RecordFilter {
  std::optional<std::string> workload;
  std::optional<std::string> op;
  std::optional<std::string> device;
  std::optional<std::string> arch;
  std::optional<bool> simulated;
  bool matches(const TuningRecord& record) const;
};
std::vector<const TuningRecord*> filter_records(const TuningLog& log, const RecordFilter& filter);

// A shape instance of an op: what a best latency is kept for.
struct InstanceKey {
  std::string workload, op;
  std::map<std::string, int64_t> shape;
  bool operator<(const InstanceKey& o) const {
    return std::tie(workload, op, shape) < std::tie(o.workload, o.op, o.shape);
  }
  bool operator==(const InstanceKey& o) const {
    return workload == o.workload && op == o.op && shape == o.shape;
  }
};
InstanceKey instance_key(const TuningRecord& record);

// The fastest ok record of every instance (ties: the earlier record); where a runoff timed the
// instance (search/runoff.h), the fastest of its latest runoff. Instances with no ok record
// are absent.
std::map<InstanceKey, const TuningRecord*> best_per_instance(
    const std::vector<const TuningRecord*>& records);

// (mk key, instance) pairs that already have a record, failed ones included: a resumed run
// skips them rather than measure or retry them.
using MeasuredPair = std::pair<std::string, InstanceKey>;
std::set<MeasuredPair> measured_pairs(const std::vector<const TuningRecord*>& records);

}  // namespace dietcode
