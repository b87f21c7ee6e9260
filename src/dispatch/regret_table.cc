#include "dispatch/regret_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace dietcode {

RegretTable::RegretTable(const std::vector<TreeSample>& samples, int n_kernels)
    : n_(int(samples.size())), k_(n_kernels) {
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
}

double RegretTable::regret_us(int i, int k) const {
  return std::max(0.0, latency_us(i, k) - best_[i]);
}

}  // namespace dietcode
