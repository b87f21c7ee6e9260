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
  // usable latency at all: callers filter such instances out before fitting.
  RegretTable(const std::vector<TreeSample>& samples, int n_kernels);

  int instances() const { return n_; }
  int kernels() const { return k_; }
  double weight(int i) const { return weight_[i]; }
  double best_us(int i) const { return best_[i]; }
  bool known(int i, int k) const { return known_[size_t(i) * k_ + k] != 0; }
  // Latency kernel k costs on instance i (measured, else predicted); only when known().
  double latency_us(int i, int k) const { return latency_[size_t(i) * k_ + k]; }
  // Time lost, never negative (a prediction may undercut the best measurement).
  double regret_us(int i, int k) const;
  // weight * latency: what the fit minimises (equal to weighted regret up to a constant).
  double weighted_us(int i, int k) const { return weight_[i] * latency_[size_t(i) * k_ + k]; }

 private:
  int n_ = 0, k_ = 0;
  std::vector<double> weight_, best_, latency_;
  std::vector<char> known_;
};

}  // namespace dietcode
