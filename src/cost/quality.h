// How good a cost model is for what the search does with it: per shape instance, rank the
// candidates and pick the best. Measured on held-out data (METHOD.md §3, goal: mean Spearman
// >= 0.9 and the predicted pick within 5% of the measured best for >= 90% of instances):
//   - Spearman rank correlation between predicted and measured latency over one instance's
//     candidates, ties given their average rank;
//   - regret: measured latency of the predicted-best candidate / measured best - 1. When
//     several candidates tie for the predicted best, the regret is the mean over them (what a
//     pick among equals costs on average).
// Generalisation means new micro-kernels, so held-out data is split by micro-kernel:
// folds_by_group keeps every measurement of one kernel in the same fold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dietcode {

// 1-based ranks in ascending order; tied values share the mean of the ranks they span.
std::vector<double> average_ranks(const std::vector<double>& values);

// Spearman's rho with average ranks for ties (Pearson correlation of the ranks). NaN when
// there are fewer than 2 values or either side is constant. Throws std::invalid_argument on
// different lengths.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

struct QualityRecord {
  std::string instance;  // which shape instance the measurement belongs to
  std::string kernel;    // micro-kernel key
  double predicted_us = 0;
  double measured_us = 0;
  double weight = 1;  // the instance's weight (its priority); equal on all of its records
};

struct InstanceQuality {
  std::string instance;
  int candidates = 0;
  double spearman = 0;  // NaN when undefined (one candidate, or constant latencies)
  double regret = 0;
  std::string picked;    // the predicted-best kernel (the first of them when several tie)
  std::string best;      // the measured-best kernel
  double weight = 1;
};

struct QualitySummary {
  int instances = 0;
  int ranked_instances = 0;    // instances whose Spearman is defined
  double mean_spearman = 0;    // over ranked instances; NaN when there are none
  double fraction_within = 0;  // instances whose regret <= the tolerance
  double weighted_mean_regret = 0;
  double max_regret = 0;
  std::vector<InstanceQuality> per_instance;  // in order of first appearance
};

QualitySummary evaluate_quality(const std::vector<QualityRecord>& records,
                                double regret_tolerance = 0.05);

// Assigns each distinct group (micro-kernel key) to one of `folds` folds at random (seeded,
// the same on every platform) and returns the fold of every row. Groups are dealt round-robin
// after shuffling, so fold sizes in groups differ by at most one.
std::vector<int> folds_by_group(const std::vector<std::string>& group_of_row, int folds,
                                uint64_t seed);

}  // namespace dietcode
