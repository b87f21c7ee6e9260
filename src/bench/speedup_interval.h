// How much of a bench figure is this run's noise: a bootstrap over the timed rounds.
//
// bench times every contender once per round, rotating who goes first, and reports medians. On a
// shared host one round can be slow for everyone (another tenant, a frequency step), so the
// rounds, not the single runs, are the independent draws: a resample picks rounds with
// replacement and keeps each round's pack and baseline times together. A phase that slows both
// then cancels in the speedup, as it does in the medians; noise that hits one contender
// widens the interval. Each resample recomputes every instance's medians and the weighted
// geometric mean (report.h), and the interval is the middle `level` of those geomeans.
//
// What this cannot see is what moves between runs (the host's phase a minute later, a
// different thread placement): two runs' geomeans may differ by more than either interval.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/report.h"

namespace dietcode {

struct SpeedupInterval {
  double low = -1, high = -1;  // < 0: no row had paired samples to resample
  double level = 0;            // e.g. 0.95
  int resamples = 0;
  bool valid() const { return low > 0 && high > 0; }
};

struct IntervalOptions {
  double level = 0.95;
  int resamples = 1000;
  uint64_t seed = 1;  // fixed, so a report reads the same when printed twice
};

// The interval of weighted_geomean_speedup(rows). Rows with a speedup but without paired
// samples (pack_samples and baseline_samples of one size, at least 2) count with their fixed
// speedup; when no row has paired samples the interval is invalid.
SpeedupInterval geomean_speedup_interval(const std::vector<BenchRow>& rows,
                                         const IntervalOptions& options = {});

// The interval of one row's speedup (e.g. the worst instance); invalid without paired samples.
SpeedupInterval row_speedup_interval(const BenchRow& row, const IntervalOptions& options = {});

}  // namespace dietcode
