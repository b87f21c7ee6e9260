// The fp32 FMA peak a CPU bench report holds its rows against: "% peak" and the ceilings.
//
// The probe (HostCpu::fp32_peak_gflops) takes ~80 ms. On a shared host a slow phase that long
// reads it low: once it read half the peak on a Zen 4 guest, which doubled every "% peak" and
// every ceiling of that report. The hardware's peak does not change during a run, so bench
// probes before the first timing and again after the last and holds the rows against the
// higher reading, says so, and names the rows that still ran above it.
#pragma once

#include <string>

#include "bench/report.h"

namespace dietcode {

struct ProbedPeak {
  double before_gflops = 0;  // before the first timing; 0: unknown
  double after_gflops = 0;   // after the last; 0: not probed again
  int threads = 1;

  double gflops() const;  // the higher reading; 0 when neither is known
};

// Sets every row's peak to `peak` and adds the report's notes about it: the readings, a
// warning where they differ by more than 10% (the machine's speed moved during the run), and
// the rows where some contender ran faster than the peak (the probes both met slow phases).
void hold_rows_against_peak(BenchReport& report, const ProbedPeak& peak);

}  // namespace dietcode
