#include "search/runoff.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dietcode {

std::vector<size_t> runoff_finalists(const std::vector<double>& latency_us, size_t per_instance,
                                     double margin) {
  std::vector<size_t> timed;
  for (size_t k = 0; k < latency_us.size(); ++k)
    if (std::isfinite(latency_us[k]) && latency_us[k] > 0) timed.push_back(k);
  if (timed.empty() || per_instance == 0) return {};
  // Stable: equal times keep the order the kernels were added in, as the book's ties do.
  std::stable_sort(timed.begin(), timed.end(),
                   [&](size_t a, size_t b) { return latency_us[a] < latency_us[b]; });
  const double limit = latency_us[timed.front()] * (1.0 + std::max(0.0, margin));
  std::vector<size_t> out;
  for (size_t k : timed) {
    if (out.size() >= per_instance || latency_us[k] > limit) break;
    out.push_back(k);
  }
  return out;
}

std::vector<double> settle_runoff(const std::vector<double>& ordinary_us,
                                  const std::vector<double>& runoff_us) {
  std::vector<double> ratios;
  bool any = false;
  for (size_t k = 0; k < runoff_us.size() && k < ordinary_us.size(); ++k) {
    if (std::isnan(runoff_us[k])) continue;
    any = true;
    if (!std::isnan(ordinary_us[k]) && ordinary_us[k] > 0) ratios.push_back(runoff_us[k] / ordinary_us[k]);
  }
  if (!any) return ordinary_us;
  double scale = 1.0;
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    const size_t n = ratios.size();
    scale = n % 2 ? ratios[n / 2] : 0.5 * (ratios[n / 2 - 1] + ratios[n / 2]);
  }
  std::vector<double> out(ordinary_us.size());
  for (size_t k = 0; k < ordinary_us.size(); ++k) {
    const bool finalist = k < runoff_us.size() && !std::isnan(runoff_us[k]);
    out[k] = finalist ? runoff_us[k] : ordinary_us[k] * scale;  // NaN stays NaN
  }
  return out;
}

void InstanceRunoff::add(size_t kernel, int runoff, double latency_us) {
  if (runoff < latest_) return;
  if (runoff > latest_) {
    latest_ = runoff;
    times_.clear();
  }
  times_[kernel] = latency_us;
}

std::optional<TimingNoise> runoff_timing_noise(
    const std::vector<std::vector<std::pair<double, double>>>& instances) {
  std::vector<double> differences;  // |log ratio of one finalist - that of another|
  size_t pairs = 0;
  for (const auto& list : instances) {
    std::vector<double> logs;
    for (const auto& [ordinary, runoff] : list)
      if (ordinary > 0 && runoff > 0 && std::isfinite(ordinary) && std::isfinite(runoff))
        logs.push_back(std::log(runoff / ordinary));
    if (logs.size() < 2) continue;
    for (size_t a = 0; a < logs.size(); ++a)
      for (size_t b = a + 1; b < logs.size(); ++b) differences.push_back(std::fabs(logs[a] - logs[b]));
    pairs += logs.size();
  }
  if (pairs < kMinTimingNoisePairs) return std::nullopt;
  const size_t mid = differences.size() / 2;
  std::nth_element(differences.begin(), differences.begin() + std::ptrdiff_t(mid),
                   differences.end());
  double median = differences[mid];
  if (differences.size() % 2 == 0)
    median = 0.5 * (median + *std::max_element(differences.begin(),
                                               differences.begin() + std::ptrdiff_t(mid)));
  // A difference of two log ratios holds four timings' noise: its standard deviation is twice
  // one timing's (relative, for noise this small).
  return TimingNoise{1.4826 * median / 2.0, pairs};
}

std::vector<double> InstanceRunoff::as_vector(size_t n) const {
  std::vector<double> out(n, std::numeric_limits<double>::quiet_NaN());
  for (const auto& [kernel, us] : times_)
    if (kernel < n) out[kernel] = us;
  return out;
}

}  // namespace dietcode
