// What `dietcode bench` prints and writes: one row per (op, shape instance) with the pack's and
// the baseline's median latency, and the summary a reader looks for first, the weighted
// geometric-mean speedup and the worst instance.
//
// Everything here is plain data and text, so the formats are tested with synthetic rows on
// machines without a GPU; the runner (bench_runner.h) only fills a BenchReport.
//
// Weighted geometric mean: exp(sum_i w_i ln(s_i) / sum_i w_i) over the rows that have a
// speedup s_i = baseline_us / pack_us, with w_i the instance's weight (the workload's shape
// distribution times the op's weight). It is the speedup of the whole weighted mix when every
// instance is equally likely to be slow or fast in ratio, and unlike the arithmetic mean it
// treats 2x and 0.5x as cancelling.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

namespace dietcode {

// One baseline's figures in a row, where several baselines run per instance (a CPU pack is timed
// against oneDNN and OpenBLAS at once).
struct BaselineTiming {
  std::string name;    // "onednn": the --baseline name, used for column names
  std::string label;   // "oneDNN 2.6.3"
  std::string detail;  // what it chose for this shape
  double us = -1;      // < 0: it did not run this instance
  std::string check = "ok";
  bool failed = false;
  std::vector<double> samples;  // its timed runs in round order, beside BenchRow::pack_samples
};

struct BenchRow {
  std::string op;
  std::string shape;  // "T=37", or "B=2 T=37" for several variables
  double weight = 1;  // the instance's weight; only ratios between rows matter
  double flops = 0;   // of the instance: 2 * batch * M * N * K
  double pack_us = 0;
  double baseline_us = -1;      // < 0: no baseline for this op
  // Every timed run, in round order: the pack's and the baseline's of round r at index r (one
  // per repeat). pack_us and baseline_us are their medians. Empty where a runner kept medians
  // only; speedup_interval.h resamples them.
  std::vector<double> pack_samples, baseline_samples;
  std::string baseline;         // which baseline ran: "cublas", "cudnn 9.19.0", "cublas+im2col"
  std::string baseline_detail;  // what it chose for this shape, e.g. cuDNN's algorithm
  double peak_tflops = 0;       // the device's peak for the op's dtype; 0 when unknown
  std::string check = "ok";     // "ok", "unchecked (...)" or "mismatch: ..."
  bool failed = false;          // the results disagree: bench exits 1
  // Every baseline that ran this instance, where several do (the CPU); the fields above then
  // mirror the first of them that has a time. Empty on the GPU, where they are the one baseline.
  std::vector<BaselineTiming> baselines;

  bool has_baseline() const { return baseline_us > 0; }
  double speedup() const;          // baseline_us / pack_us; -1 without a baseline
  double pack_tflops() const;      // flops / pack time
  double baseline_tflops() const;  // -1 without a baseline
  double percent_of_peak() const;  // the pack's; -1 when the peak is unknown
  // baseline_us over the time the instance's FLOPs take at the peak: the most any kernel could
  // be faster than the baseline here. -1 without a baseline, FLOPs or a peak.
  double peak_ceiling() const;
};

struct BenchReport {
  std::string pack;       // the pack file as the user named it
  std::string device;     // "NVIDIA H100 80GB HBM3 (sm_90)"
  std::string baseline;   // the baselines that ran: "cublas", "cublas, cudnn 9.19.0", "none"
  std::string l2;         // "flush" or "warm"
  std::string l2_detail;  // how, e.g. "L2 flushed before every timed launch (100 MiB written)"
  std::string date;       // ISO 8601, e.g. "2025-06-01T12:00:00Z"
  int repeats = 0;
  int warmup = 0;
  // What the baseline runs for each op, e.g. {"fc1", "cublasSgemm + bias_gelu kernel (NVRTC)"}.
  std::vector<std::pair<std::string, std::string>> baseline_per_op;
  std::vector<std::string> notes;  // one line each, printed under the table
  std::vector<BenchRow> rows;

  std::string target = "cuda";  // the pack's: "cuda" or "cpu"
  int threads = 0;              // CPU: the threads pack and baselines each ran on; 0 on the GPU
  // How the runs were interleaved, for the header; empty: the GPU's one stream.
  std::string method;
  // Several baselines, one column each, in this order: {name, label}, e.g. {"onednn",
  // "oneDNN 2.6.3"}. Empty: one baseline column from the rows' own fields (the GPU).
  std::vector<std::pair<std::string, std::string>> baseline_columns;
};

// `row` with the fields of its baseline `name` (from row.baselines) as its baseline, or with
// none when that baseline did not run it; the geomean and worst-instance functions below then
// answer for that baseline alone.
BenchRow row_against(const BenchRow& row, const std::string& name);
std::vector<BenchRow> rows_against(const std::vector<BenchRow>& rows, const std::string& name);

// The weighted geometric mean of the rows' speedups (see above); -1 when no row has one.
// Rows of weight 0 count with weight 0; when every weight is 0 the mean is unweighted.
double weighted_geomean_speedup(const std::vector<BenchRow>& rows);

// weighted_geomean_speedup over each op's rows alone, for the ops that have a speedup, in the
// order the rows first name them: which layers a workload's figure comes from.
std::vector<std::pair<std::string, double>> per_op_geomean_speedups(
    const std::vector<BenchRow>& rows);

// The same weighted geometric mean over the rows' peak_ceiling(): the speedup a pack running
// every instance at 100% of the peak would show over this baseline in this run. No kernel can
// exceed it (memory traffic, launches and packing only lower what the peak allows), so a goal
// above it is out of reach on this machine, whatever the tuning. Taken over the rows that have
// a speedup; -1 when one of them has no peak_ceiling() (the peak unknown) or none has a speedup.
double weighted_geomean_ceiling(const std::vector<BenchRow>& rows);

// The row with the lowest speedup, or null when no row has one.
const BenchRow* worst_row(const std::vector<BenchRow>& rows);

// Rows whose results disagree.
int failed_rows(const std::vector<BenchRow>& rows);

// The human-readable report: a header naming pack, device, baseline and L2 mode, the table,
// the baseline used per op, the notes, the weighted geometric mean and the worst instance.
std::string format_report(const BenchReport& report);

// One line per row under a header line; empty fields where a figure does not exist.
//   op,shape,pack_us,baseline_us,speedup,pack_tflops,baseline_tflops,percent_of_peak,weight,check
// With several baseline columns (CPU), two fields per baseline and GFLOP/s:
//   op,shape,pack_us,onednn_us,onednn_speedup,openblas_us,openblas_speedup,pack_gflops,
//   percent_of_peak,weight,check
std::string format_csv(const BenchReport& report);

// {"pack", "device", "baseline", "l2", "l2_detail", "date", "repeats", "warmup",
//  "geomean_speedup", "geomean_interval": {"low", "high", "level", "resamples"} | null,
//  "ceiling_speedup", "worst": {... "interval": {...} | null} | null, "failures",
//  "baseline_per_op", "notes",
//  "rows": [{"op", "shape", "baseline", "baseline_detail", "pack_us", "baseline_us", "speedup",
//            "pack_tflops", "baseline_tflops", "percent_of_peak", "weight", "flops", "check",
//            "pack_runs_us", "baseline_runs_us"}]}
// Figures that do not exist are null. Every report also has "target" and "threads" (null on the
// GPU); with several baseline columns it has "baselines": [{"name", "label", "geomean_speedup",
// "geomean_interval", "ceiling_speedup", "worst"}] and each row "baselines": [{"name", "label",
// "detail", "us", "speedup", "check", "runs_us"}]. The *_runs_us arrays are every timed run in
// round order ([] where the runner kept medians only).
nlohmann::json report_json(const BenchReport& report);

}  // namespace dietcode
