// The time-lost view of tuning results that tree fitting and leaf statistics share: for each
// instance, the latency each candidate would cost there (measured, else predicted, else
// unknown) and the best measured latency it is compared against.
#pragma once

#include <vector>

#include "dispatch/decision_tree.h"

namespace dietcode {

class RegretTable {
 public:
  // Throws std::invalid_argument when a sample has the wrong number of latencies or no
  // usable latency at all: callers filter such instances out before fitting. tie_fraction:
  // TreeFitOptions::tie_fraction, for weighted_us() alone.
  RegretTable(const std::vector<TreeSample>& samples, int n_kernels, double tie_fraction = 0.0);

  int instances() const { return n_; }
  int kernels() const { return k_; }
  double weight(int i) const { return weight_[i]; }
  double best_us(int i) const { return best_[i]; }
  bool known(int i, int k) const { return known_[size_t(i) * k_ + k] != 0; }
  // Latency kernel k costs on instance i (measured, else predicted); only when known().
  double latency_us(int i, int k) const { return latency_[size_t(i) * k_ + k]; }
  // Time lost, never negative (a prediction may undercut the best measurement).
  double regret_us(int i, int k) const;
  // weight * latency, a latency within tie_fraction of the best counted as best * (1 +
  // tie_fraction): what the fit minimises (weighted regret beyond the ties, up to a constant).
  double weighted_us(int i, int k) const { return fit_[size_t(i) * k_ + k]; }

 private:
  int n_ = 0, k_ = 0;
  std::vector<double> weight_, best_, latency_, fit_;
  std::vector<char> known_;
};

}  // namespace dietcode
