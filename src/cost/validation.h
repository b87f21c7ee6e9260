// Held-out validation of the cost model, split by micro-kernel: K-fold cross-validation in
// which each fold's kernels are predicted by a model trained on the other folds only, as the
// search predicts kernels it has never measured. Quality is scored per (fold, instance), so
// every ranking compares kernels predicted by the same model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cost/candidate.h"
#include "cost/cost_model.h"
#include "cost/quality.h"

namespace dietcode {

struct MeasuredLatency {
  size_t kernel = 0;  // index into the candidates
  GemmShape shape;
  std::string instance;  // the shape instance's name, e.g. "T=37"
  double latency_us = 0;
  double weight = 1;  // the instance's priority: training weight and regret weight
};

// Throws std::invalid_argument when folds < 2 or a kernel index is out of range.
QualitySummary cross_validate(const std::vector<KernelCandidate>& kernels,
                              const std::vector<MeasuredLatency>& measurements,
                              const CostModelParams& params, int folds, uint64_t seed,
                              double regret_tolerance = 0.05);

}  // namespace dietcode
