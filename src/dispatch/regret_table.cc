#include "dispatch/regret_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace dietcode {

RegretTable::RegretTable(const std::vector<TreeSample>& samples, int n_kernels,
                         double tie_fraction)
    : n_(int(samples.size())), k_(n_kernels) {
  if (!(tie_fraction >= 0) || !std::isfinite(tie_fraction))
    throw std::invalid_argument("tie fraction " + std::to_string(tie_fraction) + " is not >= 0");
  weight_.resize(n_);
  best_.resize(n_);
  latency_.assign(size_t(n_) * k_, 0.0);
  known_.assign(size_t(n_) * k_, 0);
  for (int i = 0; i < n_; ++i) {
    const TreeSample& s = samples[i];
    if (int(s.latency_us.size()) != k_ ||
        (!s.predicted_us.empty() && int(s.predicted_us.size()) != k_))
      throw std::invalid_argument("tree sample " + std::to_string(i) + ": expected " +
                                  std::to_string(k_) + " latencies per kernel");
    if (!(s.weight >= 0) || !std::isfinite(s.weight))
      throw std::invalid_argument("tree sample " + std::to_string(i) + ": bad weight");
    weight_[i] = s.weight;
    double best_measured = std::numeric_limits<double>::infinity();
    double best_any = best_measured;
    for (int k = 0; k < k_; ++k) {
      double value = s.latency_us[k];
      if (std::isfinite(value)) {
        best_measured = std::min(best_measured, value);
      } else if (!s.predicted_us.empty() && std::isfinite(s.predicted_us[k])) {
        value = s.predicted_us[k];
      } else {
        continue;
      }
      latency_[size_t(i) * k_ + k] = value;
      known_[size_t(i) * k_ + k] = 1;
      best_any = std::min(best_any, value);
    }
    if (!std::isfinite(best_any))
      throw std::invalid_argument("tree sample " + std::to_string(i) +
                                  ": no kernel has a measured or predicted latency");
    best_[i] = std::isfinite(best_measured) ? best_measured : best_any;
  }
  fit_.resize(latency_.size());
  for (int i = 0; i < n_; ++i) {
    const double tied = best_[i] * (1.0 + tie_fraction);
    for (int k = 0; k < k_; ++k) {
      const size_t at = size_t(i) * k_ + k;
      fit_[at] = weight_[i] * (tie_fraction > 0 ? std::max(latency_[at], tied) : latency_[at]);
    }
  }
}

double RegretTable::regret_us(int i, int k) const {
  return std::max(0.0, latency_us(i, k) - best_[i]);
}

}  // namespace dietcode
