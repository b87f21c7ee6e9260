#include "bench/cpu_peak_probe.h"

#include <fmt/format.h>

#include <algorithm>

namespace dietcode {

double ProbedPeak::gflops() const { return std::max(std::max(before_gflops, after_gflops), 0.0); }

namespace {

// The highest GFLOP/s of any contender in the row: the pack's or a baseline's (the row's own
// baseline fields mirror one of `baselines` where there are several).
double fastest_gflops(const BenchRow& row) {
  double best_tflops = std::max(row.pack_tflops(), row.baseline_tflops());
  for (const BaselineTiming& b : row.baselines)
    if (b.us > 0) best_tflops = std::max(best_tflops, row.flops / (b.us * 1e6));
  return best_tflops * 1e3;
}

}  // namespace

void hold_rows_against_peak(BenchReport& report, const ProbedPeak& peak) {
  const double gflops = peak.gflops();
  if (gflops <= 0) return;
  for (BenchRow& row : report.rows) row.peak_tflops = gflops / 1e3;

  const std::string threads =
      fmt::format("{} thread{}", peak.threads, peak.threads == 1 ? "" : "s");
  if (peak.after_gflops > 0 && peak.before_gflops > 0) {
    report.notes.push_back(fmt::format(
        "fp32 FMA peak {:.0f} GFLOP/s on {}, the higher of two probes ({:.0f} before the first "
        "timing, {:.0f} after the last): \"% peak\" and the ceilings are against it",
        gflops, threads, peak.before_gflops, peak.after_gflops));
    const double low = std::min(peak.before_gflops, peak.after_gflops);
    if (gflops > 1.1 * low)
      report.notes.push_back(fmt::format(
          "the two peak probes differ by {:.0f}%: this machine's speed moved during the run, "
          "and so may the times",
          100.0 * (gflops / low - 1.0)));
  } else {
    report.notes.push_back(fmt::format(
        "fp32 FMA peak {:.0f} GFLOP/s on {}, probed {} timing: \"% peak\" and the ceilings are "
        "against it",
        gflops, threads, peak.before_gflops > 0 ? "before the first" : "after the last"));
  }

  int above = 0;
  std::string first;
  for (const BenchRow& row : report.rows) {
    if (fastest_gflops(row) <= gflops) continue;
    if (above++ == 0) first = row.op + " " + row.shape;
  }
  if (above > 0)
    report.notes.push_back(fmt::format(
        "{} instance{} ran faster than the probed peak (first: {}): the probes met slower phases "
        "of this machine than the timings did, so \"% peak\" reads high and the ceilings low",
        above, above == 1 ? "" : "s", first));
}

}  // namespace dietcode
